package model

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/pipetrain/pipetrain/internal/checkpoint"
	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/ops"
	"github.com/pipetrain/pipetrain/tensor"
)

// Format is the version of Description this package writes and reads.
const Format = 1

// Description is what a checkpoint says of its model: enough to rebuild it
// and to turn raw inputs into its features. cmd/train writes it into each
// checkpoint's state.json under "model".
type Description struct {
	Format  int       `json:"format"`
	Layers  []nn.Spec `json:"layers"`
	Sample  []int     `json:"sample_shape"` // [C, H, W] for images, [F] for features
	Seed    uint64    `json:"seed"`         // the layers' random streams (dropout); the weights come from the file
	Loss    nn.Loss   `json:"loss"`
	Classes []string  `json:"classes,omitempty"` // the class of each output; empty for regression
	Input   Input     `json:"input"`
}

// Input says how a raw input becomes the model's features, as the data set
// the model was trained on did it: feature = (raw / Divide − Mean) / Std,
// in float64, rounded to float32.
type Input struct {
	Data   string    `json:"data"`           // the data set: digits, mnist, fashion-mnist, csv or spirals
	Divide float64   `json:"divide"`         // 255 for IDX images' bytes, 16 for the digits' 0..16, 1 otherwise
	Mean   []float64 `json:"mean,omitempty"` // per feature, for a standardised CSV
	Std    []float64 `json:"std,omitempty"`  // per feature, for a standardised CSV
}

// Features returns the model's input width.
func (d *Description) Features() int { return tensor.SizeOf(d.Sample) }

// Regression reports whether the model predicts values rather than classes.
func (d *Description) Regression() bool { return len(d.Classes) == 0 }

// Check reports what is wrong with d, naming it.
func (d *Description) Check() error {
	if d.Format != Format {
		return fmt.Errorf("model: description format %d, this pipetrain reads %d", d.Format, Format)
	}
	if len(d.Layers) == 0 || len(d.Sample) == 0 {
		return errors.New("model: the description has no layers or no sample shape")
	}
	if _, err := nn.OutShapes(d.Layers, d.Sample); err != nil {
		return fmt.Errorf("model: %w", err)
	}
	if !d.Loss.Valid() {
		return fmt.Errorf("model: unknown loss %q", d.Loss)
	}
	if !(d.Input.Divide > 0) || math.IsInf(d.Input.Divide, 0) {
		return fmt.Errorf("model: input divide %v must be a positive number", d.Input.Divide)
	}
	if f := d.Features(); d.Input.Mean != nil && (len(d.Input.Mean) != f || len(d.Input.Std) != f) {
		return fmt.Errorf("model: %d means and %d deviations for %d features", len(d.Input.Mean), len(d.Input.Std), f)
	}
	return nil
}

// Prepare turns raw inputs, [N, Features] as the data set holds them (pixels
// 0..255, the digits' 0..16, a CSV's values), into the model's features.
func (d *Description) Prepare(raw *tensor.Tensor) (*tensor.Tensor, error) {
	if len(raw.Shape()) != 2 || raw.Dim(1) != d.Features() {
		return nil, fmt.Errorf("model: input %v: want [N, %d]", raw.Shape(), d.Features())
	}
	v := raw.Float64s()
	out := tensor.Zeros(tensor.Float32, raw.Dim(0), raw.Dim(1))
	x, f := out.Data32(), raw.Dim(1)
	for i, r := range v {
		y := r / d.Input.Divide
		if d.Input.Mean != nil {
			y = (y - d.Input.Mean[i%f]) / d.Input.Std[i%f]
		}
		x[i] = float32(y)
	}
	return out, nil
}

// Model is a trained model for inference: Predict and Classify are safe for
// concurrent use by many goroutines. Each call runs on one goroutine, on a
// copy of the layers of its own that is reused by later calls, so that a warm
// Model allocates only the result.
type Model struct {
	Description
	weights map[string]*tensor.Tensor // parameters and buffers, by name

	mu   sync.Mutex
	free []*runner
}

// runner is one copy of the layers with the arena its passes borrow from.
type runner struct {
	layers []nn.Layer
	arena  nn.Arena
}

// Load reads the model of a checkpoint directory (a step-… folder), or of
// the newest checkpoint under a checkpoint_dir.
func Load(dir string) (*Model, error) {
	step, err := resolve(dir)
	if err != nil {
		return nil, err
	}
	meta, weights, _, err := checkpoint.Load(step)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	if len(meta.Model) == 0 {
		return nil, fmt.Errorf("model: %s holds no model description: it was written by a pipetrain older than format %d; train again to get one", step, Format)
	}
	var d Description
	if err := json.Unmarshal(meta.Model, &d); err != nil {
		return nil, fmt.Errorf("model: %s: the model description: %v", step, err)
	}
	return New(d, weights)
}

// resolve returns dir if it is a checkpoint, else the newest one under it.
func resolve(dir string) (string, error) {
	if checkpoint.IsCheckpoint(dir) {
		return dir, nil
	}
	step, ok, err := checkpoint.Latest(dir)
	if err != nil {
		return "", fmt.Errorf("model: %w", err)
	}
	if !ok {
		return "", fmt.Errorf("model: %s: no checkpoint there", dir)
	}
	return step, nil
}

// New returns the model of d with the given parameters and buffers, named
// as in a checkpoint ("0.weight", "1.running_mean").
func New(d Description, weights map[string]*tensor.Tensor) (*Model, error) {
	if err := d.Check(); err != nil {
		return nil, err
	}
	m := &Model{Description: d, weights: weights}
	r, err := m.newRunner()
	if err != nil {
		return nil, err
	}
	m.free = append(m.free, r)
	return m, nil
}

func (m *Model) newRunner() (*runner, error) {
	layers, err := nn.BuildShape(m.Layers, m.Sample, m.Seed, tensor.Float32, 0, len(m.Layers))
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	seen := 0
	for i, l := range layers {
		set := func(name string, t *tensor.Tensor) error {
			name = fmt.Sprintf("%d.%s", i, name)
			w, ok := m.weights[name]
			if !ok || !tensor.EqualShapes(w.Shape(), t.Shape()) || w.DType() != t.DType() {
				return fmt.Errorf("model: tensor %q is missing or is not %v %v", name, t.DType(), t.Shape())
			}
			t.CopyFrom(w)
			seen++
			return nil
		}
		for _, p := range l.Params() {
			if err := set(p.Name, p.Value); err != nil {
				return nil, err
			}
		}
		for _, b := range nn.BuffersOf(l) {
			if err := set(b.Name, b.Value); err != nil {
				return nil, err
			}
		}
	}
	if seen != len(m.weights) {
		return nil, fmt.Errorf("model: %d tensors in the weights, the model has %d", len(m.weights), seen)
	}
	return &runner{layers: layers}, nil
}

func (m *Model) get() (*runner, error) {
	m.mu.Lock()
	if n := len(m.free); n > 0 {
		r := m.free[n-1]
		m.free = m.free[:n-1]
		m.mu.Unlock()
		return r, nil
	}
	m.mu.Unlock()
	return m.newRunner()
}

func (m *Model) put(r *runner) {
	m.mu.Lock()
	m.free = append(m.free, r)
	m.mu.Unlock()
}

// Outputs returns the model's raw outputs (logits for a classifier) for
// features x, [N, Features] or [N, sample shape...].
func (m *Model) Outputs(x *tensor.Tensor) (*tensor.Tensor, error) {
	return m.run(x, false)
}

// Predict returns what the model predicts for features x ([N, Features] or
// [N, sample shape...]): each class's probability for a classifier (softmax
// of the outputs under cross_entropy, sigmoid under bce_with_logits), the
// outputs themselves for regression.
func (m *Model) Predict(x *tensor.Tensor) (*tensor.Tensor, error) {
	return m.run(x, !m.Regression())
}

// Classify returns the most probable class of each row of x.
func (m *Model) Classify(x *tensor.Tensor) ([]int, error) {
	if m.Regression() {
		return nil, errors.New("model: a regression model has no classes")
	}
	out, err := m.Outputs(x)
	if err != nil {
		return nil, err
	}
	return nn.Predict(out), nil
}

func (m *Model) run(x *tensor.Tensor, probs bool) (*tensor.Tensor, error) {
	f := m.Features()
	if !m.fits(x) {
		return nil, fmt.Errorf("model: input %v %v: want float32 [N, %d] or [N %v]", x.DType(), x.Shape(), f, m.Sample)
	}
	r, err := m.get()
	if err != nil {
		return nil, err
	}
	h, err := r.forward(x, f)
	if err != nil {
		return nil, err // the runner may hold a half pass: drop it
	}
	// h is in the runner's arena: the result must be out of it before
	// another call may take the runner.
	var out *tensor.Tensor
	switch {
	case probs && m.Loss == nn.BCEWithLogits:
		out = ops.Sigmoid(h)
	case probs:
		out = ops.Softmax(h, 1)
	default:
		out = h.Clone()
	}
	m.put(r)
	return out, nil
}

// fits reports whether x is float32 [N, Features] or [N, sample shape...].
func (m *Model) fits(x *tensor.Tensor) bool {
	if x.DType() != tensor.Float32 {
		return false
	}
	if x.Dims() == 2 {
		return x.Dim(1) == m.Features()
	}
	if x.Dims() != len(m.Sample)+1 {
		return false
	}
	for i, d := range m.Sample {
		if x.Dim(i+1) != d {
			return false
		}
	}
	return true
}

// forward runs the layers on x; a layer's panic (an input it refuses)
// becomes an error. The result is the runner's until its next pass.
func (r *runner) forward(x *tensor.Tensor, f int) (h *tensor.Tensor, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("model: %v", p)
		}
	}()
	r.arena.Reset()
	p := nn.Pass{Arena: &r.arena, Threads: 1}
	h = x
	if x.Dims() != 2 {
		h = x.Reshape(x.Dim(0), f)
	}
	for _, l := range r.layers {
		h = l.Forward(p, h)
	}
	return h, nil
}
