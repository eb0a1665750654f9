package recipe

import (
	"encoding/json"
	"fmt"

	"github.com/pipetrain/pipetrain/actors"
	"github.com/pipetrain/pipetrain/actors/wire"
	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/ops"
	"github.com/pipetrain/pipetrain/optim"
	"github.com/pipetrain/pipetrain/tensor"
)

// Model is what a pipeline trains: its layers as specs, a sample's shape
// ([F] flat, [C, H, W] images) and the seed of their first weights. Every
// stage actor's layers are built from it (nn.BuildShape), in this process
// or on a worker, with the same weights bit for bit.
type Model struct {
	Specs  []nn.Spec
	Sample []int
	Seed   uint64
	DType  tensor.DType // of the weights; the zero value is Float32
}

// StageSpec is the whole recipe of one stage actor, a plain value the plan
// makes for each slot before any actor starts: Build makes the actor
// from it the same way in this process and on a worker, with the same
// layers, weights and optimizer bit for bit.
type StageSpec struct {
	ID       int
	Name     string // "stage 2", "stage 1 shard 0", "replica 1 stage 2"
	Model    Model  // the whole model; the stage builds layers [Lo, Hi) of it
	Lo, Hi   int
	Cols     [2]int // a shard's output units [Cols[0], Cols[1]) of its one layer; zero: the whole layer
	Shard    int    // its index within its position
	Position int
	Layers   []int // the position's global layer indices, for reports
	Replica  int
	NeedDX   bool // the first layer's input gradient is wanted (not on the first position)
	// Stage, under a chunked schedule, is 1 + the stage whose cores the
	// stage actor shares with the actors of that stage's other positions
	// (actors.Device); 0: it has its own.
	Stage int

	Precision nn.Precision // of the layers' products, the coordinator's arithmetic on every host
	// Optimizer is the update the stage applies to its parameters; nil
	// when it has none or uses another replica's (the owner updates).
	Optimizer *optim.Spec
	ClipValue float64
	ClipNorm  bool // the optimizer actor scales the gradients by the global norm's coefficient

	// Threads is the goroutines its kernels may use; 0: the host's
	// budget. TurnThreads, when not 0, is those of the weight gradients
	// added under a replica's turn and of the update, while the other
	// replicas at its place wait.
	Threads, TurnThreads int
}

// sharded reports whether the stage runs a shard of one layer.
func (s StageSpec) sharded() bool { return s.Cols != [2]int{} }

// Build makes the stage actor s describes in graph g, from layers
// already built for it (this process's plan builds them to measure their
// costs, and replicas share the owner's weights) or, with none, from
// s.Model.
func Build(s StageSpec, layers []nn.Layer, g *actors.Graph) (*actors.Stage, error) {
	if layers == nil {
		var err error
		if layers, err = nn.BuildShape(s.Model.Specs, s.Model.Sample, s.Model.Seed, s.Model.DType, s.Lo, s.Hi); err != nil {
			return nil, err
		}
		if s.sharded() {
			sh, ok := layers[0].(nn.Sharder)
			nu := 0
			if ok {
				nu, _ = sh.ShardUnits()
			}
			if len(layers) != 1 || s.Cols[0] < 0 || s.Cols[1] > nu || s.Cols[0] >= s.Cols[1] {
				return nil, fmt.Errorf("shard [%d, %d) of layer %d", s.Cols[0], s.Cols[1], s.Lo)
			}
			layers[0] = sh.Shard(s.Cols[0], s.Cols[1])
		}
	}
	up := actors.Updater{ClipValue: s.ClipValue, ClipNorm: s.ClipNorm, Threads: s.Threads, TurnThreads: s.TurnThreads, Precision: s.Precision}
	if s.Optimizer != nil && hasParams(layers) {
		spec := *s.Optimizer
		spec.Threads = max(s.Threads, s.TurnThreads)
		var err error
		if up.Optimizer, err = spec.New(); err != nil {
			return nil, err
		}
	}
	st := actors.NewStage(s.ID, s.Name, g, layers, s.Lo, s.Shard, s.NeedDX, up)
	if s.Stage > 0 {
		st.SetDevice(g.Device(s.Stage-1), s.Position)
	}
	return st, nil
}

// ToWire is s as a worker's session is asked to build it.
func (s StageSpec) ToWire(run *wire.Run) (*wire.Build, error) {
	model, err := json.Marshal(s.Model.Specs)
	if err != nil {
		return nil, err
	}
	b := &wire.Build{Run: run, Id: int64(s.ID), Name: s.Name, Model: model, Features: int64(tensor.SizeOf(s.Model.Sample)),
		Seed: s.Model.Seed, Lo: int64(s.Lo), Hi: int64(s.Hi), Shard: int64(s.Shard), NeedDx: s.NeedDX,
		ClipValue: s.ClipValue, ClipNorm: s.ClipNorm, Position: int64(s.Position), Layers: wire.Int64s(s.Layers),
		Sample: wire.Int64s(s.Model.Sample), Precision: s.Precision.String(), Replica: int64(s.Replica), Stage: int64(s.Stage)}
	if s.Optimizer != nil {
		if b.Optimizer, err = json.Marshal(s.Optimizer); err != nil {
			return nil, err
		}
	}
	if s.Precision.IsBF16() {
		b.Bf16Arithmetic = s.Precision.Arithmetic().String()
	}
	if s.Model.DType == tensor.Float64 {
		b.Dtype = wire.DType_FLOAT64
	}
	if s.sharded() {
		b.Sharded, b.ColLo, b.ColHi = true, int64(s.Cols[0]), int64(s.Cols[1])
	}
	return b, nil
}

// FromWire is the StageSpec a Build carries, its threads left to the
// worker's budget.
func FromWire(m *wire.Build) (StageSpec, error) {
	s := StageSpec{ID: int(m.Id), Name: m.Name, Lo: int(m.Lo), Hi: int(m.Hi), Shard: int(m.Shard), Position: int(m.Position),
		Layers: wire.Ints(m.Layers), Replica: int(m.Replica), NeedDX: m.NeedDx, ClipValue: m.ClipValue, ClipNorm: m.ClipNorm, Stage: int(m.Stage)}
	if err := json.Unmarshal(m.Model, &s.Model.Specs); err != nil {
		return s, fmt.Errorf("the model's specs: %v", err)
	}
	s.Model.Seed, s.Model.Sample, s.Model.DType = m.Seed, wire.Ints(m.Sample), tensor.Float32
	if len(s.Model.Sample) == 0 {
		s.Model.Sample = []int{int(m.Features)}
	}
	if m.Dtype == wire.DType_FLOAT64 {
		s.Model.DType = tensor.Float64
	}
	if m.Sharded {
		s.Cols = [2]int{int(m.ColLo), int(m.ColHi)}
		if s.Cols == [2]int{} {
			return s, fmt.Errorf("shard [0, 0) of layer %d", s.Lo)
		}
	}
	pr, err := nn.ParsePrecision(m.Precision)
	if err != nil {
		return s, err
	}
	if pr.IsBF16() {
		// the coordinator's arithmetic, whatever this CPU runs natively:
		// every host then gives the same bits
		ar, err := ops.ParseArithmetic(m.Bf16Arithmetic)
		if err != nil {
			return s, err
		}
		pr = nn.BF16With(ar)
	}
	s.Precision = pr
	if len(m.Optimizer) > 0 {
		s.Optimizer = new(optim.Spec)
		if err := json.Unmarshal(m.Optimizer, s.Optimizer); err != nil {
			return s, fmt.Errorf("the optimizer's spec: %v", err)
		}
	}
	return s, nil
}

// hasParams reports whether any of layers has parameters.
func hasParams(layers []nn.Layer) bool {
	for _, l := range layers {
		if len(l.Params()) > 0 {
			return true
		}
	}
	return false
}
