package remote

import (
	"fmt"
	"reflect"
	"sync/atomic"
	"unsafe"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/pipetrain/pipetrain/actors"
)

// undelivered is one process's account of the messages between processes
// that were not delivered: protoactor makes a dead letter of a message whose
// connection is gone or whose target does not exist here, and an actor
// drops one of another run or engine. Each is counted, logged as an
// "undelivered" event naming its sender, target and type, and fails the live
// run it belongs to at once, naming the host, instead of leaving a step to
// wait for it until the watchdog's quiet period ends.
type undelivered struct {
	system *actor.ActorSystem
	log    zerolog.Logger
	count  atomic.Int64
	fail   func(actors.Run, error) (*zerolog.Logger, bool) // stops the run, if it is live in this process, and gives its log
}

// watchUndelivered starts the account of system's undelivered messages.
func watchUndelivered(system *actor.ActorSystem, log zerolog.Logger, fail func(actors.Run, error) (*zerolog.Logger, bool)) *undelivered {
	u := &undelivered{system: system, log: log, fail: fail}
	system.EventStream.Subscribe(func(ev any) {
		if d, ok := ev.(*actor.DeadLetterEvent); ok {
			u.deadLetter(d)
		}
	})
	return u
}

// deadLetter reports a dead letter that was a message between processes;
// protoactor's own are left alone.
func (u *undelivered) deadLetter(ev *actor.DeadLetterEvent) {
	msg, target, reason := ev.Message, ev.PID, ""
	if m, t, ok := endpointMessage(msg); ok {
		msg, target, reason = m, t, "its connection had closed"
	}
	run, from, ok := actors.RunOf(msg)
	if !ok || target == nil {
		return
	}
	if reason == "" {
		reason = "no connection to its host"
		if target.Address == u.system.Address() {
			reason = "no such actor there"
		}
	}
	u.report(actors.Drop{Run: run, From: from, To: target.Id, Type: actors.Describe(msg), Reason: reason}, actors.Host(target.Address))
}

// dropped reports a message an actor of this process dropped.
func (u *undelivered) dropped(d actors.Drop) { u.report(d, actors.Host(u.system.Address())) }

// report counts and logs d, a message for an actor on host, and fails its
// run. A message of a run that is over here (the answer to a question that
// timed out, work in flight when a failed run closed) is only counted, and
// logged at debug level.
func (u *undelivered) report(d actors.Drop, host string) {
	n := u.count.Add(1)
	log, live := u.fail(d.Run, fmt.Errorf("host %s: %s from %s to %s was not delivered: %s", host, d.Type, d.From, d.To, d.Reason))
	if log == nil {
		log = &u.log
	}
	ev := log.Debug()
	if live {
		ev = log.Warn()
	}
	ev.Str("event", "undelivered").Str("run", d.Run.ID).Uint64("generation", d.Run.Gen).Str("from", d.From).
		Str("to", d.To).Str("host", host).Str("type", d.Type).Str("reason", d.Reason).Int64("count", n).Bool("live", live).
		Msg("a message between processes was not delivered")
}

// endpointMessage unwraps a message that protoactor's remote had queued for
// a connection whose writer stopped: it then makes a dead letter of its own
// envelope, whose type is unexported, so its fields are read by name. It
// reports false for anything else, or if the envelope's fields change.
func endpointMessage(m any) (msg any, target *actor.PID, ok bool) {
	v := reflect.ValueOf(m)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return nil, nil, false
	}
	e := v.Elem()
	if e.Type().PkgPath() != "github.com/asynkron/protoactor-go/remote" || e.Type().Name() != "remoteDeliver" {
		return nil, nil, false
	}
	t, body := e.FieldByName("target"), e.FieldByName("message")
	if !t.IsValid() || t.Type() != reflect.TypeFor[*actor.PID]() || !body.IsValid() || body.Kind() != reflect.Interface {
		return nil, nil, false
	}
	target = (*actor.PID)(t.UnsafePointer())
	msg = *(*any)(unsafe.Pointer(body.UnsafeAddr()))
	return msg, target, true
}
