//go:build !race

// Three protoactor remotes in one process race on gRPC's process-wide
// logger, which each sets when it starts; the product starts one a process.

package remote

import (
	"context"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"

	"github.com/pipetrain/pipetrain/actors"
	"github.com/pipetrain/pipetrain/actors/wire"
)

// TestRestartedPeerReachable: a process that talked to a peer which died,
// and then tried to reach it once more, reaches the peer's successor at the
// same network address at once. (protoactor keeps the failed attempt to
// reach the dead peer as its route to that address for two seconds and
// drops what is sent there meanwhile; a worker restarted at its old
// address lost its first messages so, and the run hung.)
func TestRestartedPeerReachable(t *testing.T) {
	quiet := []actor.ConfigOption{actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }),
		actor.WithDeadLetterThrottleInterval(time.Millisecond)} // its timer goroutine ends soon
	token := func() string { return "" }
	failed := make(chan struct{}, 16) // a's attempts to connect that failed
	a := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(logHook{"EndpointWriter failed to connect", failed})
	}), actor.WithDeadLetterThrottleInterval(time.Millisecond))
	ra, _, _, err := startRemote(a, "127.0.0.1:0", "", token, TLS{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { ra.Shutdown(false); a.Shutdown() }()
	gone := make(chan string, 4)
	a.EventStream.Subscribe(func(ev any) {
		if e, ok := ev.(*remote.EndpointTerminatedEvent); ok {
			gone <- e.Address
		}
	})

	// peer starts a process at listen with an actor "echo" that passes on
	// the heartbeats it takes
	peer := func(listen string) (*actor.ActorSystem, *remote.Remote, string, chan int64) {
		b := actor.NewActorSystem(quiet...)
		rb, addr, _, err := startRemote(b, listen, "", token, TLS{})
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan int64, 4)
		_, err = b.Root.SpawnNamed(actor.PropsFromFunc(func(ctx actor.Context) {
			if m, ok := ctx.Message().(*wire.Beat); ok {
				got <- m.Seq
			}
		}), "echo")
		if err != nil {
			t.Fatal(err)
		}
		return b, rb, addr, got
	}
	wait := func(got chan int64, want int64) {
		t.Helper()
		select {
		case seq := <-got:
			if seq != want {
				t.Fatalf("heartbeat %d arrived, want %d", seq, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("heartbeat %d did not arrive within 5 s", want)
		}
	}

	b1, r1, addr, got1 := peer("127.0.0.1:0")
	echo1 := actor.NewPID(b1.Address(), "echo")
	a.Root.Send(echo1, &wire.Beat{Seq: 1})
	wait(got1, 1)
	r1.Shutdown(false)
	b1.Shutdown()
	select { // a has seen the connection go
	case <-gone:
	case <-time.After(5 * time.Second):
		t.Fatal("the connection to the dead peer was not seen to end")
	}
	// to the dead peer, until an attempt to reach it begins and fails (the
	// first may still go to the closing connection)
	for tick := time.Tick(20 * time.Millisecond); len(failed) == 0; <-tick {
		a.Root.Send(echo1, &wire.Beat{Seq: 2})
	}

	b2, r2, _, got2 := peer(addr)
	defer func() { r2.Shutdown(false); b2.Shutdown() }()
	if host, _, _ := net.SplitHostPort(addr); b2.Address() == b1.Address() || actors.Host(b2.Address()) != addr || host == "" {
		t.Fatalf("the successor's actor address %s: want %s and an incarnation other than %s", b2.Address(), addr, b1.Address())
	}
	a.Root.Send(actor.NewPID(b2.Address(), "echo"), &wire.Beat{Seq: 3})
	wait(got2, 3)
	select { // the failed attempt ends, two seconds after it began, naming the dead peer alone
	case at := <-gone:
		if at != b1.Address() {
			t.Fatalf("the failed attempt ended the route to %s, want %s", at, b1.Address())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the attempt to reach the dead peer did not end within 5 s")
	}
	a.Root.Send(actor.NewPID(b2.Address(), "echo"), &wire.Beat{Seq: 4})
	wait(got2, 4)
}

// logHook passes a signal to c for each record whose message is msg.
type logHook struct {
	msg string
	c   chan struct{}
}

func (h logHook) Enabled(context.Context, slog.Level) bool { return true }
func (h logHook) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h logHook) WithGroup(string) slog.Handler            { return h }
func (h logHook) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		select {
		case h.c <- struct{}{}:
		default:
		}
	}
	return nil
}
