package nn

import (
	"fmt"
	"math/rand/v2"

	"github.com/pipetrain/pipetrain/internal/gemm"
	"github.com/pipetrain/pipetrain/internal/par"
	"github.com/pipetrain/pipetrain/ops"
	"github.com/pipetrain/pipetrain/tensor"
)

// Linear computes y = x·Wᵀ + b for x of shape [N, In]. W has PyTorch's layout
// [Out, In], so checkpoints read the same in other tools. A layer without a
// bias (B and GB nil) computes y = x·Wᵀ.
type Linear struct {
	In, Out int
	W, B    *tensor.Tensor
	GW, GB  *tensor.Tensor
	x       cache[*tensor.Tensor]
	dy      cache[*tensor.Tensor] // between BackwardInput and BackwardParams
	packs   linearPacks
	pair    linearPair // backwardBoth's work, kept so that it allocates nothing
	fused   linearFused
}

// linearFused says which work of an activation next to the layer it does
// (Fuse).
type linearFused struct {
	reluOut bool // a ReLU follows: y = max(x·Wᵀ + b, 0)
	maskIn  bool // a ReLU precedes: dX is kept only where the input is above 0
	// a GELU follows: the product makes its output too, which the GELU
	// then returns (Activation.pending)
	geluOut *Activation
	// a GELU precedes: dX is multiplied by its derivative at its input,
	// which the GELU keeps
	geluIn *Activation
}

// linearPacks are a float32 layer's weights packed for the GEMM, Wᵀ for the
// forward and W for the input gradient, made once per weights version
// (Pass.Weights) and shared by the micro-batches of a step. A pass that
// shares its version with no other (Pass.Micros < 2) packs inside the GEMM
// as usual, in cache-sized blocks on every thread: packing the whole weight
// apart first costs it 17% of a step of the MNIST MLP.
type linearPacks struct {
	fwd, bwd       gemm.PackedB
	fwdFor, bwdFor packKey // the versions packed; Weights 0: none
}

// packKey is what a pack was made for: a weights version, and bf16 or fp32
// panels (PackBF16 or Pack).
type packKey struct {
	weights   uint64
	precision Precision
}

// use reports whether pass p should use the packed weights, and whether
// they must be packed first.
func use(p Pass, packed *packKey) (usePacked, pack bool) {
	if p.Weights == 0 || p.Micros < 2 {
		return false, false
	}
	key := packKey{p.Weights, p.Precision}
	if *packed == key {
		return true, false
	}
	*packed = key
	return true, true
}

// packW packs W (transposed or not) for p's precision.
func (l *Linear) packW(p Pass, pb *gemm.PackedB, trans bool, k, n int) {
	if p.Precision.IsBF16() {
		pb.PackBF16(p.Precision.Arithmetic(), trans, k, n, l.W.Data32(), l.In)
	} else {
		pb.Pack(trans, k, n, l.W.Data32(), l.In)
	}
}

// sgemmPacked is C = A·pb + beta·C in p's precision, followed by post.
func sgemmPacked(p Pass, post gemm.Post, m int, a []float32, lda int, pb *gemm.PackedB, beta float32, c []float32, ldc int) {
	cl := gemm.Call{Threads: gemm.Threads(p.Threads), Post: post}
	if p.Precision.IsBF16() {
		cl.SgemmPackedBF16(false, m, 1, a, lda, pb, beta, c, ldc)
	} else {
		cl.SgemmPacked(false, m, 1, a, lda, pb, beta, c, ldc)
	}
}

// outPost is the work the forward's product does on y as it completes: the
// bias, the residual r when not nil, and the ReLU after or the GELU's
// output h, when fused.
func (l *Linear) outPost(h, r *tensor.Tensor) gemm.Post {
	post := gemm.Post{Bias: data[float32](l.B), ReLU: l.fused.reluOut}
	if r != nil {
		post.Add, post.LDAdd = r.Data32(), l.Out
	}
	if h != nil {
		post.GELU, post.LDGELU = h.Data32(), l.Out
	}
	return post
}

// inPost is the work the input gradient's product does on dx as it
// completes: the mask of x, the input, when a ReLU precedes; the GELU's
// derivative at the GELU's input when a GELU does.
func (l *Linear) inPost(p Pass, x *tensor.Tensor) gemm.Post {
	switch {
	case l.fused.maskIn:
		return gemm.Post{Mask: x.Data32(), LDMask: l.In}
	case l.fused.geluIn != nil:
		return gemm.Post{GELUGrad: l.fused.geluIn.kept(p).Data32(), LDGELUGrad: l.In}
	}
	return gemm.Post{}
}

// NewLinear returns a layer with weights drawn by init from rng, and biases
// drawn after them for TorchDefault, zero for the other inits.
func NewLinear(dt tensor.DType, in, out int, init Init, rng *rand.Rand) (*Linear, error) {
	return newLinear(dt, in, out, init, rng, true)
}

// newLinear is NewLinear, without a bias unless bias.
func newLinear(dt tensor.DType, in, out int, init Init, rng *rand.Rand, bias bool) (*Linear, error) {
	if in <= 0 || out <= 0 {
		return nil, fmt.Errorf("nn: linear layer needs positive sizes, got in=%d out=%d", in, out)
	}
	l := &Linear{
		In: in, Out: out,
		W: tensor.Zeros(dt, out, in), GW: tensor.Zeros(dt, out, in),
		x: cache[*tensor.Tensor]{}, dy: cache[*tensor.Tensor]{},
	}
	if err := init.Fill(l.W, rng); err != nil {
		return nil, err
	}
	if bias {
		l.B, l.GB = tensor.Zeros(dt, out), tensor.Zeros(dt, out)
		init.FillBias(l.B, in, rng) // after W, from the same stream, as PyTorch draws them
	}
	return l, nil
}

// LinearFrom returns a layer holding copies of w [out, in] and b [out]; b
// nil gives a layer without a bias.
func LinearFrom(w, b *tensor.Tensor) *Linear {
	s := w.Shape()
	if len(s) != 2 || b != nil && (!tensor.EqualShapes(b.Shape(), s[:1]) || w.DType() != b.DType()) {
		panic(fmt.Errorf("nn.LinearFrom: weight %v %v and bias %v do not fit", w.DType(), s, b))
	}
	l := &Linear{
		In: s[1], Out: s[0], W: w.Clone(), GW: tensor.Zeros(w.DType(), s...),
		x: cache[*tensor.Tensor]{}, dy: cache[*tensor.Tensor]{},
	}
	if b != nil {
		l.B, l.GB = b.Clone(), tensor.Zeros(w.DType(), s[0])
	}
	return l
}

func (l *Linear) Kind() string { return "linear" }

func (l *Linear) Params() []Param {
	if l.B == nil {
		return []Param{{Name: "weight", Value: l.W, Grad: l.GW}}
	}
	return []Param{{Name: "weight", Value: l.W, Grad: l.GW}, {Name: "bias", Value: l.B, Grad: l.GB}}
}

// data is t's elements, none for a nil t (a missing bias).
func data[T float32 | float64](t *tensor.Tensor) []T {
	var v []T
	switch p := any(&v).(type) {
	case *[]float32:
		if t != nil {
			*p = t.Data32()
		}
	case *[]float64:
		if t != nil {
			*p = t.Data64()
		}
	}
	return v
}

func (l *Linear) ZeroGrad() { zeroGrads(l.Params()) }

func (l *Linear) InFlight() int { return len(l.x) }

func (l *Linear) check(x *tensor.Tensor) int {
	if x.Dims() != 2 || x.Dim(1) != l.In || x.DType() != l.W.DType() {
		panic(fmt.Errorf("nn.Linear: input %v %v does not fit weight %v %v", x.DType(), x.Shape(), l.W.DType(), l.W.Shape()))
	}
	return x.Dim(0)
}

func (l *Linear) Forward(p Pass, x *tensor.Tensor) *tensor.Tensor {
	n := l.check(x)
	y := p.Arena.Tensor(x.DType(), n, l.Out) // every element written below
	l.forwardTo(p, y, x, nil)
	return y
}

// forwardTo writes the layer's output for x into y, with the residual r
// added when not nil: y = r + (x·Wᵀ + b), the bits of the sum made apart,
// in one pass over y.
func (l *Linear) forwardTo(p Pass, y, x, r *tensor.Tensor) {
	n := l.check(x)
	if r != nil && (!r.HasShape(n, l.Out) || r.DType() != x.DType()) {
		panic(fmt.Errorf("nn.Linear: residual %v %v does not fit output [%d %d]", r.DType(), r.Shape(), n, l.Out))
	}
	var h *tensor.Tensor // the GELU's output, when fused
	if l.fused.geluOut != nil {
		h = p.Arena.Tensor(x.DType(), n, l.Out)
		l.fused.geluOut.pending = h
	}
	packed, pack := false, false
	if x.DType() == tensor.Float32 {
		packed, pack = use(p, &l.packs.fwdFor)
	}
	if packed {
		if pack {
			l.packW(p, &l.packs.fwd, true, l.In, l.Out)
		}
		sgemmPacked(p, l.outPost(h, r), n, x.Data32(), l.In, &l.packs.fwd, 0, y.Data32(), l.Out)
	} else if x.DType() == tensor.Float32 {
		sgemmFor(p.Precision, false)(gemm.Call{Threads: gemm.Threads(p.Threads), Post: l.outPost(h, r)}, false, true, n, l.Out, l.In, 1, x.Data32(), l.In, l.W.Data32(), l.In, 0, y.Data32(), l.Out)
	} else {
		linearForward(gemm.Call{}, y.Data64(), x.Data64(), l.W.Data64(), data[float64](l.B), n, l.In, l.Out, dgemm)
		if r != nil {
			for i, v := range r.Data64() {
				y.Data64()[i] = v + y.Data64()[i]
			}
		}
		if l.fused.reluOut {
			ops.ReLUInto(y, y, p.Threads)
		}
		if h != nil {
			ops.GELUInto(h, y, p.Threads)
		}
	}
	l.x.put(p, x)
}

func (l *Linear) Backward(p Pass, dy *tensor.Tensor, needDX bool) *tensor.Tensor {
	if needDX && l.both(p, dy) {
		return l.backwardBoth(p, dy)
	}
	var dx *tensor.Tensor
	if needDX {
		dx = l.BackwardInput(p, dy)
	} else {
		l.KeepGrad(p, dy)
	}
	l.BackwardParams(p)
	return dx
}

// both reports whether p's backward runs its two products at once, each on
// half of p's threads: they have the same work (n·In·Out multiply-adds), so
// two halves finish together, and neither pays for a split of its own.
func (l *Linear) both(p Pass, dy *tensor.Tensor) bool {
	t := par.Budget(p.Threads)
	return t >= 2 && t%2 == 0 && dy.DType() == tensor.Float32 &&
		int64(dy.Dim(0))*int64(l.In)*int64(l.Out) >= bothMin
}

// bothMin is the least n·In·Out whose backward runs its products at once.
// From a quarter of gemm's parallelMin, where each product alone still
// runs on one goroutine, the two side by side finish sooner than one after
// the other (the MNIST MLP's 256→10 layer, 128×256×10: 23.6 against
// 24.7 µs on two threads, a harness timing each layer, medians of four runs
// of 1,000 steps).
const bothMin = 1 << 18

// backwardBoth is Backward with the input and weight gradients computed at
// once, each with half of p's threads; the bits are the same.
func (l *Linear) backwardBoth(p Pass, dy *tensor.Tensor) *tensor.Tensor {
	x := l.input(p, dy)
	l.x.take("Linear", p)
	dx := p.Arena.Tensor(x.DType(), x.Dim(0), l.In) // beta = 0: written, not read
	half := p
	half.Threads = par.Budget(p.Threads) / 2
	l.pair = linearPair{l: l, p: half, x: x, dy: dy, dx: dx}
	l.pair.packed = l.inputPacks(p)
	par.Do(2*half.Threads, 2, &l.pair)
	l.pair = linearPair{}
	return dx
}

// linearPair is backwardBoth's two products as par.Work.
type linearPair struct {
	l         *Linear
	p         Pass
	x, dy, dx *tensor.Tensor
	packed    bool
}

func (w *linearPair) Part(q int) {
	if q == 0 {
		w.l.inputGrad(w.p, w.packed, w.x, w.dy, w.dx)
		return
	}
	w.l.paramGrads(w.p, w.x, w.dy)
}

// input returns the input p's forward cached, once dy is checked against
// it; a missing one panics naming the micro-batch.
func (l *Linear) input(p Pass, dy *tensor.Tensor) *tensor.Tensor {
	x, ok := l.x[p.Micro]
	if !ok {
		l.x.take("Linear", p) // panics
	}
	l.checkDY(x, dy)
	return x
}

func (l *Linear) checkDY(x, dy *tensor.Tensor) {
	if x == nil {
		return // take reports the missing forward
	}
	n := x.Dim(0)
	if !dy.HasShape(n, l.Out) || dy.DType() != x.DType() {
		panic(fmt.Errorf("nn.Linear: dy %v %v does not fit output [%d %d]", dy.DType(), dy.Shape(), n, l.Out))
	}
}

// BackwardInput returns dX = dY·W and keeps dY for BackwardParams.
func (l *Linear) BackwardInput(p Pass, dy *tensor.Tensor) *tensor.Tensor {
	x := l.input(p, dy)
	dx := p.Arena.Tensor(x.DType(), x.Dim(0), l.In) // beta = 0: written, not read
	l.inputGrad(p, l.inputPacks(p), x, dy, dx)
	l.dy.put(p, dy)
	return dx
}

// inputPacks reports whether p's input gradient uses W packed in advance,
// packing it first when this weights version has not been.
func (l *Linear) inputPacks(p Pass) bool {
	if l.W.DType() != tensor.Float32 {
		return false
	}
	packed, pack := use(p, &l.packs.bwdFor)
	if pack {
		l.packW(p, &l.packs.bwd, false, l.Out, l.In)
	}
	return packed
}

// inputGrad writes dX = dY·W into dx, masked by x > 0 when a ReLU precedes,
// times GELU's derivative when a GELU does (Fuse).
func (l *Linear) inputGrad(p Pass, packed bool, x, dy, dx *tensor.Tensor) {
	n := dy.Dim(0)
	switch {
	case packed:
		sgemmPacked(p, l.inPost(p, x), n, dy.Data32(), l.Out, &l.packs.bwd, 0, dx.Data32(), l.In)
	case dy.DType() == tensor.Float32:
		sgemmFor(p.Precision, false)(gemm.Call{Threads: gemm.Threads(p.Threads), Post: l.inPost(p, x)}, false, false, n, l.In, l.Out, 1, dy.Data32(), l.Out, l.W.Data32(), l.In, 0, dx.Data32(), l.In)
	default:
		gemm.Dgemm(false, false, n, l.In, l.Out, 1, dy.Data64(), l.Out, l.W.Data64(), l.In, 0, dx.Data64(), l.In)
		if l.fused.maskIn {
			ops.ReLUBackwardInto(dx, dx, x, p.Threads)
		}
		if g := l.fused.geluIn; g != nil {
			ops.GELUBackwardInto(dx, dx, g.kept(p), p.Threads)
		}
	}
}

// BackwardParams adds dW += dYᵀ·X and db += Σ dY for the micro-batch whose
// BackwardInput ran, and frees its cache.
func (l *Linear) BackwardParams(p Pass) {
	l.paramGrads(p, l.x.take("Linear", p), l.dy.take("Linear", p))
}

// paramGrads adds dW += dYᵀ·X and db += Σ dY over x's rows.
func (l *Linear) paramGrads(p Pass, x, dy *tensor.Tensor) {
	n := x.Dim(0)
	if x.DType() == tensor.Float32 {
		linearParamGrads(p.Threads, dy.Data32(), x.Data32(), l.GW.Data32(), data[float32](l.GB), n, l.In, l.Out, sgemmFor(p.Precision, true))
	} else {
		linearParamGrads(p.Threads, dy.Data64(), x.Data64(), l.GW.Data64(), data[float64](l.GB), n, l.In, l.Out, dgemmChunked)
	}
}

// gemmFunc is a GEMM on a gemm.Call's threads, followed by its Post:
// gemm.Call's methods.
type gemmFunc[T float32 | float64] func(cl gemm.Call, tA, tB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int)

// bf16Gemms holds gemm.Call.SgemmBF16 (index 0) and SgemmBF16Chunked
// (1) for each arithmetic, as gemmFuncs made once.
var bf16Gemms = func() (f [2][2]gemmFunc[float32]) {
	for _, ar := range []ops.Arithmetic{ops.AMX, ops.Pairs} {
		f[ar][0] = func(cl gemm.Call, tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
			cl.SgemmBF16(ar, tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		}
		f[ar][1] = func(cl gemm.Call, tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
			cl.SgemmBF16Chunked(ar, tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		}
	}
	return f
}()

// sgemmFor returns the float32 GEMM of precision pr, summing k in chunks
// (gemm.KChunk) when chunked.
func sgemmFor(pr Precision, chunked bool) gemmFunc[float32] {
	switch {
	case pr.IsBF16() && chunked:
		return bf16Gemms[pr.Arithmetic()][1]
	case pr.IsBF16():
		return bf16Gemms[pr.Arithmetic()][0]
	case chunked:
		return gemm.Call.SgemmChunked
	}
	return gemm.Call.Sgemm
}

// dgemm is gonum's BLAS, which has its own threads.
func dgemm(_ gemm.Call, tA, tB bool, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	gemm.Dgemm(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// KeepGrad keeps dy for BackwardParams, without the input gradient.
func (l *Linear) KeepGrad(p Pass, dy *tensor.Tensor) {
	l.input(p, dy)
	l.dy.put(p, dy)
}

// BackwardParamsAll runs BackwardParams for each pass, in order, as one
// weight-gradient GEMM over each run of micro-batches whose inputs and output
// gradients lie next to each other in memory (as arenas sharing StepRows lend
// them): the rows are then one matrix, and the chunked GEMM gives the bits of
// one call per micro-batch, while the weight gradient is read and written
// once instead of once per micro-batch.
func (l *Linear) BackwardParamsAll(ps []Pass) {
	for i := 0; i < len(ps); {
		x := l.x.take("Linear", ps[i])
		dy := l.dy.take("Linear", ps[i])
		n, j := x.Dim(0), i+1
		if x.DType() == tensor.Float32 {
			xs, dys := x.Data32(), dy.Data32()
			for ; j < len(ps); j++ {
				x2, ok1 := l.x[ps[j].Micro]
				dy2, ok2 := l.dy[ps[j].Micro]
				if !ok1 || !ok2 || x2.DType() != tensor.Float32 {
					break
				}
				nx, okx := adjoin(xs, x2.Data32())
				ndy, oky := adjoin(dys, dy2.Data32())
				if !okx || !oky {
					break
				}
				xs, dys, n = nx, ndy, n+x2.Dim(0)
				l.x.take("Linear", ps[j])
				l.dy.take("Linear", ps[j])
			}
			linearParamGrads(ps[i].Threads, dys, xs, l.GW.Data32(), data[float32](l.GB), n, l.In, l.Out, sgemmFor(ps[i].Precision, true))
		} else {
			linearParamGrads(ps[i].Threads, dy.Data64(), x.Data64(), l.GW.Data64(), data[float64](l.GB), n, l.In, l.Out, dgemmChunked)
		}
		i = j
	}
}

// adjoin returns a and b as one slice when b starts where a ends in memory.
func adjoin[T any](a, b []T) ([]T, bool) {
	full := a[:cap(a)]
	if len(b) == 0 || len(full) < len(a)+len(b) || &full[len(a)] != &b[0] {
		return nil, false
	}
	return full[:len(a)+len(b)], true
}

func dgemmChunked(_ gemm.Call, tA, tB bool, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	gemm.DgemmChunked(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

func linearForward[T float32 | float64](cl gemm.Call, y, x, w, b []T, n, in, out int, mm gemmFunc[T]) {
	mm(cl, false, true, n, out, in, 1, x, in, w, in, biasRows(y, b, n), y, out)
}

// biasRows copies the bias b into each of y's n rows and returns the
// GEMM's beta that adds the product to them: 1, or 0 (y not read) without
// a bias.
func biasRows[T float32 | float64](y, b []T, n int) T {
	if b == nil {
		return 0
	}
	out := len(b)
	for i := range n {
		copy(y[i*out:(i+1)*out], b)
	}
	return 1
}

// linearParamGrads adds dW += dYᵀ·X and db += Σ dY over the n rows. Neither
// depends on how a mini-batch's rows are cut into micro-batches at multiples
// of ChunkRows: mm sums the rows in chunks of ChunkRows added into dW in order
// (gemm.SgemmChunked), and db takes one row at a time, in row order.
func linearParamGrads[T float32 | float64](threads int, dy, x, gw, gb []T, n, in, out int, mm gemmFunc[T]) {
	cl := gemm.Call{Threads: gemm.Threads(threads)}
	gb32, f32 := any(gb).([]float32)
	if f32 {
		// db as the product's packing reads dY's rows: the bits of
		// vec.Add of each row in turn, in one pass over dY, not two
		cl.Post.RowSumsA = gb32
	}
	mm(cl, true, false, out, in, n, 1, dy, out, x, in, 1, gw, in)
	if gb == nil || f32 {
		return
	}
	for i := range n {
		row := dy[i*out : (i+1)*out]
		for j, v := range row {
			gb[j] += v
		}
	}
}

func (l *Linear) Reset() {
	clear(l.x)
	clear(l.dy)
}
