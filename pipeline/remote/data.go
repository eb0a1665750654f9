package remote

import (
	"bufio"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/grpc/credentials"

	"github.com/pipetrain/pipetrain/actors"
	"github.com/pipetrain/pipetrain/actors/wire"
	"github.com/pipetrain/pipetrain/tensor"
)

// The data plane: activations and their gradients cross between two
// processes on a TCP connection of their own (under TLS when the links
// are), as a frame header (wire.Frame) and the tensor's raw bytes, instead
// of a protobuf field in protoactor's envelope in gRPC's batch. The sending
// actor writes the header and the arena's bytes with one writev on its own
// goroutine; the receiving process reads each tensor into a slot kept per
// (receiver, kind, shard, micro-batch, tensor) from step to step and hands
// the message to the actor's mailbox. Reads go through a 64 KiB buffer,
// so a small frame takes one read call (and its tensor one copy out of
// the buffer); a larger tensor is read straight into its slot. protoactor
// keeps everything else.
//
// A data connection reaches the same port as protoactor's gRPC server: it
// opens with dataMagic in the clear, which neither an HTTP/2 preface nor a
// TLS hello begins with, and the server's credentials hand such a
// connection to the data plane (credentials.ErrConnDispatched). Then comes
// TLS if the links use it, then the protocol and the token, checked as
// the gRPC calls' are.

// dataMagic opens a data-plane connection.
var dataMagic = [8]byte{'P', 'T', 'D', 'A', 'T', 'A', 0, 1}

const (
	dataReadBuffer = 64 << 10 // the reader's buffer: headers and small tensors
	dataChunk      = 1 << 20  // a write's piece; each must go within dataStall
	dataStall      = 10 * time.Second
	slotsMax       = 1 << 12 // slots a connection keeps before it lets them go
)

// dataPlane is one process's end of the data plane.
type dataPlane struct {
	token          func() string
	server, client *tls.Config // nil: plaintext

	// set once the endpoint has started
	system      *actor.ActorSystem
	undelivered *undelivered
	live        func(actors.Run) bool // whether a run's engine or session is open here

	mu     sync.Mutex
	out    map[string]*dataConn // to each peer, by its actor address
	conns  map[net.Conn]bool    // every open connection, both ways
	closed bool
	wg     sync.WaitGroup
	timers []*time.Timer // reports of failed connections to come

	stale  atomic.Int64 // frames dropped: their run or generation is not live here
	failed atomic.Int64 // frames whose connection failed
}

func newDataPlane(token func() string, server, client *tls.Config) *dataPlane {
	return &dataPlane{token: token, server: server, client: client, out: map[string]*dataConn{}, conns: map[net.Conn]bool{}}
}

// start gives the data plane the endpoint it delivers to.
func (dp *dataPlane) start(system *actor.ActorSystem, u *undelivered, live func(actors.Run) bool) {
	dp.mu.Lock()
	defer dp.mu.Unlock()
	dp.system, dp.undelivered, dp.live = system, u, live
}

// track records an open connection, or reports false once closed.
func (dp *dataPlane) track(c net.Conn) bool {
	dp.mu.Lock()
	defer dp.mu.Unlock()
	if dp.closed {
		return false
	}
	dp.conns[c] = true
	dp.wg.Add(1)
	return true
}

func (dp *dataPlane) untrack(c net.Conn) {
	c.Close()
	dp.mu.Lock()
	delete(dp.conns, c)
	dp.mu.Unlock()
	dp.wg.Done()
}

// close closes every connection and waits for their goroutines.
func (dp *dataPlane) close() {
	dp.mu.Lock()
	dp.closed = true
	for c := range dp.conns {
		c.Close()
	}
	for _, t := range dp.timers {
		t.Stop()
	}
	dp.mu.Unlock()
	dp.wg.Wait()
}

// dataCreds are the gRPC server's credentials: a connection that opens
// with dataMagic goes to the data plane, any other to the credentials
// within, the first bytes put back.
type dataCreds struct {
	credentials.TransportCredentials
	dp *dataPlane
}

func (c dataCreds) ServerHandshake(conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	// read what has come, as TLS would: a peer refused with bytes unread
	// gets a reset instead of the end of the stream
	head := make([]byte, 512)
	n, err := io.ReadAtLeast(conn, head, len(dataMagic))
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			err = io.EOF
		}
		return nil, nil, err
	}
	pc := &prefixConn{Conn: conn, head: head[:n]}
	if [len(dataMagic)]byte(head[:len(dataMagic)]) != dataMagic {
		return c.TransportCredentials.ServerHandshake(pc)
	}
	pc.head = pc.head[len(dataMagic):]
	if !c.dp.track(conn) {
		return nil, nil, errors.New("remote: the data plane is closed")
	}
	go func() {
		defer c.dp.untrack(conn)
		c.dp.serve(pc)
	}()
	return nil, nil, credentials.ErrConnDispatched
}

func (c dataCreds) Clone() credentials.TransportCredentials {
	return dataCreds{c.TransportCredentials.Clone(), c.dp}
}

// prefixConn reads head before the rest of the connection.
type prefixConn struct {
	net.Conn
	head []byte
}

func (c *prefixConn) Read(p []byte) (int, error) {
	if len(c.head) > 0 {
		n := copy(p, c.head)
		c.head = c.head[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// hello is a data connection's greeting after dataMagic (and TLS): the
// protocol and the token, each a u16 length and its bytes; the answer is
// a u16 length and the refusal's text, empty for yes.
func appendString(b []byte, s string) []byte {
	b = binary.LittleEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

func readString(r io.Reader) (string, error) {
	var n [2]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return "", err
	}
	b := make([]byte, binary.LittleEndian.Uint16(n[:]))
	_, err := io.ReadFull(r, b)
	return string(b), err
}

// serve checks a data connection's greeting, then reads its frames until
// it closes.
func (dp *dataPlane) serve(raw net.Conn) {
	_ = raw.SetDeadline(time.Now().Add(handshakeTimeout))
	conn := raw
	if dp.server != nil {
		tc := tls.Server(raw, dp.server)
		if err := tc.Handshake(); err != nil {
			return
		}
		conn = tc
	}
	protocol, err := readString(conn)
	if err != nil {
		return
	}
	token, err := readString(conn)
	if err != nil {
		return
	}
	refusal := ""
	switch {
	case !tokenOK([]string{token}, dp.token()):
		refusal = "wrong or missing token"
	case protocol != Protocol:
		refusal = fmt.Sprintf("protocol %s, this side speaks %s", protocol, Protocol)
	}
	if _, err := conn.Write(appendString(nil, refusal)); err != nil || refusal != "" {
		return
	}
	_ = raw.SetDeadline(time.Time{})
	dp.read(bufio.NewReaderSize(conn, dataReadBuffer))
}

// slotKey names the slot a training frame's tensor is read into: the same
// frame of the next step reuses it, by when this step's is done with (a
// step starts once the last one's updates are applied, and a turn's,
// weights' or tied gradient's tensors are copied or added where they go
// within the step).
type slotKey struct {
	gen                  uint64
	to                   string
	kind                 wire.FrameKind
	shard, micro, tensor int64
}

// read reads frames from r and delivers them until the connection fails.
func (dp *dataPlane) read(r *bufio.Reader) {
	var (
		f     wire.Frame
		word  [4]byte
		head  []byte
		slots = map[slotKey]*wire.Slot{}
		pids  = map[string]*actor.PID{}
	)
	for {
		if _, err := io.ReadFull(r, word[:]); err != nil {
			return
		}
		n := binary.LittleEndian.Uint32(word[:])
		if n > wire.MaxFrameHeader {
			return // not a frame: the stream is lost
		}
		if uint32(cap(head)) < n {
			head = make([]byte, n)
		}
		head = head[:n]
		if _, err := io.ReadFull(r, head); err != nil {
			return
		}
		if err := wire.ParseFrame(&f, head); err != nil {
			return
		}
		run := actors.Run{ID: f.Run, Gen: f.Gen}
		if !dp.live(run) {
			if _, err := io.CopyN(io.Discard, r, int64(f.Len())); err != nil {
				return
			}
			dp.stale.Add(1)
			dp.report(&f, nil, "its run is over here")
			continue
		}
		xs := make([]*tensor.Tensor, len(f.Tensors))
		for i := range f.Tensors {
			slot := &wire.Slot{} // evaluation chunks are not kept
			if !f.Eval {
				k := slotKey{f.Gen, f.To, f.Kind, f.Shard, f.Micro, int64(i)}
				if slot = slots[k]; slot == nil {
					if len(slots) >= slotsMax {
						clear(slots)
					}
					slot = &wire.Slot{}
					slots[k] = slot
				}
			}
			if _, err := io.ReadFull(r, slot.Bytes(f.Tensors[i].Len)); err != nil {
				return
			}
			xs[i] = slot.Tensor(&f.Tensors[i])
		}
		msg, err := actors.FromFrame(&f, xs)
		if err != nil {
			return
		}
		pid := pids[f.To]
		if pid == nil {
			if len(pids) >= slotsMax {
				clear(pids)
			}
			pid = actor.NewPID(dp.system.Address(), f.To)
			pids[f.To] = pid
		}
		if _, ok := dp.system.ProcessRegistry.GetLocal(f.To); !ok {
			dp.report(&f, msg.Msg, "no such actor there")
			continue
		}
		dp.system.Root.Send(pid, msg)
	}
}

// report counts and logs a frame that was not delivered, and fails its
// run if it is live; msg is its message, nil to make it from f.
func (dp *dataPlane) report(f *wire.Frame, msg any, reason string) {
	if msg == nil {
		if a, err := actors.FromFrame(f, nil); err == nil {
			msg = a.Msg
		}
	}
	dp.undelivered.report(actors.Drop{Run: actors.Run{ID: f.Run, Gen: f.Gen}, From: f.From, To: f.To,
		Type: actors.Describe(msg), Reason: reason}, actors.Host(dp.system.Address()))
}

// dataConn is a connection to one peer, which the senders in this process
// share in turn.
type dataConn struct {
	mu       sync.Mutex
	conn     net.Conn // TLS over raw, or raw
	err      error    // the connection failed: every later frame fails at once
	reported bool     // its first failed frame was
	head     []byte
	bufs     net.Buffers
}

// Send writes a frame and its tensors' bytes to to's process, on the
// sender's goroutine. A connection that fails is a lost host, which
// protoactor's watches and heartbeat name with its stages: the first frame
// it fails is reported as undelivered beatLost later, failing its run if
// nothing has by then (a data path broken while the control path is not);
// the later ones are counted.
func (dp *dataPlane) Send(to *actor.PID, f *wire.Frame, data [][]byte) int64 {
	c := dp.conn(to.Address)
	n, first, err := c.write(f, data)
	if err != nil {
		dp.failed.Add(1)
		if first {
			dp.later(actors.Drop{Run: actors.Run{ID: f.Run, Gen: f.Gen}, From: f.From, To: f.To,
				Type: frameType(f), Reason: "no connection to its host: " + err.Error()}, actors.Host(to.Address))
		}
	}
	return n
}

// later reports d, a message for an actor on host, beatLost from now.
func (dp *dataPlane) later(d actors.Drop, host string) {
	dp.mu.Lock()
	defer dp.mu.Unlock()
	if !dp.closed {
		dp.timers = append(dp.timers, time.AfterFunc(beatLost, func() { dp.undelivered.report(d, host) }))
	}
}

func frameType(f *wire.Frame) string {
	a, err := actors.FromFrame(f, nil)
	if err != nil {
		return err.Error()
	}
	return actors.Describe(a.Msg)
}

// conn returns the connection to the process at addr, dialling it first;
// a failed one stays failed, since addr names one incarnation of a process.
func (dp *dataPlane) conn(addr string) *dataConn {
	dp.mu.Lock()
	c := dp.out[addr]
	if c != nil || dp.closed {
		dp.mu.Unlock()
		if c == nil {
			c = &dataConn{err: errors.New("the data plane is closed")}
		}
		return c
	}
	c = &dataConn{}
	c.mu.Lock() // senders wait for the dial
	dp.out[addr] = c
	dp.mu.Unlock()
	defer c.mu.Unlock()
	raw, err := dp.dial(addr)
	if err != nil {
		c.err = err
		return c
	}
	if !dp.track(raw) {
		raw.Close()
		c.err = errors.New("the data plane is closed")
		return c
	}
	conn, err := dp.greet(raw, addr)
	if err != nil {
		c.err = err
		dp.untrack(raw)
		return c
	}
	c.conn = conn
	// the peer sends nothing more: a read ends when it closes, and forgets it
	go func() {
		defer dp.untrack(raw)
		_, _ = conn.Read(make([]byte, 1))
		dp.mu.Lock()
		if dp.out[addr] == c {
			delete(dp.out, addr)
		}
		dp.mu.Unlock()
	}()
	return c
}

func (dp *dataPlane) dial(addr string) (net.Conn, error) {
	d := net.Dialer{Timeout: handshakeTimeout}
	return d.Dial("tcp", actors.Host(addr))
}

// greet opens a dialled data connection: the magic, TLS, the protocol and
// the token, and the peer's answer.
func (dp *dataPlane) greet(raw net.Conn, addr string) (net.Conn, error) {
	_ = raw.SetDeadline(time.Now().Add(handshakeTimeout))
	if _, err := raw.Write(dataMagic[:]); err != nil {
		return nil, err
	}
	conn := raw
	if dp.client != nil {
		cfg := dp.client.Clone()
		cfg.ServerName, _, _ = net.SplitHostPort(actors.Host(addr))
		tc := tls.Client(raw, cfg)
		if err := tc.Handshake(); err != nil {
			return nil, err
		}
		conn = tc
	}
	if _, err := conn.Write(appendString(appendString(nil, Protocol), dp.token())); err != nil {
		return nil, err
	}
	refusal, err := readString(conn)
	if err != nil {
		return nil, fmt.Errorf("the data connection was refused: %v", err)
	}
	if refusal != "" {
		return nil, fmt.Errorf("the data connection was refused: %s", refusal)
	}
	_ = raw.SetDeadline(time.Time{})
	return conn, nil
}

// write sends f's header and data, with writev, in pieces of at most
// dataChunk bytes that must each go within dataStall: a peer that stops
// reading is lost.
func (c *dataConn) write(f *wire.Frame, data [][]byte) (n int64, first bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	defer func() {
		if err != nil {
			first, c.reported = !c.reported, true
		}
	}()
	if c.err != nil {
		return 0, false, c.err
	}
	c.head = wire.AppendFrame(c.head[:0], f)
	total := int64(len(c.head))
	pending, size := append(c.bufs[:0], c.head), len(c.head)
	flush := func() error {
		_ = c.conn.SetWriteDeadline(time.Now().Add(dataStall))
		var err error
		if raceBuild {
			for _, b := range pending {
				if _, err = c.conn.Write(b); err != nil {
					break
				}
			}
		} else {
			bufs := pending // WriteTo consumes its receiver
			_, err = bufs.WriteTo(c.conn)
		}
		pending, size = pending[:0], 0
		return err
	}
	for _, d := range data {
		total += int64(len(d))
		for len(d) > 0 {
			if size >= dataChunk {
				if err := flush(); err != nil {
					c.err = err
					return 0, false, err
				}
			}
			k := min(len(d), dataChunk-size)
			pending, size, d = append(pending, d[:k]), size+k, d[k:]
		}
	}
	err = flush()
	clear(pending[:cap(pending)]) // hold no tensor past the write
	c.bufs = pending[:0]
	if err != nil {
		c.err = err
		return 0, false, err
	}
	return total, false, nil
}
