package dataset

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/pipetrain/pipetrain/tensor"
)

// Loader cuts a Set into mini-batches, in an order that depends only on the seed and the
// epoch: with shuffling on, epoch e visits the rows in the order
//
//	rand.New(rand.NewPCG(seed, uint64(e))).Perm(set.Len())
//
// and without it in row order. Batch i of epoch e holds rows order[i*b : (i+1)*b] (the
// last batch of an epoch may be smaller), so a run resumed at (epoch, batch) needs no
// saved random state. A Loader is safe for concurrent use; it keeps the order of the
// most recent epoch asked for.
type Loader struct {
	set       *Set
	batchSize int
	shuffle   bool
	seed      uint64

	mu    sync.Mutex
	epoch int
	order []int // order of epoch; never modified once built
}

// NewLoader returns a Loader over set. It panics if batchSize < 1 or set.X is not a
// float32 [N, set.Features] tensor.
func NewLoader(set *Set, batchSize int, shuffle bool, seed uint64) *Loader {
	if batchSize < 1 {
		panic(fmt.Errorf("dataset.NewLoader: batch size %d is not positive", batchSize))
	}
	if set.X == nil || set.X.DType() != tensor.Float32 || set.X.Dims() != 2 || set.X.Dim(1) != set.Features {
		panic(fmt.Errorf("dataset.NewLoader: set %s: X must be float32 [N, %d]", set.Name, set.Features))
	}
	return &Loader{set: set, batchSize: batchSize, shuffle: shuffle, seed: seed, epoch: -1}
}

// Set returns the set the loader reads.
func (l *Loader) Set() *Set { return l.set }

// BatchSize returns the number of rows in a full batch.
func (l *Loader) BatchSize() int { return l.batchSize }

// BatchesPerEpoch returns the number of batches in an epoch, counting a last partial
// batch.
func (l *Loader) BatchesPerEpoch() int {
	return (l.set.Len() + l.batchSize - 1) / l.batchSize
}

// BatchLen returns the number of rows in batch i (each epoch has the same batch sizes).
func (l *Loader) BatchLen(i int) int {
	if i < 0 || i >= l.BatchesPerEpoch() {
		panic(fmt.Errorf("dataset.Loader: batch %d out of range [0, %d)", i, l.BatchesPerEpoch()))
	}
	return min(l.batchSize, l.set.Len()-i*l.batchSize)
}

// Order returns a copy of the row order of epoch e.
func (l *Loader) Order(epoch int) []int {
	return slices.Clone(l.order0(epoch))
}

func (l *Loader) order0(epoch int) []int {
	if epoch < 0 {
		panic(fmt.Errorf("dataset.Loader: epoch %d is negative", epoch))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.order == nil || (l.shuffle && l.epoch != epoch) {
		if l.shuffle {
			l.order = rand.New(rand.NewPCG(l.seed, uint64(epoch))).Perm(l.set.Len())
		} else {
			l.order = identity(l.set.Len())
		}
		l.epoch = epoch
	}
	return l.order
}

// Batch returns batch i of epoch e as freshly allocated values the caller owns: x is
// float32 [rows, Features], labels is nil if the set has no labels, and targets [rows, 1]
// is nil if the set has no targets. It panics if i is out of range or epoch is negative.
func (l *Loader) Batch(epoch, i int) (x *tensor.Tensor, labels []int, targets *tensor.Tensor) {
	rows := l.BatchLen(i)
	xb := make([]float32, rows*l.set.Features)
	var lb []int
	if l.set.Labels != nil {
		lb = make([]int, rows)
	}
	var tb []float32
	if l.set.Targets != nil {
		tb = make([]float32, rows)
	}
	l.BatchInto(epoch, i, xb, lb, tb)
	x = tensor.Wrap32(xb, rows, l.set.Features)
	if tb != nil {
		targets = tensor.Wrap32(tb, rows, 1)
	}
	return x, lb, targets
}

// BatchInto is Batch without allocation: it writes batch i of epoch e into the first
// rows of the caller's buffers and returns the number of rows written. x must hold
// rows*Features values; labels (if the set has labels) and targets (if it has targets)
// must hold rows values, or be nil to skip them. It panics if a buffer is too short.
func (l *Loader) BatchInto(epoch, i int, x []float32, labels []int, targets []float32) (rows int) {
	rows = l.BatchLen(i)
	l.RowsInto(epoch, i, 0, rows, x, labels, targets)
	return rows
}

// RowsInto is BatchInto for rows [lo, hi) of the batch alone, written where BatchInto
// writes them: row j of the batch at x[j*Features:], labels[j] and targets[j]. The
// buffers need only reach row hi. A batch gathered in parts, by one goroutine or
// several, is the same as one gathered whole. It panics if the range is not within
// the batch or a buffer is too short.
func (l *Loader) RowsInto(epoch, i, lo, hi int, x []float32, labels []int, targets []float32) {
	rows := l.BatchLen(i)
	if lo < 0 || lo > hi || hi > rows {
		panic(fmt.Errorf("dataset.Loader: rows [%d, %d) are not within batch %d's %d rows", lo, hi, i, rows))
	}
	f := l.set.Features
	if len(x) < hi*f ||
		labels != nil && l.set.Labels != nil && len(labels) < hi ||
		targets != nil && l.set.Targets != nil && len(targets) < hi {
		panic(fmt.Errorf("dataset.Loader: buffers of %d, %d and %d values are too short for %d rows of %d features",
			len(x), len(labels), len(targets), hi, f))
	}
	idx := l.order0(epoch)[i*l.batchSize+lo : i*l.batchSize+hi]
	src := l.set.X.Data32()
	for j, r := range idx {
		j += lo
		copy(x[j*f:(j+1)*f], src[r*f:(r+1)*f])
	}
	if labels != nil && l.set.Labels != nil {
		for j, r := range idx {
			labels[lo+j] = l.set.Labels[r]
		}
	}
	if targets != nil && l.set.Targets != nil {
		t := l.set.Targets.Data32()
		for j, r := range idx {
			targets[lo+j] = t[r]
		}
	}
}
