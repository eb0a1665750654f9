package remote

import (
	"net"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/pipetrain/pipetrain/actors"
	"github.com/pipetrain/pipetrain/actors/wire"
	"github.com/pipetrain/pipetrain/pipeline/recipe"
	"github.com/pipetrain/pipetrain/tensor"
)

// dataPeer is a process's endpoint in a data-plane test: an actor system
// whose actor "sink" passes on what it takes, and a listener on 127.0.0.1
// whose connections go through the gRPC server's credentials, as
// protoactor's do (its remote is not started: two in one process race on
// gRPC's process-wide logger).
type dataPeer struct {
	system *actor.ActorSystem
	data   *dataPlane
	got    chan any
	failed chan error // the runs it failed, by undelivered messages
}

func startDataPeer(t *testing.T, token string, live func(actors.Run) bool) *dataPeer {
	t.Helper()
	p := &dataPeer{system: recipe.NewActorSystem(nil, nil), got: make(chan any, 64), failed: make(chan error, 16)}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.system.ProcessRegistry.Address = incarnate(l.Addr().String())
	p.data = newDataPlane(func() string { return token }, nil, nil)
	p.data.start(p.system, watchUndelivered(p.system, zerolog.Nop(), func(r actors.Run, err error) (*zerolog.Logger, bool) {
		if !live(r) {
			return nil, false
		}
		select {
		case p.failed <- err:
		default:
		}
		return nil, true
	}), live)
	creds := dataCreds{insecure.NewCredentials(), p.data}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			if _, _, err := creds.ServerHandshake(c); err != credentials.ErrConnDispatched {
				c.Close()
			}
		}
	}()
	if _, err := p.system.Root.SpawnNamed(actor.PropsFromFunc(func(ctx actor.Context) {
		if a, ok := ctx.Message().(*actors.Arrived); ok {
			p.got <- a
		}
	}), "sink"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close(); <-done; p.data.close(); p.system.Shutdown() })
	return p
}

var liveRun = actors.Run{ID: "data", Gen: 1}

func isLive(r actors.Run) bool { return r == liveRun }

// TestDataPlane: a tensor crosses as a frame beside protoactor on its
// port, bit for bit and with its message's fields; a frame of a run or
// generation not live there is dropped and counted; a wrong token is
// refused and reported; the receiver reads every step's tensor into the
// same memory, allocating nothing the tensor's size.
func TestDataPlane(t *testing.T) {
	a := startDataPeer(t, "tok", isLive)
	b := startDataPeer(t, "tok", isLive)
	to := actor.NewPID(b.system.Address(), "sink")
	x := tensor.Zeros(tensor.Float32, 64, 1024) // 256 KiB
	for i := range x.Data32() {
		x.Data32()[i] = float32(i) * 0.5
	}
	send := func(run actors.Run, micro int) int64 {
		var f wire.Frame
		data, ok := actors.FrameOf(&f, nil, &actors.Forward{Step: 3, Micro: micro, Row: 16, Total: 64, Seq: 3, Micros: 2, X: x}, run, "stage 0 on a", to)
		if !ok {
			t.Fatal("a forward has no frame")
		}
		return a.data.Send(to, &f, data)
	}
	take := func() *actors.Forward {
		t.Helper()
		select {
		case m := <-b.got:
			return m.(*actors.Arrived).Msg.(*actors.Forward)
		case <-time.After(5 * time.Second):
			t.Fatal("no frame arrived within 5 s")
		}
		return nil
	}
	n := send(liveRun, 1)
	if want := int64(4*x.Size()) + 200; n < int64(4*x.Size()) || n > want {
		t.Errorf("a frame of %d tensor bytes took %d bytes", 4*x.Size(), n)
	}
	got := take()
	if got.Step != 3 || got.Micro != 1 || got.Row != 16 || got.Total != 64 || got.Micros != 2 || !got.X.SameShape(x) || !slices.Equal(got.X.Data32(), x.Data32()) {
		t.Fatalf("got step %d micro %d row %d total %d micros %d shape %v, want the sent forward", got.Step, got.Micro, got.Row, got.Total, got.Micros, got.X.Shape())
	}
	first := &got.X.Data32()[0]

	// the same micro-batch's frame of the next steps lands in the same slot
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const steps = 50
	for range steps {
		send(liveRun, 1)
		if g := take(); &g.X.Data32()[0] != first {
			t.Fatal("a later step's frame was read into new memory")
		}
	}
	runtime.ReadMemStats(&after)
	per := (after.TotalAlloc - before.TotalAlloc) / steps
	t.Logf("%d bytes allocated a frame of %d tensor bytes, sender and receiver together", per, 4*x.Size())
	if per > uint64(4*x.Size()/16) {
		t.Errorf("%d bytes allocated a frame of %d tensor bytes, want none the tensor's size", per, 4*x.Size())
	}

	// a stale generation: counted and dropped, and the stream goes on
	send(actors.Run{ID: "data", Gen: 2}, 0)
	send(liveRun, 0)
	if g := take(); g.Micro != 0 {
		t.Fatalf("got micro-batch %d after the stale frame, want 0", g.Micro)
	}
	if s := b.data.stale.Load(); s != 1 {
		t.Errorf("%d stale frames counted, want 1", s)
	}

	// several tensors in one frame, one of them past a write's piece
	big := tensor.Zeros(tensor.Float64, 300, 1000) // 2.4 MB
	for i := range big.Data64() {
		big.Data64()[i] = float64(i) - 0.25
	}
	small := tensor.Full(tensor.Float32, -0, 3)
	var tf wire.Frame
	turn := &actors.GradTurn{Step: 2, Seq: 5, Rows: true, Grads: []*tensor.Tensor{x, big}, Buffers: []*tensor.Tensor{small}}
	tdata, ok := actors.FrameOf(&tf, nil, turn, liveRun, "replica 1 stage 0 on a", to)
	if !ok {
		t.Fatal("a turn has no frame")
	}
	a.data.Send(to, &tf, tdata)
	select {
	case m := <-b.got:
		g, ok := m.(*actors.Arrived).Msg.(*actors.GradTurn)
		if !ok || g.Step != 2 || g.Seq != 5 || !g.Rows || len(g.Grads) != 2 || len(g.Buffers) != 1 ||
			!slices.Equal(g.Grads[0].Data32(), x.Data32()) || !slices.Equal(g.Grads[1].Data64(), big.Data64()) || !g.Grads[1].SameShape(big) ||
			!slices.Equal(g.Buffers[0].Data32(), small.Data32()) {
			t.Fatalf("got %+v, want the turn sent", m)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the turn did not arrive within 5 s")
	}

	// a wrong token: refused, reported as undelivered, nothing arrives
	c := startDataPeer(t, "other", isLive)
	var f wire.Frame
	data, _ := actors.FrameOf(&f, nil, &actors.Backward{Step: 1, DY: x}, liveRun, "stage 1 on c", to)
	if n := c.data.Send(to, &f, data); n != 0 {
		t.Errorf("a refused frame counted %d bytes", n)
	}
	if n := c.data.failed.Load(); n != 1 {
		t.Errorf("%d failed frames counted, want 1", n)
	}
	select { // when protoactor has not named the host lost first
	case err := <-c.failed:
		if !strings.Contains(err.Error(), "wrong or missing token") || !strings.Contains(err.Error(), "Backward step 1") {
			t.Errorf("the refusal failed the run with %v, want the token and the message named", err)
		}
	case <-time.After(beatLost + 2*time.Second):
		t.Error("the refusal did not fail the run")
	}
	select {
	case m := <-b.got:
		t.Fatalf("%v arrived without the token", m)
	case <-time.After(100 * time.Millisecond):
	}
}
