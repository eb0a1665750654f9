package actors

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/tensor"
)

// TestTurnParts: the turn is cut into parts of consecutive layers from the
// last, each of at least turnBucket gradient elements but the first layers',
// every parameter in exactly one part; one part when a layer's gradients
// are added as its backward goes (batch norm, here), when the replicas
// share memory, or without replicas.
func TestTurnParts(t *testing.T) {
	linear := func(in, out int) nn.Layer {
		l, err := nn.NewLinear(tensor.Float32, in, out, nn.TorchDefault, rand.New(rand.NewPCG(1, 2)))
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	bn, err := nn.Build([]nn.Spec{{Type: "batchnorm"}}, 576, 1, tensor.Float32, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	wide := func() []nn.Layer { // 8-576-576-576-4: the two middle layers past the bucket
		return []nn.Layer{linear(8, 576), nn.NewReLU(), linear(576, 576), nn.NewReLU(), linear(576, 576), nn.NewReLU(), linear(576, 4)}
	}
	two := []*actor.PID{{Id: "a"}, {Id: "b"}}
	for _, c := range []struct {
		name   string
		layers []nn.Layer
		copies []*actor.PID
		own    bool     // Wire.OwnCopies
		want   [][2]int // each part's layers, lo and hi
	}{
		{"wide, 2 replicas", wide(), two, true, [][2]int{{4, 6}, {2, 3}, {0, 1}}},
		{"wide, sharing memory", wide(), two, false, [][2]int{{0, 6}}},
		{"wide, no replicas", wide(), nil, true, nil},
		{"small", []nn.Layer{linear(8, 16), nn.NewReLU(), linear(16, 4)}, two, true, [][2]int{{0, 2}}},
		{"batch norm", append(wide()[:4], bn[0], linear(576, 576)), two, true, [][2]int{{0, 5}}},
	} {
		for _, replica := range []int{0, 1} {
			s := NewStage(0, "stage 0", NewGraph(false), c.layers, 0, 0, false, Updater{})
			s.w = Wire{Copies: c.copies, OwnCopies: c.own, Replica: replica}
			s.setReplica()
			var got [][2]int
			var params []int
			for _, p := range s.rep.parts {
				got = append(got, [2]int{p.lo, p.hi})
				params = append(params, p.params...)
				size := 0
				for _, i := range p.params {
					size += s.ps[i].Grad.Size()
				}
				if p.lo > 0 && size < turnBucket {
					t.Errorf("%s, replica %d: part of layers %d-%d has %d gradient elements, fewer than %d", c.name, replica, p.lo, p.hi, size, turnBucket)
				}
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("%s, replica %d: parts %v, want %v", c.name, replica, got, c.want)
			}
			slices.Sort(params)
			if c.copies != nil && (len(params) != len(s.ps) || len(params) > 0 && params[len(params)-1] != len(s.ps)-1) {
				t.Errorf("%s, replica %d: the parts hold parameters %v of %d", c.name, replica, params, len(s.ps))
			}
		}
	}
}
