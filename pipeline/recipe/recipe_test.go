package recipe

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/pipetrain/pipetrain/actors"
	"github.com/pipetrain/pipetrain/actors/wire"
	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/optim"
	"github.com/pipetrain/pipetrain/tensor"
)

// TestBuildStageBF16Arithmetic: a worker builds a bf16 stage in the
// coordinator's arithmetic, whichever its CPU runs natively, so that every
// host gives the same bits; bf16 without a known arithmetic is refused,
// and fp32 ignores it.
func TestBuildStageBF16Arithmetic(t *testing.T) {
	model, err := json.Marshal([]nn.Spec{{Type: "linear", Units: 4, Init: nn.XavierUniform}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		precision, arithmetic string
		want                  nn.Precision
		refused               bool
	}{
		{"bf16", "amx", nn.BF16, false}, {"bf16", "avx512bf16", nn.BF16Pairs, false},
		{"bf16", "", 0, true}, {"bf16", "amx-fma", 0, true}, {"fp32", "avx512bf16", nn.FP32, false},
	} {
		m := &wire.Build{Name: "stage 0", Model: model, Features: 3, Seed: 1, Lo: 0, Hi: 1, Optimizer: []byte(`{"Kind":"sgd"}`),
			Precision: c.precision, Bf16Arithmetic: c.arithmetic, Replica: 1}
		spec, err := FromWire(m)
		var st *actors.Stage
		if err == nil {
			st, err = Build(spec, nil, actors.NewGraph(false))
		}
		if refused := err != nil; refused != c.refused {
			t.Errorf("precision %s, coordinator's arithmetic %q: error %v, want refused %v", c.precision, c.arithmetic, err, c.refused)
		}
		if err == nil && st.Precision() != c.want {
			t.Errorf("precision %s, coordinator's arithmetic %q: stage precision %v (%v), want %v (%v)",
				c.precision, c.arithmetic, st.Precision(), st.Precision().Arithmetic(), c.want, c.want.Arithmetic())
		}
	}
}

// TestStageSpecWire: a StageSpec crosses to a worker whole, every field as
// the plan made it but the threads, which the worker's budget sets.
func TestStageSpecWire(t *testing.T) {
	specs := []nn.Spec{{Type: "linear", Units: 6, Init: nn.XavierUniform}, {Type: "relu"}, {Type: "linear", Units: 4, Init: nn.XavierUniform}}
	opt := optim.Spec{Kind: "adamw", Betas: [2]float64{0.9, 0.95}, Eps: 1e-8, WeightDecay: 0.1}
	for _, s := range []StageSpec{
		{ID: 3, Name: "stage 1", Model: Model{Specs: specs, Sample: []int{5}, Seed: 7, DType: tensor.Float32}, Lo: 1, Hi: 3,
			Position: 1, Layers: []int{1, 2}, NeedDX: true, Precision: nn.BF16Pairs, Optimizer: &opt, ClipValue: 0.5, ClipNorm: true},
		{ID: 4, Name: "replica 1 stage 0 shard 1", Model: Model{Specs: specs, Sample: []int{5}, Seed: 7, DType: tensor.Float64}, Lo: 0, Hi: 1,
			Cols: [2]int{3, 6}, Shard: 1, Layers: []int{0}, Replica: 1, Precision: nn.FP32},
	} {
		b, err := s.ToWire(nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := FromWire(b)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, s) {
			t.Errorf("%s: through the wire\n%+v\nwant\n%+v", s.Name, got, s)
		}
		s.Threads = 1
		if _, err := Build(got, nil, actors.NewGraph(false)); err != nil {
			t.Errorf("%s: %v", s.Name, err)
		}
	}
}
