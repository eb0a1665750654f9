package model

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/pipetrain/pipetrain/internal/checkpoint"
	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/ops"
	"github.com/pipetrain/pipetrain/tensor"
)

// Format is the version of Description this package writes and reads. It
// changes when a reader of the old version would misread the new one; a
// field added that such a reader may ignore (Data) does not change it.
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
	Classes []string  `json:"classes,omitempty"` // the class of each output; empty for regression; a text model's tokens
	// Vocab is a text model's vocabulary kind, "chars", "bytes", "gpt2" or
	// "bpe" (its tokens are the Classes; a bpe model's merges are in the
	// tokenizer.json beside state.json); empty for other models.
	Vocab string `json:"vocab,omitempty"`
	Input Input  `json:"input"`
	// Data is the data set the model was trained on, from which `train eval`
	// loads the same test split again; nil in checkpoints written before
	// pipetrain recorded it.
	Data *Data `json:"data,omitempty"`
}

// Data names the data set a model was trained on as the run's config did:
// the seed and the [data] keys that decide which rows fall in which split,
// keyed as in the config file.
type Data struct {
	Seed         uint64  `json:"seed"`               // the config's seed: it drew the split (and the spirals)
	Name         string  `json:"name"`               // digits, mnist, fashion-mnist, csv or spirals
	Path         string  `json:"path,omitempty"`     // the file or folder, made absolute when the run started
	Download     bool    `json:"download,omitempty"` // mnist, fashion-mnist: fetched into the user cache
	LabelColumn  int     `json:"label_column"`       // csv: the label's column; negative counts from the end
	TestFraction float64 `json:"test_fraction"`      // held out for sets with no test split of their own
	// ValidationFraction was held out of the training split for validation;
	// a CSV set's standardization was fitted on the rest.
	ValidationFraction float64 `json:"validation_fraction,omitempty"`
	Vocab              string  `json:"vocab,omitempty"`      // text, shakespeare: chars, bytes, gpt2 or bpe
	VocabSize          int     `json:"vocab_size,omitempty"` // bpe: the trained BPE's size
	BlockSize          int     `json:"block_size,omitempty"` // text, shakespeare: the context length
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

// IsText reports whether the model is a language model over a vocabulary of
// tokens.
func (d *Description) IsText() bool { return d.Vocab != "" }

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
	if d.Data != nil && d.Data.Name != d.Input.Data {
		return fmt.Errorf("model: trained on data %q, but its input is described as data %q's", d.Data.Name, d.Input.Data)
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
	Checkpoint Checkpoint // where Load found it; zero for New

	weights map[string]*tensor.Tensor // parameters and buffers, by name

	mu   sync.Mutex
	free []*runner
}

// runner is one copy of the layers with the arena its passes borrow from.
type runner struct {
	layers []nn.Layer
	order  []int // the order forward runs them in (nn.RunOrder: the same bits, faster)
	arena  nn.Arena
}

// Checkpoint says which checkpoint a model was loaded from.
type Checkpoint struct {
	Dir   string // the step-… folder
	Step  int    // the optimizer steps its weights had taken
	Epoch int    // the epoch of the next batch, from 0, as state.json says
	Batch int    // the index of the next batch within Epoch
	// ConfigHash identifies the config the run had (its model, data and
	// optimizer), as the trainer computes it.
	ConfigHash string
}

// ErrNoDescription is Load's error for a checkpoint older than model
// descriptions (format 1): LoadAs reads one with a description made anew.
var ErrNoDescription = errors.New("holds no model description")

// Load reads the model of a checkpoint directory (a step-… folder), or of
// the newest checkpoint under a checkpoint_dir.
func Load(dir string) (*Model, error) { return load(dir, nil, nil) }

// LoadAs is Load for a checkpoint that may predate model descriptions:
// one that holds none is read as the model describe returns, which should
// be what the run that wrote it would have recorded (its config's layers
// and seed, its data's sample shape, classes and input). vet, if not nil,
// sees the checkpoint's record first (its config hash, say): its error
// stops the load before describe runs.
func LoadAs(dir string, describe func() (Description, error), vet func(Checkpoint) error) (*Model, error) {
	return load(dir, describe, vet)
}

func load(dir string, describe func() (Description, error), vet func(Checkpoint) error) (*Model, error) {
	step, err := resolve(dir)
	if err != nil {
		return nil, err
	}
	meta, weights, _, err := checkpoint.Load(step)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	ck := Checkpoint{Dir: step, Step: meta.Step, Epoch: meta.Epoch, Batch: meta.Batch, ConfigHash: meta.ConfigHash}
	if vet != nil {
		if err := vet(ck); err != nil {
			return nil, err
		}
	}
	var d Description
	switch {
	case len(meta.Model) > 0:
		if err := json.Unmarshal(meta.Model, &d); err != nil {
			return nil, fmt.Errorf("model: %s: the model description: %v", step, err)
		}
		restoreByteTokens(&d)
	case describe != nil:
		if d, err = describe(); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("model: %s %w: it was written by a pipetrain older than format %d", step, ErrNoDescription, Format)
	}
	m, err := New(d, weights)
	if err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, step)
	}
	m.Checkpoint = ck
	return m, nil
}

// restoreByteTokens gives a "bytes" vocabulary's tokens back their bytes:
// JSON holds only valid UTF-8, so state.json has U+FFFD for each byte from
// 0x80 up, and token i of that vocabulary is byte i.
func restoreByteTokens(d *Description) {
	if d.Vocab != "bytes" || len(d.Classes) != 256 {
		return
	}
	for i := range d.Classes {
		d.Classes[i] = string([]byte{byte(i)})
	}
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
		if runs := runsUnder(dir); len(runs) > 0 {
			return "", fmt.Errorf("model: %s: no checkpoint there, but runs' folders: %s: name one", dir, strings.Join(runs, ", "))
		}
		return "", fmt.Errorf("model: %s: no checkpoint there", dir)
	}
	return step, nil
}

// runsUnder lists the folders under dir that hold checkpoints, as
// checkpoints/ holds one for each config (train.checkpoint_dir's default).
func runsUnder(dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var runs []string
	for _, e := range entries {
		if sub := filepath.Join(dir, e.Name()); e.IsDir() {
			if _, ok, _ := checkpoint.Latest(sub); ok {
				runs = append(runs, sub)
			}
		}
	}
	return runs
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
			name = nn.ParamName(i, name)
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
	return &runner{layers: layers, order: nn.RunOrder(layers)}, nil
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

// Evaluate returns the model's mean loss on features x against t and, when
// t has labels, the fraction of rows whose largest output is the label. It
// is nn.Sequential.Evaluate over chunks of rows rows, whose arithmetic
// training's evaluation repeats, so a checkpoint gives the loss and
// accuracy its run logged, bit for bit, when rows is the run's. Unlike
// Predict, it lets each kernel use every core: it is a batch job.
func (m *Model) Evaluate(x *tensor.Tensor, t nn.Target, rows int) (loss, accuracy float64, err error) {
	if !m.fits(x) {
		return math.NaN(), math.NaN(), fmt.Errorf("model: input %v %v: want float32 [N, %d] or [N %v]", x.DType(), x.Shape(), m.Features(), m.Sample)
	}
	if n := x.Dim(0); t.Rows() != n {
		return math.NaN(), math.NaN(), fmt.Errorf("model: %d targets for %d rows", t.Rows(), n)
	}
	if x.Dims() != 2 {
		x = x.Reshape(x.Dim(0), m.Features())
	}
	r, err := m.get()
	if err != nil {
		return math.NaN(), math.NaN(), err
	}
	defer func() {
		if p := recover(); p != nil { // a label out of range: drop the runner, which may hold a half pass
			loss, accuracy, err = math.NaN(), math.NaN(), fmt.Errorf("model: %v", p)
		}
	}()
	s := nn.Sequential{Layers: r.layers, Loss: m.Loss}
	loss, accuracy = s.Evaluate(x, t, rows)
	m.put(r)
	return loss, accuracy, nil
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
	var out *tensor.Tensor
	if probs {
		out = m.FromOutputs(h)
	} else {
		out = h.Clone()
	}
	m.put(r) // only now: h is the runner's, which the next caller overwrites
	return out, nil
}

// FromOutputs returns what Predict returns for the outputs out, as Outputs
// gave them: the class probabilities of a classifier, a copy of out for
// regression. With it one forward pass gives both a classifier's classes,
// nn.Predict(out) as Classify's, and their probabilities.
func (m *Model) FromOutputs(out *tensor.Tensor) *tensor.Tensor {
	switch {
	case m.Regression():
		return out.Clone()
	case m.Loss == nn.BCEWithLogits:
		return ops.Sigmoid(out)
	}
	return ops.Softmax(out, 1)
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
	// the weights never change: layers may pack them once for every call
	p := nn.Pass{Arena: &r.arena, Threads: 1, Weights: 1, Micros: math.MaxInt}
	h = x
	if x.Dims() != 2 {
		h = x.Reshape(x.Dim(0), f)
	}
	for _, i := range r.order {
		h = r.layers[i].Forward(p, h)
	}
	return h, nil
}
