package ops_test

// Embedding and its backward: rows picked, finite differences, the order in
// which repeated ids add up, a batch added in parts, errors and allocations.

import (
	"math"
	"testing"

	"github.com/pipetrain/pipetrain/ops"
	"github.com/pipetrain/pipetrain/ops/opstest"
	"github.com/pipetrain/pipetrain/tensor"
)

func TestEmbedding(t *testing.T) {
	w := randN(newRNG(81), 1, 7, 5)
	ids := []int{3, 0, 6, 3, 3, 1}
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		wd := w.As(dt)
		out := ops.Embedding(wd, ids)
		if !out.HasShape(len(ids), 5) {
			t.Fatalf("%v: shape %v, want [%d 5]", dt, out.Shape(), len(ids))
		}
		for i, id := range ids {
			for j := range 5 {
				if got, want := out.At(i, j), wd.At(id, j); math.Float64bits(got) != math.Float64bits(want) {
					t.Errorf("%v: out[%d, %d] = %v, want weight[%d, %d] = %v", dt, i, j, got, id, j, want)
				}
			}
		}
		wantBits(t, "EmbeddingInto "+dt.String(), ops.EmbeddingInto(garbage(out), wd, ids), out)
		if e := ops.Embedding(wd, nil); !e.HasShape(0, 5) {
			t.Errorf("%v: no ids give shape %v, want [0 5]", dt, e.Shape())
		}
	}
}

func TestGradEmbedding(t *testing.T) {
	rng := newRNG(82)
	for _, ids := range [][]int{{2, 0, 2, 4}, {1}, {}, {0, 0, 0}} {
		w := randN(rng, 1, 5, 3)
		opstest.CheckGrad(t, gradName("Embedding", ids), in(w),
			func(x []*tt) *tt { return ops.Embedding(x[0], ids) },
			func(g *tt, x []*tt, _ *tt) []*tt { return in(ops.EmbeddingBackward(g, ids, x[0].Dim(0))) },
			gradTol)
	}
}

// TestEmbeddingBackwardOrder: repeated ids add their rows in the order of
// ids, onto what gw held for the Into form, as a plain loop does, bit for
// bit; and a batch added in two calls gives the bits of one.
func TestEmbeddingBackwardOrder(t *testing.T) {
	const vocab, d = 4, 9
	ids := []int{1, 3, 1, 1, 0, 3, 1, 2, 1, 3}
	rng := newRNG(83)
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		// Magnitudes 1e-8 to 1e8: the order of the additions shows.
		g := randN(rng, 1, len(ids), d)
		for i, v := range g.Data64() {
			g.Data64()[i] = v * math.Pow(10, float64(i%17-8))
		}
		g = g.As(dt)
		gw0 := randN(rng, 1, vocab, d).As(dt)
		loop := func(start *tt) *tt {
			w := start.Clone()
			for i, id := range ids {
				for j := range d {
					if dt == tensor.Float32 {
						w.Data32()[id*d+j] += g.Data32()[i*d+j]
					} else {
						w.Data64()[id*d+j] += g.Data64()[i*d+j]
					}
				}
			}
			return w
		}
		wantBits(t, "EmbeddingBackward "+dt.String(), ops.EmbeddingBackward(g, ids, vocab), loop(tensor.Zeros(dt, vocab, d)))
		got := gw0.Clone()
		ops.EmbeddingBackwardInto(got, g, ids)
		wantBits(t, "EmbeddingBackwardInto "+dt.String(), got, loop(gw0))

		got = gw0.Clone()
		cut := 4
		ops.EmbeddingBackwardInto(got, batchPart(g, 0, cut), ids[:cut])
		ops.EmbeddingBackwardInto(got, batchPart(g, cut, len(ids)), ids[cut:])
		wantBits(t, "EmbeddingBackwardInto in two parts "+dt.String(), got, loop(gw0))
	}
}

func TestEmbeddingErrors(t *testing.T) {
	z := func(shape ...int) *tt { return tensor.Zeros(tensor.Float64, shape...) }
	f32 := func(shape ...int) *tt { return tensor.Zeros(tensor.Float32, shape...) }
	w := z(65, 4)
	ids := []int{1, 2, 3, 70}

	// The exact text of the common mistake.
	func() {
		defer func() {
			err, ok := recover().(error)
			if want := "ops.Embedding: id 70 at 3 is outside [0, 65)"; !ok || err.Error() != want {
				t.Errorf("Embedding with id 70: panic %v, want the error %q", err, want)
			}
		}()
		ops.Embedding(w, ids)
	}()
	for _, c := range []struct {
		op       string
		mentions []string
		fn       func()
	}{
		{"Embedding", []string{"id -1 at 0", "[0, 65)"}, func() { ops.Embedding(w, []int{-1}) }},
		{"Embedding", []string{"id 65 at 1", "[0, 65)"}, func() { ops.Embedding(w, []int{0, 65}) }},
		{"Embedding", []string{"weight [65]", "2 axes"}, func() { ops.Embedding(z(65), []int{0}) }},
		{"EmbeddingInto", []string{"id 70 at 3"}, func() { ops.EmbeddingInto(z(4, 4), w, ids) }},
		{"EmbeddingInto", []string{"dst [2 4]", "[3 4]"}, func() { ops.EmbeddingInto(z(2, 4), w, ids[:3]) }},
		{"EmbeddingInto", []string{"float32", "float64"}, func() { ops.EmbeddingInto(f32(3, 4), w, ids[:3]) }},
		{"EmbeddingBackward", []string{"id 70 at 3", "[0, 65)"}, func() { ops.EmbeddingBackward(z(4, 4), ids, 65) }},
		{"EmbeddingBackward", []string{"grad [3 4]", "4 D"}, func() { ops.EmbeddingBackward(z(3, 4), ids, 71) }},
		{"EmbeddingBackward", []string{"vocab -1"}, func() { ops.EmbeddingBackward(z(0, 4), nil, -1) }},
		{"EmbeddingBackwardInto", []string{"id 70 at 3", "[0, 65)"}, func() { ops.EmbeddingBackwardInto(w, z(4, 4), ids) }},
		{"EmbeddingBackwardInto", []string{"gw [65 3]", "[V 4]"}, func() { ops.EmbeddingBackwardInto(z(65, 3), z(3, 4), ids[:3]) }},
		{"EmbeddingBackwardInto", []string{"grad [4 4]", "3 D"}, func() { ops.EmbeddingBackwardInto(w, z(4, 4), ids[:3]) }},
		{"EmbeddingBackwardInto", []string{"float32", "float64"}, func() { ops.EmbeddingBackwardInto(f32(65, 4), z(3, 4), ids[:3]) }},
	} {
		expectError(t, c.op, "ops."+c.op+": ", c.mentions, c.fn)
	}
}

// TestEmbeddingNothingWritten: an id out of range panics before any row
// is written.
func TestEmbeddingNothingWritten(t *testing.T) {
	w, dst, gw := randN(newRNG(84), 1, 3, 2), tensor.Zeros(tensor.Float64, 2, 2), tensor.Zeros(tensor.Float64, 3, 2)
	for _, fn := range []func(){
		func() { ops.EmbeddingInto(dst, w, []int{1, 3}) },
		func() { ops.EmbeddingBackwardInto(gw, w.Reshape(3, 2), []int{0, 1, 5}) },
	} {
		func() {
			defer func() { recover() }()
			fn()
		}()
	}
	for _, v := range append(dst.Float64s(), gw.Float64s()...) {
		if v != 0 {
			t.Fatalf("a call that panicked wrote %v", v)
		}
	}
}

func TestEmbeddingAllocations(t *testing.T) {
	rng := newRNG(85)
	w, g := randN(rng, 1, 65, 32).As(tensor.Float32), randN(rng, 1, 64, 32).As(tensor.Float32)
	out, gw := tensor.Zeros(tensor.Float32, 64, 32), tensor.Zeros(tensor.Float32, 65, 32)
	ids := randLabels(rng, 64, 65)
	if n := testing.AllocsPerRun(20, func() { ops.EmbeddingInto(out, w, ids) }); n != 0 {
		t.Errorf("EmbeddingInto: %v allocations per call, want 0", n)
	}
	if n := testing.AllocsPerRun(20, func() { ops.EmbeddingBackwardInto(gw, g, ids) }); n != 0 {
		t.Errorf("EmbeddingBackwardInto: %v allocations per call, want 0", n)
	}
}
