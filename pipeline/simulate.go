package pipeline

import "github.com/pipetrain/pipetrain/actors"

// The simulator lives with the schedules in package actors, whose stages
// run its orders; these names keep it at hand beside the plan.
type (
	SimSchedule = actors.SimSchedule
	SimKind     = actors.SimKind
	SimOp       = actors.SimOp
	SimCosts    = actors.SimCosts
	SimResult   = actors.SimResult
)

// The schedules Simulate replays.
const (
	SimSequential  = actors.SimSequential
	SimGPipe       = actors.SimGPipe
	Sim1F1B        = actors.Sim1F1B
	SimInterleaved = actors.SimInterleaved
	SimZBH1        = actors.SimZBH1
	SimZBV         = actors.SimZBV
)

// Simulate is actors.Simulate: one step of schedule s over p stages, m
// micro-batches and v chunks a stage, replayed with the costs cost.
func Simulate(s SimSchedule, p, m, v int, cost SimCosts) (*SimResult, error) {
	return actors.Simulate(s, p, m, v, cost)
}
