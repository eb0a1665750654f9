package remote

import (
	"errors"
	"fmt"
	"sync"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/rs/zerolog"

	"github.com/pipetrain/pipetrain/actors"
	"github.com/pipetrain/pipetrain/pipeline/recipe"
)

// This process's endpoint for its workers, which every engine with hosts
// shares.

// shared is this process's one endpoint for talking to workers, which
// every engine with hosts uses: protoactor's remote sets gRPC's
// process-wide logger whenever one starts, so one starts per process.
var shared struct {
	sync.Mutex
	system            *actor.ActorSystem
	listen, advertise string
	token             string
	tls               TLS
	users             int // engines open on it
	undelivered       *undelivered
	engines           map[actors.Run]func(error) *zerolog.Logger // the live engines, by run and generation: each one's fail
	data              *dataPlane
}

// liveShared reports whether run's engine is live in this process.
func liveShared(run actors.Run) bool {
	shared.Lock()
	defer shared.Unlock()
	return shared.engines[run] != nil
}

// SetLive records the engine of hs's run as live, so that an undelivered
// message of the run fails it: fail stops the engine with err and returns
// its log. A nil fail records it as no longer live.
func (hs *Hosts) SetLive(fail func(err error) *zerolog.Logger) {
	shared.Lock()
	defer shared.Unlock()
	if fail != nil {
		shared.engines[hs.run] = fail
	} else {
		delete(shared.engines, hs.run)
	}
}

// failShared fails the live engine of run, if there is one here, and
// returns its log.
func failShared(run actors.Run, err error) (*zerolog.Logger, bool) {
	shared.Lock()
	fail := shared.engines[run]
	shared.Unlock()
	if fail == nil {
		return nil, false
	}
	return fail(err), true
}

func sharedToken() string {
	shared.Lock()
	defer shared.Unlock()
	return shared.token
}

// acquireShared returns this process's endpoint, starting it on first use;
// releaseShared gives it back. Engines open at once share one token.
func acquireShared(listen, advertise, token string, t TLS, logger *zerolog.Logger) (*actor.ActorSystem, error) {
	shared.Lock()
	if s := shared.system; s != nil && shared.users == 0 && (shared.listen != listen || shared.advertise != advertise || shared.tls != t) {
		// no engine uses it: start anew where this one asks (its watchers
		// take the lock as it stops)
		shared.system = nil
		shared.Unlock()
		remote.GetRemote(s).Shutdown(false)
		s.Shutdown()
		shared.Lock()
	}
	defer shared.Unlock()
	if shared.system != nil {
		if shared.users > 0 && shared.token != token {
			return nil, errors.New("remote: engines open at once must share one token")
		}
		if shared.listen != listen || shared.advertise != advertise {
			return nil, fmt.Errorf("remote: this process reaches its workers at %s already, not %s", shared.listen, listen)
		}
		if shared.tls != t {
			return nil, errors.New("remote: this process talks to its workers with other TLS files already")
		}
		shared.token = token
		shared.users++
		return shared.system, nil
	}
	system := recipe.NewActorSystem(logger, nil)
	log := zerolog.Nop()
	if logger != nil {
		log = *logger
	}
	shared.undelivered = watchUndelivered(system, log, failShared)
	shared.engines = map[actors.Run]func(error) *zerolog.Logger{}
	shared.token = token // read by the server's guard, under the lock
	// workers reach back at advertise, this machine's address on their route, if given
	_, _, dp, err := startRemote(system, listen, advertise, sharedToken, t)
	if err != nil {
		system.Shutdown()
		return nil, err
	}
	dp.start(system, shared.undelivered, liveShared)
	shared.data = dp
	shared.system, shared.listen, shared.advertise, shared.tls, shared.users = system, listen, advertise, t, 1
	return system, nil
}

func releaseShared() {
	shared.Lock()
	defer shared.Unlock()
	shared.users--
}

// CloseEndpoint stops this process's endpoint for workers, if one started:
// call it when no engine with hosts is open (at the end of a run).
func CloseEndpoint() {
	shared.Lock()
	system, dp := shared.system, shared.data
	shared.system, shared.data = nil, nil
	shared.Unlock()
	if system == nil {
		return
	}
	remote.GetRemote(system).Shutdown(false)
	dp.close()
	system.Shutdown()
}
