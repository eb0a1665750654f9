package config

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/pipetrain/pipetrain/nn"

	"github.com/BurntSushi/toml"
)

// Config is a whole training run: what to learn from, the model, how to
// optimise it, how to pipeline it, and where to write logs and checkpoints.
// The toml tags are the key names, which users and scripts rely on: the
// docs/config.md lists them all.
type Config struct {
	Seed      uint64    `toml:"seed" json:"seed"`
	Data      Data      `toml:"data" json:"data"`
	Model     Model     `toml:"model" json:"model"`
	Loss      Loss      `toml:"loss" json:"loss"`
	Optimizer Optimizer `toml:"optimizer" json:"optimizer"`
	Schedule  Schedule  `toml:"schedule" json:"schedule"`
	Pipeline  Pipeline  `toml:"pipeline" json:"pipeline"`
	Train     Train     `toml:"train" json:"train"`
	Log       Log       `toml:"log" json:"log"`
}

// Data is the [data] table: which data set, and how to batch it.
type Data struct {
	Name               string  `toml:"name" json:"name"`                 // digits | mnist | fashion-mnist | csv | spirals | text | shakespeare | tokens
	Path               string  `toml:"path" json:"path"`                 // mnist/fashion-mnist, tokens: a folder; csv, text: the file; shakespeare: its input.txt
	Vocab              string  `toml:"vocab" json:"vocab"`               // text, shakespeare, tokens: chars | bytes | gpt2 | bpe
	VocabSize          int     `toml:"vocab_size" json:"vocab_size"`     // bpe: the trained BPE's tokens (>= 256), required for it; 0 otherwise
	BlockSize          int     `toml:"block_size" json:"block_size"`     // text, shakespeare, tokens: the context length in tokens
	Download           bool    `toml:"download" json:"download"`         // mnist/fashion-mnist: fetch into the cache when path is empty
	LabelColumn        int     `toml:"label_column" json:"label_column"` // csv: the label column; negative counts from the end
	BatchSize          int     `toml:"batch_size" json:"batch_size"`
	Shuffle            bool    `toml:"shuffle" json:"shuffle"`
	TestFraction       float64 `toml:"test_fraction" json:"test_fraction"`             // for sets with no test split of their own
	ValidationFraction float64 `toml:"validation_fraction" json:"validation_fraction"` // held out of the training split, for validation and early stopping
}

// Model is the [model] table: the layers, in order, and which activations
// transformer blocks recompute in the backward. The input width comes from
// the data.
type Model struct {
	Layers    []Layer `toml:"layers" json:"layers"`
	Recompute string  `toml:"recompute" json:"recompute"` // none | attention | blocks (nn.Recomputes)
}

// Layer is one [[model.layers]] element. Only some keys belong to each type,
// as nn's table of layer types says (nn.LayerKeys), which also checks them
// (nn.CheckSpec): units, init and shards to linear; alpha to leaky_relu; p to
// dropout; approximate to gelu; and so on. Setting any other key of a layer
// is an error.
//
// Build layers in Go with NewLayer, which fills in the per-layer defaults.
type Layer struct {
	// Spec holds the keys: nn's table of layer types owns what each means,
	// which types take it and its checks; a Layer only carries it from TOML.
	nn.Spec

	// given names the keys the config file or a --set gave this layer (once
	// tracked), so that Validate can reject keys that do not belong to the
	// layer's type even when they hold the default.
	given   []string
	tracked bool
}

func (l *Layer) mark(key string) {
	if !slices.Contains(l.given, key) {
		l.given = append(slices.Clip(l.given), key)
	}
}

// Loss is the [loss] table.
type Loss struct {
	Type string `toml:"type" json:"type"` // one of nn.Losses
}

// Optimizer is the [optimizer] table.
type Optimizer struct {
	Type        string     `toml:"type" json:"type"` // sgd | adam | adamw
	LR          float64    `toml:"lr" json:"lr"`
	Momentum    float64    `toml:"momentum" json:"momentum"` // sgd
	Nesterov    bool       `toml:"nesterov" json:"nesterov"` // sgd, with momentum > 0
	WeightDecay float64    `toml:"weight_decay" json:"weight_decay"`
	Decay       string     `toml:"decay" json:"decay"` // all | matrices: which parameters weight_decay applies to
	Betas       [2]float64 `toml:"betas" json:"betas"` // adam, adamw
	Eps         float64    `toml:"eps" json:"eps"`     // adam, adamw
	ClipNorm    float64    `toml:"clip_norm" json:"clip_norm"`
	ClipValue   float64    `toml:"clip_value" json:"clip_value"`
}

// Schedule is the [schedule] table: the learning-rate schedule.
type Schedule struct {
	Type        string  `toml:"type" json:"type"` // constant | step | cosine
	WarmupSteps int     `toml:"warmup_steps" json:"warmup_steps"`
	StepSize    int     `toml:"step_size" json:"step_size"` // step: decay every step_size steps
	Gamma       float64 `toml:"gamma" json:"gamma"`         // step: the decay factor
	MinLR       float64 `toml:"min_lr" json:"min_lr"`       // cosine: the rate at the run's last step
}

// Pipeline is the [pipeline] table: how the layers are spread over actors.
type Pipeline struct {
	Schedule      string   `toml:"schedule" json:"schedule"` // auto | sequential | gpipe | 1f1b | interleaved | zb-h1 | zbv
	Chunks        int      `toml:"chunks" json:"chunks"`     // interleaved, zbv: positions of the chain per stage; 0 or 1: one (zbv: 2)
	MicroBatches  Auto     `toml:"micro_batches" json:"micro_batches"`
	Stages        int      `toml:"stages" json:"stages"`                 // 0: one actor per layer
	GEMMThreads   int      `toml:"gemm_threads" json:"gemm_threads"`     // goroutines per GEMM; 0: from the cores and the stage actors
	SplitBackward bool     `toml:"split_backward" json:"split_backward"` // send dX upstream before computing dW
	Replicas      Auto     `toml:"replicas" json:"replicas"`             // copies of the stage chain; "auto": the tuner's choice
	Hosts         []string `toml:"hosts" json:"hosts"`                   // host:port of remote stage hosts
	// HostsMin, when not 0, lets a run that lost a host and waited
	// train.restart_wait for it go on over the hosts left, as long as
	// they are at least this many; 0: it waits for the lost host only.
	HostsMin int `toml:"hosts_min" json:"hosts_min"`
	// Listen is where the coordinator listens for its workers (host:port,
	// port 0 picks one); empty: 127.0.0.1:0, or 0.0.0.0:0 for hosts beyond
	// this machine. Advertise is the host:port they reach it at, when not
	// that (a firewall's forwarded port, a proxy, NAT).
	Listen    string `toml:"listen" json:"listen"`
	Advertise string `toml:"advertise" json:"advertise"`
}

// Train is the [train] table.
type Train struct {
	Epochs          int    `toml:"epochs" json:"epochs"`
	MaxSteps        int    `toml:"max_steps" json:"max_steps"`               // 0: no cap
	EvalEvery       int    `toml:"eval_every" json:"eval_every"`             // 0: at each epoch's end
	CheckpointDir   string `toml:"checkpoint_dir" json:"checkpoint_dir"`     // unset: checkpoints/<name>, set: as it is
	Name            string `toml:"name" json:"name"`                         // the run's name; unset: the config file's
	KeepCheckpoints int    `toml:"keep_checkpoints" json:"keep_checkpoints"` // the newest kept (and the best); 0: all
	CheckpointEvery int    `toml:"checkpoint_every" json:"checkpoint_every"` // 0: at each epoch's end
	EarlyStop       int    `toml:"early_stop" json:"early_stop"`             // stop after this many evaluations without a better validation loss; 0: off
	Precision       string `toml:"precision" json:"precision"`               // of linear, conv2d and attention products: fp32 | bf16
	// BF16Arithmetic is the steps bf16 products' sums take: amx |
	// avx512bf16, the same bits on every CPU; auto: this CPU's native one,
	// or a resumed checkpoint's.
	BF16Arithmetic string `toml:"bf16_arithmetic" json:"bf16_arithmetic"`
	// Restarts is how many times a run that lost a host (pipeline.hosts)
	// starts again by itself, from its last snapshot or checkpoint; 0:
	// it stops, to be resumed with --resume.
	Restarts int `toml:"restarts" json:"restarts"`
	// SnapshotEvery, when not 0, keeps a copy of the weights and
	// optimizer state in memory every this many steps, for a restart
	// that loses fewer steps than the last checkpoint would.
	SnapshotEvery int `toml:"snapshot_every" json:"snapshot_every"`
	// RestartWait is how long a restart waits for a lost host to come
	// back (a Go duration, e.g. "30s").
	RestartWait string `toml:"restart_wait" json:"restart_wait"`
}

// RestartWaitDuration is train.restart_wait, validated.
func (t Train) RestartWaitDuration() time.Duration {
	d, _ := time.ParseDuration(t.RestartWait)
	return d
}

// Log is the [log] table.
type Log struct {
	Dir     string `toml:"dir" json:"dir"`
	Every   int    `toml:"every" json:"every"`     // a step event every this many optimizer steps
	Trace   string `toml:"trace" json:"trace"`     // a Chrome trace event file for the pipeline timeline
	Metrics string `toml:"metrics" json:"metrics"` // host:port to serve Prometheus metrics on; empty: none
}

// Auto is a count that may be "auto" in TOML, held as 0: the trainer then
// measures the candidates and picks one.
type Auto int

// IsAuto reports whether the count was left to the trainer.
func (a Auto) IsAuto() bool { return a == 0 }

func (a Auto) String() string {
	if a.IsAuto() {
		return "auto"
	}
	return fmt.Sprint(int(a))
}

// Default returns the defaults of every key (docs/config.md). The
// model has no layers: a config must give at least one.
func Default() *Config {
	return &Config{
		Seed: 1,
		Data: Data{
			Name:         "digits",
			Vocab:        "chars",
			LabelColumn:  -1,
			BatchSize:    64,
			Shuffle:      true,
			TestFraction: 0.2,
		},
		Model: Model{Recompute: string(nn.RecomputeNone)},
		Loss:  Loss{Type: "cross_entropy"},
		Optimizer: Optimizer{
			Type:  "sgd",
			LR:    0.05,
			Decay: "all",
			Betas: [2]float64{0.9, 0.999},
			Eps:   1e-8,
		},
		Schedule: Schedule{Type: "constant", Gamma: 0.1},
		Pipeline: Pipeline{Schedule: "auto", Replicas: 1}, // micro_batches "auto"
		Train:    Train{Epochs: 1, CheckpointDir: "checkpoints", KeepCheckpoints: 5, Precision: "fp32", BF16Arithmetic: "auto", RestartWait: "60s"},
		Log:      Log{Dir: "logs", Every: 10},
	}
}

// NewLayer returns a layer of the given type holding the per-layer defaults
// (nn.DefaultSpec): init "xavier_uniform", shards 1, alpha 0.01, p 0.1,
// eps 1e-5, momentum 0.1. A linear layer still needs its Units.
func NewLayer(typ string) Layer {
	l := Layer{Spec: nn.DefaultSpec()}
	l.Type = typ
	return l
}

// Load reads the TOML file at path and returns its config: the defaults,
// overridden by the file, overridden by each of sets ("KEY=VALUE", as given
// to --set) in order, then validated with Validate.
func Load(path string, sets []string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("config: %s: %v", path, pe.Err)
		}
		return nil, fmt.Errorf("config: %v", err)
	}
	return Parse(path, data, sets)
}

// Parse is Load for a file already read: name is the file's name, used in
// error messages, and data its contents.
func Parse(name string, data []byte, sets []string) (*Config, error) {
	c, err := parse(name, data, sets)
	if err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// parse is Parse without the validation.
func parse(name string, data []byte, sets []string) (*Config, error) {
	if name == "" {
		name = "<config>"
	}
	var raw map[string]any
	if _, err := toml.Decode(string(data), &raw); err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("config: %s: line %d: %s", name, errorLine(data, pe.Position), pe.Message)
		}
		return nil, fmt.Errorf("config: %s: %v", name, err)
	}
	c := Default()
	if err := decodeTable(configValue(c), raw, ""); err != nil {
		return nil, fmt.Errorf("config: %s: %w", name, err)
	}
	for _, s := range sets {
		if err := c.set(s); err != nil {
			return nil, fmt.Errorf("config: --set %q: %w", s, err)
		}
	}
	if !checkpointDirGiven(raw, sets) { // each config its own folder, so runs of others do not mix
		c.Train.CheckpointDir = filepath.Join(c.Train.CheckpointDir, cmp.Or(c.Train.Name, runName(name)))
	}
	return c, nil
}

// checkpointDirGiven reports whether the file or a --set gives
// train.checkpoint_dir.
func checkpointDirGiven(raw map[string]any, sets []string) bool {
	if t, ok := raw["train"].(map[string]any); ok {
		if _, ok := t["checkpoint_dir"]; ok {
			return true
		}
	}
	return slices.ContainsFunc(sets, func(s string) bool {
		k, _, _ := strings.Cut(s, "=")
		return strings.TrimSpace(k) == "train.checkpoint_dir"
	})
}

// runName is a run's name from its config file's: mlp for configs/mlp.toml.
func runName(file string) string {
	base := filepath.Base(file)
	if n := strings.TrimSuffix(base, filepath.Ext(base)); n != "" && n != "." && n != "<config>" {
		return n
	}
	return "run"
}

// SetData applies sets (as --set gives them, "KEY=VALUE") to a config that
// only loads data, as `train eval` does, and checks the keys it uses. Such
// a command reads seed, the [data] table and log.dir alone, so a set of any
// other key is an error rather than silently ignored.
func (c *Config) SetData(sets []string) error {
	for _, s := range sets {
		k, _, _ := strings.Cut(s, "=")
		if k = strings.TrimSpace(k); k != "seed" && k != "log.dir" && k != "data" && !strings.HasPrefix(k, "data.") {
			return fmt.Errorf("config: --set %q: only seed, data.* and log.dir apply here", s)
		}
		if err := c.set(s); err != nil {
			return fmt.Errorf("config: --set %q: %w", s, err)
		}
	}
	if err := c.validateData(); err != nil {
		return err
	}
	return c.validateLog()
}

// errorLine returns the line of a TOML syntax error. The toml package counts
// an error at a newline (say, "[data" with no "]") as on the next line; this
// returns the line the newline ends.
func errorLine(data []byte, p toml.Position) int {
	if p.Start >= 0 && p.Start < len(data) {
		return 1 + bytes.Count(data[:p.Start], []byte("\n"))
	}
	return p.Line
}
