package dataset

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pipetrain/pipetrain/tensor"
)

// Set is an in-memory data set: one row per example.
//
// X is a float32 tensor of shape [N, Features]. Labels holds the class index of each
// row in [0, len(Classes)), or is nil for a set without classes. Targets, when not nil,
// is a float32 tensor of shape [N, 1] holding a numeric target per row (for a regression
// loss such as mse); a CSV file whose label column is numeric has both Labels and
// Targets.
//
// The loaders return sets that own all their storage; Subset, Split and Standardize
// return new sets that share nothing with their input.
type Set struct {
	Name     string
	X        *tensor.Tensor // [N, Features] float32
	Labels   []int          // class index per row; nil for pure regression
	Targets  *tensor.Tensor // [N, 1] float32 numeric target, or nil
	Classes  []string       // class names, index = label
	Features int            // X.Dim(1)
	// Shape is a sample's shape, [C, H, W] for images (a row of X holds it
	// in row-major order); nil for plain features, which are [Features].
	Shape []int
}

// SampleShape returns a sample's shape: Shape, or [Features].
func (s *Set) SampleShape() []int {
	if s.Shape != nil {
		return slices.Clone(s.Shape)
	}
	return []int{s.Features}
}

// Len returns the number of rows.
func (s *Set) Len() int {
	if s == nil || s.X == nil {
		return 0
	}
	return s.X.Dim(0)
}

// Subset returns a new set holding copies of the rows idx, in that order. Indices may
// repeat. It panics if an index is out of range.
func (s *Set) Subset(idx []int) *Set {
	n, f := s.Len(), s.Features
	src := s.X.Data32()
	x := make([]float32, len(idx)*f)
	var labels []int
	if s.Labels != nil {
		labels = make([]int, len(idx))
	}
	var tsrc, tdst []float32
	if s.Targets != nil {
		tsrc = s.Targets.Data32()
		tdst = make([]float32, len(idx))
	}
	for j, i := range idx {
		if i < 0 || i >= n {
			panic(fmt.Errorf("dataset.Subset: index %d out of range for %d rows", i, n))
		}
		copy(x[j*f:(j+1)*f], src[i*f:(i+1)*f])
		if labels != nil {
			labels[j] = s.Labels[i]
		}
		if tdst != nil {
			tdst[j] = tsrc[i]
		}
	}
	out := &Set{
		Name:     s.Name,
		X:        tensor.Wrap32(x, len(idx), f),
		Labels:   labels,
		Classes:  slices.Clone(s.Classes),
		Features: f,
		Shape:    slices.Clone(s.Shape),
	}
	if tdst != nil {
		out.Targets = tensor.Wrap32(tdst, len(idx), 1)
	}
	return out
}

// Random streams: every random source in the package is rand.NewPCG(seed, stream), and
// each use has its own stream so that, for one seed, the split, the synthetic data and
// the epoch orders are independent. Epoch e uses stream e (see Loader).
const (
	splitStream   = 0x5350_4c49_5400_0000 // "SPLIT"
	spiralsStream = 0x5350_4952_414c_0000 // "SPIRAL"
)

// Split divides s into a training and a test set, for data sets without a test split of
// their own. round(testFraction*N) rows, chosen by a permutation seeded by seed, go to
// test and the rest to train; each side keeps the rows in their original relative order.
// The same (s, testFraction, seed) always gives the same split.
//
// testFraction must be in [0, 1). A fraction of 0 gives an empty test set; otherwise
// it is an error if either side would be empty.
func Split(s *Set, testFraction float64, seed uint64) (train, test *Set, err error) {
	if !(testFraction >= 0 && testFraction < 1) { // also rejects NaN
		return nil, nil, fmt.Errorf("dataset: test fraction %v is outside [0, 1)", testFraction)
	}
	n := s.Len()
	if n == 0 {
		return nil, nil, fmt.Errorf("dataset: %s: cannot split an empty set", s.Name)
	}
	nTest := int(math.Round(testFraction * float64(n)))
	switch {
	case testFraction > 0 && nTest == 0:
		return nil, nil, fmt.Errorf("dataset: %s: test fraction %v of %d rows leaves the test set empty", s.Name, testFraction, n)
	case nTest == n:
		return nil, nil, fmt.Errorf("dataset: %s: test fraction %v of %d rows leaves the training set empty", s.Name, testFraction, n)
	}
	perm := rand.New(rand.NewPCG(seed, splitStream)).Perm(n)
	testIdx, trainIdx := perm[:nTest], perm[nTest:]
	slices.Sort(testIdx)
	slices.Sort(trainIdx)
	return s.Subset(trainIdx), s.Subset(testIdx), nil
}

// Standardizer holds per-feature means and standard deviations, fitted on a training
// set and applied to any set with the same number of features.
type Standardizer struct {
	Mean []float64
	Std  []float64 // population standard deviation; 1 for a constant column
}

// FitStandardizer computes the mean and population standard deviation of each feature
// column of s, in float64. A constant column gets a standard deviation of 1, so
// standardising maps it to 0; an empty set gives means 0 and deviations 1.
func FitStandardizer(s *Set) *Standardizer {
	n, f := s.Len(), s.Features
	z := &Standardizer{Mean: make([]float64, f), Std: make([]float64, f)}
	if n == 0 {
		for j := range z.Std {
			z.Std[j] = 1
		}
		return z
	}
	x := s.X.Data32()
	for i := range n {
		for j, v := range x[i*f : (i+1)*f] {
			z.Mean[j] += float64(v)
		}
	}
	for j := range z.Mean {
		z.Mean[j] /= float64(n)
	}
	for i := range n {
		for j, v := range x[i*f : (i+1)*f] {
			d := float64(v) - z.Mean[j]
			z.Std[j] += d * d
		}
	}
	for j := range z.Std {
		z.Std[j] = math.Sqrt(z.Std[j] / float64(n))
		if z.Std[j] == 0 {
			z.Std[j] = 1
		}
	}
	return z
}

// Apply returns a copy of s whose features are (x - Mean) / Std. It panics if s does not
// have len(z.Mean) features.
func (z *Standardizer) Apply(s *Set) *Set {
	if s.Features != len(z.Mean) {
		panic(fmt.Errorf("dataset.Standardizer.Apply: set %s has %d features, the standardizer %d", s.Name, s.Features, len(z.Mean)))
	}
	out := s.Subset(identity(s.Len()))
	x, f := out.X.Data32(), out.Features
	for i := range out.Len() {
		row := x[i*f : (i+1)*f]
		for j, v := range row {
			row[j] = float32((float64(v) - z.Mean[j]) / z.Std[j])
		}
	}
	return out
}

// Standardize fits a Standardizer on train and returns standardised copies of train and
// test; the inputs are not modified. test may be nil, giving a nil result.
func Standardize(train, test *Set) (*Set, *Set) {
	z := FitStandardizer(train)
	if test == nil {
		return z.Apply(train), nil
	}
	return z.Apply(train), z.Apply(test)
}

func identity(n int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	return idx
}

func digitClasses(n int) []string {
	c := make([]string, n)
	for i := range c {
		c[i] = fmt.Sprint(i)
	}
	return c
}

// SampleShapeOf returns the sample shape of the built-in set name without
// loading it, or nil for a set whose shape only its file tells (csv).
func SampleShapeOf(name string) []int {
	switch name {
	case "digits":
		return []int{1, 8, 8}
	case "mnist", "fashion-mnist":
		return []int{1, 28, 28}
	case "spirals":
		return []int{2}
	}
	return nil
}

// fileSetName names a set loaded from path: its file name less the extension.
func fileSetName(path string) string {
	return strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
}
