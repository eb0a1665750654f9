package pipeline

import (
	"encoding/json"
	"testing"

	"github.com/pipetrain/pipetrain/actors"
	"github.com/pipetrain/pipetrain/actors/wire"
	"github.com/pipetrain/pipetrain/nn"
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
		m := &wire.Build{Name: "stage 0", Model: model, Features: 3, Seed: 1, Lo: 0, Hi: 1, Optimizer: []byte(`{"type":"sgd"}`),
			Precision: c.precision, Bf16Arithmetic: c.arithmetic, Replica: 1}
		st, _, err := buildStage(m, 1, actors.NewGraph(false))
		if refused := err != nil; refused != c.refused {
			t.Errorf("precision %s, coordinator's arithmetic %q: error %v, want refused %v", c.precision, c.arithmetic, err, c.refused)
		}
		if err == nil && st.Precision() != c.want {
			t.Errorf("precision %s, coordinator's arithmetic %q: stage precision %v (%v), want %v (%v)",
				c.precision, c.arithmetic, st.Precision(), st.Precision().Arithmetic(), c.want, c.want.Arithmetic())
		}
	}
}
