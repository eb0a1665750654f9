package recipe

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
)

// What every process of a pipeline runs its actors with, the engine's and
// each worker's alike.

// StopStrategy stops rather than restarts a failed actor: a restart would
// make it anew and lose its weights.
var StopStrategy = actor.NewOneForOneStrategy(0, 0, func(any) actor.Directive { return actor.StopDirective })

// NewActorSystem returns an actor system that logs protoactor's warnings to
// logger (nil: nowhere). A connection lost or failing to an address for
// which ended reports true (nil: none), a peer whose run ended as it should,
// logs at debug: it is the run's end, not a failure. A dead letter (a message to an actor
// already stopped, as in Close after a failure) starts a throttle timer
// goroutine: its life is kept short, so that a closed engine leaves nothing
// running.
func NewActorSystem(logger *zerolog.Logger, ended func(address string) bool) *actor.ActorSystem {
	return actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return protoLogger(logger, ended) }),
		actor.WithDeadLetterThrottleInterval(time.Millisecond))
}

// protoLogger is protoactor's logger: warnings up as "protoactor" events.
func protoLogger(l *zerolog.Logger, ended func(string) bool) *slog.Logger {
	if l == nil {
		return silentLogger
	}
	z := l.With().Str("event", "protoactor").Logger().Level(zerolog.WarnLevel)
	var h slog.Handler = zerolog.NewSlogHandler(z)
	if ended != nil {
		h = endedQuiet{Handler: h, ended: ended}
	}
	return slog.New(h)
}

// endpointWriter begins protoactor's records of its connection to a peer:
// lost, or failing to connect.
const endpointWriter = "EndpointWriter "

// endedQuiet lowers endpointWriter records to debug for a peer whose run
// ended.
type endedQuiet struct {
	slog.Handler
	ended   func(string) bool
	address string // the "address" attribute its logger was made with
}

func (h endedQuiet) Handle(ctx context.Context, r slog.Record) error {
	if r.Level > slog.LevelDebug && strings.HasPrefix(r.Message, endpointWriter) {
		addr := h.address
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "address" {
				addr = a.Value.String()
			}
			return true
		})
		if h.ended(addr) {
			if !h.Enabled(ctx, slog.LevelDebug) {
				return nil
			}
			q := slog.NewRecord(r.Time, slog.LevelDebug, r.Message, r.PC)
			r.Attrs(func(a slog.Attr) bool { q.AddAttrs(a); return true })
			r = q
		}
	}
	return h.Handler.Handle(ctx, r)
}

func (h endedQuiet) WithAttrs(as []slog.Attr) slog.Handler {
	for _, a := range as {
		if a.Key == "address" {
			h.address = a.Value.String()
		}
	}
	h.Handler = h.Handler.WithAttrs(as)
	return h
}

func (h endedQuiet) WithGroup(name string) slog.Handler {
	h.Handler = h.Handler.WithGroup(name)
	return h
}

// silentLogger is protoactor's logger when none is given.
var silentLogger = slog.New(slog.DiscardHandler)

// ActorStatus is one actor's live counters, for metrics, as an engine and
// a worker report them.
type ActorStatus struct {
	Name     string        // "stage 2", "stage 1 shard 0", "loss", "optimizer", "coordinator"
	Mailbox  int64         // messages waiting
	Messages int64         // messages taken since the engine started
	Busy     time.Duration // time spent working since the engine started
	Host     string        // the worker it runs on, whose own counters these are not; empty: here
}
