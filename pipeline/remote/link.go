package remote

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/pipetrain/pipetrain/actors"
)

// Protocol is the version of the coordinator–worker protocol: both sides
// must speak the same, checked in the handshake before anything is spawned.
// pipetrain-3: stages swap the gradients of tied weights (TiedGrad);
// pipetrain-4: replicas on hosts (GradTurn and Weights cross);
// pipetrain-5: the turn starts at replica 1 and ends at the owner
// (actors.ReplicaOf, GradTurn.Rows);
// pipetrain-6: activations and their gradients cross on the data plane;
// pipetrain-7: the turn and the weights go in parts, the weights along
// the chain of copies (GradTurn.Part, Weights.Part);
// pipetrain-8: one BackwardDone a step (All) unless each is needed;
// pipetrain-9: programmed schedules (Links.schedule, stages, chunks,
// Build.stage, turnKick) and provisional updates (Update.provisional,
// UpdateApplied.rolled).
const Protocol = "pipetrain-9"

// Metadata keys of every gRPC call between a coordinator and its workers.
const (
	mdToken    = "pipetrain-token"
	mdProtocol = "pipetrain-protocol"
	mdCores    = "pipetrain-cores"
	mdAddress  = "pipetrain-address" // the worker's actor address, incarnation included
)

// maxMessage is the largest gRPC message either side takes: protoactor
// batches many envelopes into one message, and an activation alone may be
// far above gRPC's default 4 MiB.
const maxMessage = math.MaxInt32

// window is gRPC's flow-control window per stream and per connection: at
// the default 64 KiB, a megabyte activation waits on many round trips of
// window updates. buffer is each connection's read and write buffer.
const (
	window      = 16 << 20
	buffer      = 1 << 20
	writerQueue = 1 << 10
)

// Link timing. A server pings an idle client every keepaliveTime and drops
// it keepaliveTimeout later (gRPC clients ping at most every 10 s); the
// heartbeat finds a lost worker or a silent link within beatLost.
const (
	keepaliveTime    = time.Second
	keepaliveTimeout = 2 * time.Second
	clientKeepalive  = 10 * time.Second // gRPC's floor for clients
	BeatEvery        = 500 * time.Millisecond
	beatLost         = 3 * time.Second // no heartbeat answered for this long: the host is lost
	sessionSilence   = 5 * time.Second // a worker drops a run whose coordinator is silent this long
	handshakeTimeout = 5 * time.Second
	spawnTimeout     = 30 * time.Second
)

// tokenOK compares a presented token with the expected one in constant time.
func tokenOK(got []string, want string) bool {
	g := ""
	if len(got) > 0 {
		g = got[0]
	}
	return subtle.ConstantTimeCompare([]byte(g), []byte(want)) == 1
}

// serverOptions guard a process's gRPC server: every call must carry the
// token; protoactor's ListProcesses is answered by the handshake instead of
// its handler, which panics, and its GetProcessDiagnostics is denied; a
// handler's panic becomes an error instead of ending the process. Its
// credentials hand the data plane's connections to dp.
func serverOptions(token func() string, self func() string, creds credentials.TransportCredentials, dp *dataPlane) []grpc.ServerOption {
	unary := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
		md, _ := metadata.FromIncomingContext(ctx)
		if !tokenOK(md.Get(mdToken), token()) {
			return nil, status.Error(codes.Unauthenticated, "wrong or missing token")
		}
		if info.FullMethod != "/remote.Remoting/ListProcesses" {
			return nil, status.Error(codes.PermissionDenied, "not served")
		}
		if v := md.Get(mdProtocol); len(v) == 0 || v[0] != Protocol {
			return nil, status.Errorf(codes.FailedPrecondition, "protocol %v, this side speaks %s", v, Protocol)
		}
		_ = grpc.SetHeader(ctx, metadata.Pairs(mdProtocol, Protocol, mdCores, strconv.Itoa(runtime.GOMAXPROCS(0)), mdAddress, self()))
		return &remote.ListProcessesResponse{}, nil
	}
	stream := func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
		md, _ := metadata.FromIncomingContext(ss.Context())
		if !tokenOK(md.Get(mdToken), token()) {
			return status.Error(codes.Unauthenticated, "wrong or missing token")
		}
		defer func() {
			if r := recover(); r != nil {
				err = status.Errorf(codes.Internal, "handler panicked: %v", r)
			}
		}()
		return handler(srv, ss)
	}
	opts := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(maxMessage), grpc.MaxSendMsgSize(maxMessage),
		grpc.InitialWindowSize(window), grpc.InitialConnWindowSize(window),
		grpc.ReadBufferSize(buffer), grpc.WriteBufferSize(buffer),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: clientKeepalive / 2, PermitWithoutStream: true}),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: keepaliveTime, Timeout: keepaliveTimeout}),
		grpc.ChainUnaryInterceptor(unary), grpc.ChainStreamInterceptor(stream),
	}
	if creds == nil {
		creds = insecure.NewCredentials()
	}
	return append(opts, grpc.Creds(dataCreds{creds, dp}))
}

// dialOptions make every outgoing call carry the token and the protocol,
// and find a silent peer by keepalive.
func dialOptions(token func() string, creds credentials.TransportCredentials) []grpc.DialOption {
	if creds == nil {
		creds = insecure.NewCredentials()
	}
	creds = hostCreds{creds}
	withMD := func(ctx context.Context) context.Context {
		return metadata.AppendToOutgoingContext(ctx, mdToken, token(), mdProtocol, Protocol)
	}
	return []grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "tcp", actors.Host(addr))
		}),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMessage), grpc.MaxCallSendMsgSize(maxMessage)),
		grpc.WithInitialWindowSize(window), grpc.WithInitialConnWindowSize(window),
		grpc.WithReadBufferSize(buffer), grpc.WithWriteBufferSize(buffer),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: clientKeepalive, Timeout: keepaliveTimeout, PermitWithoutStream: true}),
		grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			return invoker(withMD(ctx), method, req, reply, cc, opts...)
		}),
		grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			return streamer(withMD(ctx), desc, cc, method, opts...)
		}),
	}
}

// startRemote makes system reachable from other processes at listen
// (host:port; port 0 picks one), advertising advertise if not empty, and
// returns the address it listens on, and its data plane. token gives the
// token of the moment; kinds are what peers may spawn here.
func startRemote(system *actor.ActorSystem, listen, advertise string, token func() string, t TLS, kinds ...*remote.Kind) (r *remote.Remote, addr string, dp *dataPlane, err error) {
	server, client, err := t.credentials()
	if err != nil {
		return nil, "", nil, err
	}
	dataServer, dataClient, err := t.configs()
	if err != nil {
		return nil, "", nil, err
	}
	dp = newDataPlane(token, dataServer, dataClient)
	host, portText, err := net.SplitHostPort(listen)
	if err != nil {
		return nil, "", nil, fmt.Errorf("remote: listen address %q: %v", listen, err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < 0 || port > 65535 {
		return nil, "", nil, fmt.Errorf("remote: listen address %q: port %q is not a number in 0..65535", listen, portText)
	}
	self := func() string { return system.Address() }
	opts := []remote.ConfigOption{
		remote.WithServerOptions(serverOptions(token, self, server, dp)...),
		remote.WithDialOptions(dialOptions(token, client)...),
		remote.WithCallOptions(grpc.MaxCallRecvMsgSize(maxMessage), grpc.MaxCallSendMsgSize(maxMessage)),
		remote.WithKinds(kinds...),
		// protoactor's default preallocates a million queue slots per peer,
		// 16 MB of pointers that every garbage collection scans; the queue grows
		remote.WithEndpointWriterQueueSize(writerQueue),
	}
	// The actor address names the port, so a port is chosen before the
	// endpoint starts; one taken in between is chosen again.
	for try := 0; ; try++ {
		at := port
		if at == 0 || try == 0 { // protoactor panics on a port in use: say so first
			l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(at)))
			if err != nil {
				return nil, "", nil, fmt.Errorf("remote: cannot listen on %s: %v", listen, err)
			}
			at = l.Addr().(*net.TCPAddr).Port
			l.Close()
		}
		addr = listenAddr(host, at)
		if advertise != "" {
			addr = advertise
			if _, _, err := net.SplitHostPort(advertise); err != nil { // a host alone: this port
				addr = net.JoinHostPort(advertise, strconv.Itoa(at))
			}
		}
		cfg := remote.Configure(host, at, append(opts, remote.WithAdvertisedHost(incarnate(addr)))...)
		cfg.MaxRetryCount = 1 // the handshake has found the peer; a lost one is not waited for
		r = remote.NewRemote(system, cfg)
		if err := startOnce(r); err == nil {
			return r, addr, dp, nil
		} else if port != 0 || try == 4 {
			return nil, "", nil, fmt.Errorf("remote: cannot listen on %s: %v", listen, err)
		}
	}
}

// listenAddr is host:port as a listener on host reports it ("[::]" for any
// address).
func listenAddr(host string, port int) string {
	if host == "" {
		host = "::"
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
}

// startOnce starts r, turning protoactor's panic on a port in use into an error.
func startOnce(r *remote.Remote) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
	}()
	r.Start()
	return nil
}

// An actor address names one incarnation of a process: its network address,
// then "/" and a random number drawn when the process's endpoint starts.
// protoactor keeps what it knows of a peer (the connection and its writer, a
// connection attempt under way, the watches) by actor address, and drops it
// when an event naming that address arrives, whenever that is. With bare
// network addresses, a worker restarted at its old address inherited what
// its peers still held of the dead one: an attempt to reach the dead worker,
// made after its death and failing two seconds later, swallowed every
// message the new run sent to the new one meanwhile, and its failure event
// then tore down the new connection too. With incarnations, nothing of a
// dead process is ever taken for its successor (as Akka's addresses carry a
// system UID); the network address is used only to dial.
func incarnate(addr string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s/%016x", addr, b)
}

// hostCreds dials TLS with the network address as the server's name, not
// the actor address gRPC passes as its authority.
type hostCreds struct {
	credentials.TransportCredentials
}

func (c hostCreds) ClientHandshake(ctx context.Context, authority string, conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return c.TransportCredentials.ClientHandshake(ctx, actors.Host(authority), conn)
}

func (c hostCreds) Clone() credentials.TransportCredentials {
	return hostCreds{c.TransportCredentials.Clone()}
}

// TLS names the PEM files that secure a process's links: its certificate
// and key, which it serves with, and the authority that signed its peers'
// certificates, which it checks them against. All three or none: a
// coordinator both dials its workers and is dialled back by them.
type TLS struct {
	Cert, Key, CA string
}

// credentials returns the server and client sides of t, or nil, nil for
// plaintext.
func (t TLS) credentials() (server, client credentials.TransportCredentials, err error) {
	s, c, err := t.configs()
	if s == nil || err != nil {
		return nil, nil, err
	}
	return credentials.NewTLS(s), credentials.NewTLS(c), nil
}

// configs returns the TLS configurations of t's server and client sides,
// or nil, nil for plaintext.
func (t TLS) configs() (server, client *tls.Config, err error) {
	if t == (TLS{}) {
		return nil, nil, nil
	}
	if t.Cert == "" || t.Key == "" || t.CA == "" {
		return nil, nil, errors.New("remote: TLS needs a certificate, its key and the authority that signed the peers' (--tls-cert, --tls-key, --tls-ca)")
	}
	pair, err := tls.LoadX509KeyPair(t.Cert, t.Key)
	if err != nil {
		return nil, nil, fmt.Errorf("remote: TLS certificate %s and key %s: %v", t.Cert, t.Key, err)
	}
	pem, err := os.ReadFile(t.CA)
	if err != nil {
		return nil, nil, fmt.Errorf("remote: TLS authority: %v", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, nil, fmt.Errorf("remote: TLS authority %s holds no PEM certificate", t.CA)
	}
	server = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS13}
	client = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS13}
	return server, client, nil
}

// HandshakeError is a worker that refused the coordinator, or could not be
// reached: a wrong token, another protocol, nothing listening.
type HandshakeError struct {
	Host string
	Err  error
}

func (e *HandshakeError) Error() string { return fmt.Sprintf("remote: host %s: %v", e.Host, e.Err) }
func (e *HandshakeError) Unwrap() error { return e.Err }

// handshake checks that a worker listens at host, speaks this protocol and
// takes the token, before anything is spawned there; it returns the
// worker's cores and actor address.
func handshake(host, token string, t TLS) (int, string, error) {
	_, client, err := t.credentials()
	if err != nil {
		return 0, "", err
	}
	conn, err := grpc.NewClient(host, dialOptions(func() string { return token }, client)...)
	if err != nil {
		return 0, "", &HandshakeError{host, err}
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), handshakeTimeout)
	defer cancel()
	var header metadata.MD
	_, err = remote.NewRemotingClient(conn).ListProcesses(ctx, &remote.ListProcessesRequest{}, grpc.Header(&header))
	if err != nil {
		st, _ := status.FromError(err)
		switch st.Code() {
		case codes.Unauthenticated:
			return 0, "", &HandshakeError{host, errors.New("the worker refused the token (give both sides the same --token-file or PIPETRAIN_TOKEN)")}
		case codes.FailedPrecondition:
			return 0, "", &HandshakeError{host, fmt.Errorf("protocol mismatch: %s", st.Message())}
		case codes.DeadlineExceeded, codes.Unavailable:
			switch msg := st.Message(); {
			case strings.Contains(msg, "server preface"):
				return 0, "", &HandshakeError{host, fmt.Errorf("the worker speaks TLS and this coordinator does not (give --tls-cert, --tls-key and --tls-ca): %s", msg)}
			case strings.Contains(msg, "tls:") || strings.Contains(msg, "x509"):
				return 0, "", &HandshakeError{host, fmt.Errorf("TLS failed (a worker without TLS, or a certificate the authority did not sign): %s", msg)}
			}
			return 0, "", &HandshakeError{host, fmt.Errorf("no worker answered (is `train worker --listen %s` running there?): %s", host, st.Message())}
		}
		return 0, "", &HandshakeError{host, fmt.Errorf("handshake failed: %s", st.Message())}
	}
	if v := header.Get(mdProtocol); len(v) == 0 || v[0] != Protocol {
		return 0, "", &HandshakeError{host, fmt.Errorf("protocol mismatch: the worker speaks %v, this coordinator %s", v, Protocol)}
	}
	cores := 0
	if v := header.Get(mdCores); len(v) > 0 {
		cores, _ = strconv.Atoi(v[0])
	}
	addr := header.Get(mdAddress)
	if len(addr) == 0 || actors.Host(addr[0]) == addr[0] {
		return 0, "", &HandshakeError{host, errors.New("the worker gave no actor address")}
	}
	return cores, addr[0], nil
}

// isLoopback reports whether host (of host:port) is a loopback name or address.
func isLoopback(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// outboundIP is this machine's address on the route to host, which a
// worker there can reach the coordinator at.
func outboundIP(host string) (string, error) {
	c, err := net.Dial("udp", host) // no packet is sent
	if err != nil {
		return "", err
	}
	defer c.Close()
	ip, _, err := net.SplitHostPort(c.LocalAddr().String())
	return ip, err
}
