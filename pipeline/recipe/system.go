package recipe

import (
	"log/slog"
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
// logger (nil: nowhere). A dead letter (a message to an actor already
// stopped, as in Close after a failure) starts a throttle timer goroutine:
// its life is kept short, so that a closed engine leaves nothing running.
func NewActorSystem(logger *zerolog.Logger) *actor.ActorSystem {
	return actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return protoLogger(logger) }),
		actor.WithDeadLetterThrottleInterval(time.Millisecond))
}

// protoLogger is protoactor's logger: warnings up as "protoactor" events.
func protoLogger(l *zerolog.Logger) *slog.Logger {
	if l == nil {
		return silentLogger
	}
	z := l.With().Str("event", "protoactor").Logger().Level(zerolog.WarnLevel)
	return slog.New(zerolog.NewSlogHandler(z))
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
