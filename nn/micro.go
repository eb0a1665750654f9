package nn

import (
	"fmt"

	"github.com/pipetrain/pipetrain/internal/gemm"
	"github.com/pipetrain/pipetrain/tensor"
)

// Span is a half-open range of rows [Lo, Hi).
type Span struct{ Lo, Hi int }

// ChunkRows is the granule of a mini-batch: micro-batch boundaries fall only
// at multiples of ChunkRows from its first row, the row sums of the weight
// gradients run in chunks of it (gemm.SgemmChunked), and so do the other
// layers' sums over rows. That is what makes a step's results independent of
// the number of micro-batches.
const ChunkRows = gemm.KChunk

// SplitRows splits n rows into min(m, ceil(n/ChunkRows)) micro-batches, in
// order, each a whole number of ChunkRows-row chunks (the last chunk of the
// last micro-batch may be short): the chunks are shared out as evenly as
// possible, earlier micro-batches taking one more where they do not divide.
// Every trainer splits with it, so the pipeline and the sequential trainer
// see the same micro-batches.
func SplitRows(n, m int) []Span { return SplitRowsBy(n, m, ChunkRows) }

// SplitRowsBy is SplitRows in chunks of granule rows (Granule).
func SplitRowsBy(n, m, granule int) []Span {
	if m <= 0 || granule <= 0 {
		panic(fmt.Errorf("nn.SplitRows: %d micro-batches of %d-row chunks", m, granule))
	}
	spans := SplitEven((n+granule-1)/granule, m) // in chunks
	for i := range spans {
		spans[i] = Span{spans[i].Lo * granule, min(n, spans[i].Hi*granule)}
	}
	return spans
}

// Granule returns the rows (samples) of a chunk of a mini-batch for a
// model whose samples each give tokens rows to its kernels (a sequence
// model's tokens; 1 otherwise): the fewest samples whose rows are a whole
// number of ChunkRows, so that the kernels' sums over rows, cut in chunks of
// ChunkRows, fall the same however the mini-batch is cut.
func Granule(tokens int) int {
	a, b := max(1, tokens), ChunkRows
	for b != 0 {
		a, b = b, a%b
	}
	return ChunkRows / a
}

// SplitEven splits [0, n) into min(m, n) ranges of near-equal size, the first
// n%m one larger, in order: the column blocks of a sharded linear layer.
func SplitEven(n, m int) []Span {
	if m <= 0 {
		panic(fmt.Errorf("nn.SplitEven: %d parts", m))
	}
	m = min(m, n)
	spans := make([]Span, m)
	lo := 0
	for i := range m {
		size := n / m
		if i < n%m {
			size++
		}
		spans[i] = Span{lo, lo + size}
		lo += size
	}
	return spans
}

// Rows returns rows [lo, hi) of x (first axis) without copying: x itself when
// that is every row, else a tensor sharing x's storage. Tensors passed between
// layers are read-only, so sharing x is safe.
func Rows(x *tensor.Tensor, lo, hi int) *tensor.Tensor {
	if x.Dims() == 0 || lo < 0 || hi > x.Dim(0) || lo > hi {
		panic(fmt.Errorf("nn.Rows: rows [%d, %d) of shape %v", lo, hi, x.Shape()))
	}
	if lo == 0 && hi == x.Dim(0) {
		return x
	}
	s := x.Shape()
	row := x.Size() / max(1, s[0])
	s[0] = hi - lo
	if x.DType() == tensor.Float32 {
		return tensor.Wrap32(x.Data32()[lo*row:hi*row], s...)
	}
	return tensor.Wrap64(x.Data64()[lo*row:hi*row], s...)
}

// SliceRows returns a copy of rows [lo, hi) of x (first axis).
func SliceRows(x *tensor.Tensor, lo, hi int) *tensor.Tensor {
	s := x.Shape()
	if len(s) == 0 || lo < 0 || hi > s[0] || lo > hi {
		panic(fmt.Errorf("nn.SliceRows: rows [%d, %d) of shape %v", lo, hi, s))
	}
	row := 1
	for _, d := range s[1:] {
		row *= d
	}
	s[0] = hi - lo
	out := tensor.Zeros(x.DType(), s...)
	if x.DType() == tensor.Float32 {
		copy(out.Data32(), x.Data32()[lo*row:hi*row])
	} else {
		copy(out.Data64(), x.Data64()[lo*row:hi*row])
	}
	return out
}
