package pipeline

import (
	"github.com/asynkron/protoactor-go/actor"

	"github.com/pipetrain/pipetrain/actors"
	"github.com/pipetrain/pipetrain/nn"
)

// NewWithLayers is New for layers built by hand (instrumented ones, for
// tests of the engine itself) taking samples of features values.
func NewWithLayers(layers []nn.Layer, features int, cfg Config) (*Engine, error) {
	return newEngine(layers, Model{Sample: []int{features}}, cfg)
}

// Misroute points the stage actor at position i to a next neighbour that
// does not exist, on the host where its real one runs, for tests of
// messages that cannot be delivered.
func (e *Engine) Misroute(i int) error {
	w := e.wiring(0, i)
	for k, pid := range w.Next {
		w.Next[k] = actor.NewPID(pid.Address, pid.Id+"-gone")
	}
	for _, id := range e.plan.Positions[i].Slots {
		res, err := e.request(e.stages[id], &w)
		if err != nil {
			return err
		}
		if a, ok := res.(*actors.Ack); ok && a.Err != nil {
			return a.Err
		}
	}
	return nil
}
