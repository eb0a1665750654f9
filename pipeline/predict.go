package pipeline

import (
	"cmp"
	"fmt"
	"runtime"
	"time"

	"github.com/pipetrain/pipetrain/actors"
	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/tensor"
)

// Link is a network link between hosts, as the cost model sees it.
type Link struct {
	Bandwidth float64       // bytes a second; 0: infinite
	Latency   time.Duration // one way
}

// transfer is how long bytes take over l.
func (l Link) transfer(bytes int64) float64 {
	t := l.Latency.Seconds()
	if l.Bandwidth > 0 {
		t += float64(bytes) / l.Bandwidth
	}
	return t
}

// Prediction is what the cost model expects of a plan: a step's time and
// its parts.
type Prediction struct {
	Plan *Plan
	Rows int // a micro-batch's rows

	// Stage is each position's compute a micro-batch (forward and
	// backward, its slowest shard), Cross each cut's transfer a
	// micro-batch (the activation and its gradient; 0 within a host), In
	// and Out the input's way from this process to the first stage and
	// the output's to the loss and its gradient's back (0 here), Exchange
	// the replicas' gradients and weights a step, all in seconds.
	Stage, Cross []float64
	In, Out      float64
	Exchange     float64
	Fences       float64 // the step's end on hosts: the updates' acknowledgements, clipping's norm and factor
	Step         float64 // a step's predicted time
	Bottleneck   string  // what bounds the pipeline: "stage 2", "link 1→2", "replicas' exchange"
}

// Predict plans m under cfg as New would, without starting anything
// (cfg.Hosts may name hosts that do not exist: the plan only places stages
// on them), measures each layer's forward and backward on a micro-batch
// with the threads a stage would have, and predicts a step's time with
// links between hosts as link says: the first micro-batch through every
// stage and cut, then one more of the slowest for each further one
// ((m + p − 1) bottlenecks when the chain is balanced), micro-batches one
// at a time under the sequential schedule, and with replicas the gradient
// turn and the new weights between hosts, one block after another.
func Predict(m Model, cfg Config, batch int, link Link) (*Prediction, error) {
	ms, err := measure(m, cfg, batch)
	if err != nil {
		return nil, err
	}
	costs := make([]float64, len(ms.fwd))
	for i := range costs {
		costs[i] = (ms.fwd[i] + ms.bwd[i]).Seconds()
	}
	c := costing{p: ms.plan, link: link, rows: ms.rows, outs: ms.outs, in: tensor.SizeOf(m.Sample), bytes: 4}
	if m.DType == tensor.Float64 {
		c.bytes = 8
	}
	pr := &Prediction{Plan: ms.plan, Rows: ms.rows}
	c.chain(pr, costs)
	c.step(pr)
	return pr, nil
}

// measured is a model planned as New would plan it and its layers timed
// on a micro-batch, with the threads a stage actor would have.
type measured struct {
	plan     *Plan
	rows     int   // a micro-batch's
	outs     []int // each layer's output values a sample
	params   []bool
	fwd, bwd []time.Duration
}

func measure(m Model, cfg Config, batch int) (*measured, error) {
	layers, err := nn.BuildShape(m.Specs, m.Sample, m.Seed, m.DType, 0, len(m.Specs))
	if err != nil {
		return nil, fmt.Errorf("pipeline: %w", err)
	}
	cfg.MicroBatches, cfg.SampleRows = max(1, cfg.MicroBatches), cmp.Or(max(cfg.SampleRows, 0), 64)
	shapes, err := nn.OutShapes(m.Specs, m.Sample)
	if err != nil {
		return nil, fmt.Errorf("pipeline: %w", err)
	}
	ms := &measured{}
	for i, sh := range shapes {
		ms.outs = append(ms.outs, tensor.SizeOf(sh))
		ms.params = append(ms.params, len(layers[i].Params()) > 0)
	}
	if ms.plan, err = makePlan(layers, tensor.SizeOf(m.Sample), ms.outs, cfg, layerBuilder(m)); err != nil {
		return nil, err
	}
	ms.rows = max(1, batch/max(1, ms.plan.Replicas)/ms.plan.Micro)
	ms.fwd, ms.bwd, err = measurePasses(layers, tensor.SizeOf(m.Sample), ms.rows, 3, ms.plan.stageThreads(), paramDType(layers), cfg.Precision)
	if err != nil {
		return nil, err
	}
	return ms, nil
}

// SimLayers is what Simulate charges for a model's layers, measured.
type SimLayers struct {
	Stages  int       // the stages the plan makes of the layers
	Rows    int       // a micro-batch's, as timed
	F, B, W []float64 // each layer's forward, input gradient and weight gradient, in seconds
}

// MeasureSimLayers plans m under cfg and times its layers as Predict
// does, for Simulate. The backward is timed whole, as the layers run it:
// a layer with parameters has it split half and half between B and W,
// since nothing yet times the input and weight gradients apart; one
// without has no W.
func MeasureSimLayers(m Model, cfg Config, batch int) (*SimLayers, error) {
	ms, err := measure(m, cfg, batch)
	if err != nil {
		return nil, err
	}
	sl := &SimLayers{Stages: len(ms.plan.Positions), Rows: ms.rows}
	if ms.plan.Chunks > 1 { // the positions take turns on the stages
		sl.Stages = ms.plan.Stages
	}
	for i := range ms.fwd {
		b, w := ms.bwd[i].Seconds(), 0.0
		if ms.params[i] {
			b, w = b/2, b/2
		}
		sl.F, sl.B, sl.W = append(sl.F, ms.fwd[i].Seconds()), append(sl.B, b), append(sl.W, w)
	}
	return sl, nil
}

// stageThreads is the threads a stage actor of p has: here, or on a worker
// that shares its cores among its stage actors as this process does, or
// HostThreads (gemm_threads) there when set, as the worker gives it.
func (p *Plan) stageThreads() int {
	if len(p.Hosts) == 0 || p.OneBusy() {
		return cmp.Or(p.Threads, runtime.GOMAXPROCS(0))
	}
	if p.HostThreads > 0 {
		return p.HostThreads
	}
	perHost := (len(p.Slots) + len(p.Hosts) - 1) / len(p.Hosts)
	return max(1, runtime.GOMAXPROCS(0)/perHost)
}

// costing is what the cost model reads of a plan.
type costing struct {
	p     *Plan
	link  Link
	rows  int   // a micro-batch's
	outs  []int // each layer's output values a sample
	in    int   // a sample's input values
	bytes int64 // a value's
}

// chain fills in each position's compute and each link's transfer a
// micro-batch, from the layers' costs.
func (c costing) chain(pr *Prediction, costs []float64) {
	p := c.p
	for i, pos := range p.Positions {
		var s float64
		for _, l := range pos.Layers {
			s += costs[l] / float64(len(pos.Slots)) // shards split a layer's work
		}
		pr.Stage = append(pr.Stage, s)
		if i+1 < len(p.Positions) {
			x := 0.0
			if p.Slots[pos.Slots[0]].Host != p.Slots[p.Positions[i+1].Slots[0]].Host {
				x = 2 * c.link.transfer(int64(c.rows*c.outs[pos.Layers[len(pos.Layers)-1]])*c.bytes) // the activation and its gradient
			}
			pr.Cross = append(pr.Cross, x)
		}
	}
	first, last := p.Positions[0], p.Positions[len(p.Positions)-1]
	if p.Slots[first.Slots[0]].Host >= 0 {
		pr.In = c.link.transfer(int64(c.rows*c.in) * c.bytes)
	}
	if p.Slots[last.Slots[0]].Host >= 0 {
		pr.Out = 2 * c.link.transfer(int64(c.rows*c.outs[len(c.outs)-1])*c.bytes)
	}
}

// step adds up a step: the first micro-batch through every stage and link,
// one more of the slowest for each other one (all of them under the
// sequential schedule), the replicas' exchange and the fences.
func (c costing) step(pr *Prediction) {
	sum, worst := pr.In+pr.Out, max(pr.In, pr.Out)
	pr.Bottleneck = "stage 0"
	if worst > 0 {
		pr.Bottleneck = "this process's links"
	}
	for i, s := range pr.Stage {
		sum += s
		if s >= worst {
			worst, pr.Bottleneck = s, fmt.Sprintf("stage %d", i)
		}
	}
	for i, x := range pr.Cross {
		sum += x
		if x > worst {
			worst, pr.Bottleneck = x, fmt.Sprintf("link %d→%d", i, i+1)
		}
	}
	micro := float64(c.p.Micro)
	if c.p.Schedule == actors.Sequential {
		pr.Step = micro * sum
	} else {
		pr.Step = sum + (micro-1)*worst
	}
	if pr.Exchange = c.exchange(); pr.Exchange > 0 {
		if pr.Exchange > worst {
			pr.Bottleneck = "replicas' exchange"
		}
		pr.Step += pr.Exchange
	}
	pr.Fences = c.fences()
	pr.Step += pr.Fences
}

// fences is a step's end on hosts: each stage's acknowledgement of its
// update reaches the coordinator (a link's latency), and with clip_norm
// the stages' gradient norms go to it and the clip factor comes back
// before the update (two more).
func (c costing) fences() float64 {
	if len(c.p.Hosts) == 0 {
		return 0
	}
	n := 1.0
	if c.p.ClipNorm > 0 {
		n = 3
	}
	return n * c.link.Latency.Seconds()
}

// exchange is the replicas' gradient turn and new weights a step, between
// hosts, one parameter block after another.
func (c costing) exchange() float64 {
	p := c.p
	if p.Replicas <= 1 || len(p.Hosts) == 0 {
		return 0
	}
	var t float64
	for id := range p.PerReplica() {
		var w int64
		for _, prm := range p.Slots[id].Params {
			w += int64(prm.Size) * c.bytes
		}
		hops := 0
		for _, cp := range p.Copies(id)[1:] {
			if p.Slots[cp].Host != p.Slots[id].Host {
				hops++
			}
		}
		if w > 0 {
			t += 2 * float64(hops) * c.link.transfer(w) // gradients in turn, weights back
		}
	}
	return t
}
