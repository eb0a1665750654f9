package pipeline

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pipetrain/pipetrain/actors"
	"github.com/pipetrain/pipetrain/actors/wire"
	"github.com/pipetrain/pipetrain/nn"
)

// TestBuildStageBF16Arithmetic: a worker builds a bf16 stage only when its
// CPU's bf16 arithmetic is the coordinator's, since the two kinds give
// different bits; fp32, and a coordinator that names none, build anywhere.
func TestBuildStageBF16Arithmetic(t *testing.T) {
	model, err := json.Marshal([]nn.Spec{{Type: "linear", Units: 4, Init: nn.XavierUniform}})
	if err != nil {
		t.Fatal(err)
	}
	here := nn.BF16Arithmetic()
	other := map[string]string{"amx": "avx512bf16", "avx512bf16": "amx"}[here]
	for _, c := range []struct {
		precision, arithmetic string
		refused               bool
	}{
		{"bf16", here, false}, {"bf16", "", false}, {"bf16", other, true}, {"fp32", other, false},
	} {
		m := &wire.Build{Name: "stage 0", Model: model, Features: 3, Seed: 1, Lo: 0, Hi: 1, Optimizer: []byte(`{"type":"sgd"}`),
			Precision: c.precision, Bf16Arithmetic: c.arithmetic, Replica: 1}
		_, _, err := buildStage(m, 1, actors.NewGraph(false))
		if refused := err != nil; refused != c.refused {
			t.Errorf("precision %s, coordinator's arithmetic %q (here %s): error %v, want refused %v", c.precision, c.arithmetic, here, err, c.refused)
		}
		if c.refused && (err == nil || !strings.Contains(err.Error(), other) || !strings.Contains(err.Error(), here)) {
			t.Errorf("the refusal does not name both kinds: %v", err)
		}
	}
}
