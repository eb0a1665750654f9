package config

import (
	"errors"
	"fmt"
	"math"
	"net"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pipetrain/pipetrain/actors"
	"github.com/pipetrain/pipetrain/nn"
)

// The valid names of the string-valued keys.
var (
	dataNames         = []string{"digits", "mnist", "fashion-mnist", "csv", "spirals", "text", "shakespeare", "tokens"}
	textData          = []string{"text", "shakespeare", "tokens"}
	vocabKinds        = []string{"chars", "bytes", "gpt2", "bpe"}
	decays            = []string{"all", "matrices"}
	layerTypes        = nn.LayerTypes()
	optimizerTypes    = []string{"sgd", "adam", "adamw"}
	scheduleTypes     = []string{"constant", "step", "cosine"}
	pipelineSchedules = append([]string{"auto"}, actors.ScheduleNames()...)
	precisions        = []string{"fp32", "bf16"}
	arithmetics       = []string{"auto", "amx", "avx512bf16"}
)

// layerKeys lists the keys that belong to each layer type: "type" and the
// keys nn's table of layer types gives.
var layerKeys = func() map[string][]string {
	m := map[string][]string{}
	for _, t := range nn.LayerTypes() {
		keys, _ := nn.LayerKeys(t)
		m[t] = append([]string{"type"}, keys...)
	}
	return m
}()

func errorf(format string, args ...any) error {
	return fmt.Errorf("config: "+format, args...)
}

func names[S ~string](xs []S) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = string(x)
	}
	return out
}

// oneOf checks that the string key holds one of valid.
func oneOf(key, v string, valid []string) error {
	if slices.Contains(valid, v) {
		return nil
	}
	return errorf("%s = %q: want one of %s", key, v, strings.Join(valid, ", "))
}

// finite checks that the float keys hold neither NaN nor an infinity.
func finite(kv ...any) error {
	for i := 0; i < len(kv); i += 2 {
		if v := kv[i+1].(float64); math.IsNaN(v) || math.IsInf(v, 0) {
			return errorf("%s = %s: must be a finite number", kv[i], formatFloat(v))
		}
	}
	return nil
}

// atLeast checks the integer key holds at least lo.
func atLeast(key string, v, lo int) error {
	if v < lo {
		return errorf("%s = %d: must be at least %d", key, v, lo)
	}
	return nil
}

// Validate checks every key that can be checked without the data: each value
// is known and in its range, and the keys agree with each other. The error
// names the first offending key and its value.
func (c *Config) Validate() error {
	for _, check := range []func() error{
		c.validateData, c.validateModel, c.validateLoss, c.validateOptimizer,
		c.validateSchedule, c.validatePipeline, c.validateTrain, c.validateLog,
	} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

func (c *Config) validateData() error {
	d := c.Data
	if err := oneOf("data.name", d.Name, dataNames); err != nil {
		return err
	}
	if (d.Name == "csv" || d.Name == "text" || d.Name == "tokens") && d.Path == "" {
		return errorf(`data.path: required for data.name = %q`, d.Name)
	}
	if err := oneOf("data.vocab", d.Vocab, vocabKinds); err != nil {
		return err
	}
	switch bpe := d.Vocab == "bpe"; {
	case bpe && d.VocabSize == 0:
		return errorf(`data.vocab_size = 0: required for data.vocab = "bpe", the trained BPE's tokens (at least 256)`)
	case bpe && d.VocabSize < 256:
		return errorf(`data.vocab_size = %d: below 256, the bytes a byte-level BPE starts from`, d.VocabSize)
	case !bpe && d.VocabSize != 0:
		return errorf(`data.vocab_size = %d: only for data.vocab = "bpe", not %q`, d.VocabSize, d.Vocab)
	}
	switch text := slices.Contains(textData, d.Name); {
	case text && d.BlockSize < 1:
		return errorf("data.block_size = %d: required for data.name = %q, the context length in tokens (at least 1)", d.BlockSize, d.Name)
	case !text && d.BlockSize != 0:
		return errorf("data.block_size = %d: only for text data (data.name = \"text\", \"shakespeare\" or \"tokens\"), not %q", d.BlockSize, d.Name)
	}
	if err := atLeast("data.batch_size", d.BatchSize, 1); err != nil {
		return err
	}
	if err := finite("data.test_fraction", d.TestFraction); err != nil {
		return err
	}
	if !(d.TestFraction >= 0 && d.TestFraction < 1) {
		return errorf("data.test_fraction = %s: must be in [0, 1)", formatFloat(d.TestFraction))
	}
	if err := finite("data.validation_fraction", d.ValidationFraction); err != nil {
		return err
	}
	if !(d.ValidationFraction >= 0 && d.ValidationFraction < 1) {
		return errorf("data.validation_fraction = %s: must be in [0, 1)", formatFloat(d.ValidationFraction))
	}
	return nil
}

func (c *Config) validateModel() error {
	if len(c.Model.Layers) == 0 {
		return errorf("model.layers: at least one layer is required")
	}
	if err := oneOf("model.recompute", c.Model.Recompute, names(nn.Recomputes)); err != nil {
		return err
	}
	// each layer checked as a copy: the defaults the checks fill in stay
	// out of the config (and of the hash checkpoints record of it)
	for i, l := range c.Model.Layers {
		p := fmt.Sprintf("model.layers[%d]", i)
		if i == len(c.Model.Layers)-1 && l.unitsFromData() {
			// the output width comes from the data (CheckData): check the rest
			l.Units, l.given = max(1, l.Shards), append(slices.Clone(l.given), "units")
		}
		if err := l.validate(p); err != nil {
			return err
		}
	}
	return nil
}

// unitsFromData reports whether the layer takes units and leaves it to the
// data, which only the model's last layer may.
func (l *Layer) unitsFromData() bool {
	return slices.Contains(layerKeys[l.Type], "units") && !l.isGiven("units") && l.Units == 0
}

// validate checks one layer; p is its path, e.g. "model.layers[2]".
func (l *Layer) validate(p string) error {
	if l.Type == "" {
		return errorf("%s.type: required (one of %s)", p, strings.Join(layerTypes, ", "))
	}
	if err := oneOf(p+".type", l.Type, layerTypes); err != nil {
		return err
	}
	keys := layerKeys[l.Type]
	rv := reflect.ValueOf(*l)
	for _, f := range keyFields(layerType) {
		k := f.key
		if slices.Contains(keys, k) || !l.isGiven(k) {
			continue
		}
		which := "only type"
		if len(keys) > 1 {
			which = "keys " + strings.Join(keys, ", ")
		}
		return errorf("%s.%s = %s: not a key of a %s layer (it takes %s)",
			p, k, formatValue(tomlValue(rv.FieldByIndex(f.index))), l.Type, which)
	}
	// the check sets the defaults that depend on other keys
	if err := nn.CheckSpec(&l.Spec, l.isGiven); err != nil {
		var ke *nn.KeyError
		if errors.As(err, &ke) && ke.Value != nil {
			return errorf("%s.%s = %s: %s", p, ke.Key, formatValue(ke.Value), ke.Why)
		}
		return errorf("%s.%v", p, err)
	}
	return nil
}

// isGiven reports whether the layer's key was set. For a layer that came
// from a file or a --set that is exact; for one built in Go it is a guess:
// the key holds neither its zero value nor NewLayer's default.
func (l *Layer) isGiven(k string) bool {
	if l.tracked {
		return slices.Contains(l.given, k)
	}
	i, _ := field(layerType, k)
	v := reflect.ValueOf(*l).FieldByIndex(i)
	return !v.IsZero() && !v.Equal(reflect.ValueOf(NewLayer("")).FieldByIndex(i))
}

// tomlValue returns a Go value as the TOML decoder would give it, for
// formatValue.
func tomlValue(v reflect.Value) any {
	switch v.Kind() {
	case reflect.Int, reflect.Int64:
		return v.Int()
	case reflect.Uint64:
		return v.Uint()
	case reflect.String: // a named string type (nn.Init) too
		return v.String()
	case reflect.Slice, reflect.Array:
		a := make([]any, v.Len())
		for i := range a {
			a[i] = tomlValue(v.Index(i))
		}
		return a
	}
	return v.Interface()
}

func (c *Config) validateLoss() error {
	return oneOf("loss.type", c.Loss.Type, names(nn.Losses))
}

func (c *Config) validateOptimizer() error {
	o := c.Optimizer
	if err := oneOf("optimizer.type", o.Type, optimizerTypes); err != nil {
		return err
	}
	if err := finite("optimizer.lr", o.LR, "optimizer.momentum", o.Momentum,
		"optimizer.weight_decay", o.WeightDecay, "optimizer.betas[0]", o.Betas[0],
		"optimizer.betas[1]", o.Betas[1], "optimizer.eps", o.Eps,
		"optimizer.clip_norm", o.ClipNorm, "optimizer.clip_value", o.ClipValue); err != nil {
		return err
	}
	if !(o.LR > 0) {
		return errorf("optimizer.lr = %s: must be > 0", formatFloat(o.LR))
	}
	if !(o.Momentum >= 0 && o.Momentum < 1) {
		return errorf("optimizer.momentum = %s: must be in [0, 1)", formatFloat(o.Momentum))
	}
	if o.Momentum != 0 && o.Type != "sgd" {
		return errorf(`optimizer.momentum = %s: only used by optimizer.type = "sgd", not %q (%s has optimizer.betas)`,
			formatFloat(o.Momentum), o.Type, o.Type)
	}
	if o.Nesterov && o.Type != "sgd" {
		return errorf(`optimizer.nesterov = true: only used by optimizer.type = "sgd", not %q`, o.Type)
	}
	if o.Nesterov && o.Momentum == 0 {
		return errorf("optimizer.nesterov = true: needs optimizer.momentum > 0")
	}
	if err := oneOf("optimizer.decay", o.Decay, decays); err != nil {
		return err
	}
	if o.WeightDecay < 0 {
		return errorf("optimizer.weight_decay = %s: must be >= 0", formatFloat(o.WeightDecay))
	}
	for i, b := range o.Betas {
		if !(b >= 0 && b < 1) {
			return errorf("optimizer.betas[%d] = %s: must be in [0, 1)", i, formatFloat(b))
		}
	}
	if !(o.Eps > 0) {
		return errorf("optimizer.eps = %s: must be > 0", formatFloat(o.Eps))
	}
	if o.ClipNorm < 0 {
		return errorf("optimizer.clip_norm = %s: must be >= 0 (0 is off)", formatFloat(o.ClipNorm))
	}
	if o.ClipValue < 0 {
		return errorf("optimizer.clip_value = %s: must be >= 0 (0 is off)", formatFloat(o.ClipValue))
	}
	return nil
}

func (c *Config) validateSchedule() error {
	s := c.Schedule
	if err := oneOf("schedule.type", s.Type, scheduleTypes); err != nil {
		return err
	}
	if err := atLeast("schedule.warmup_steps", s.WarmupSteps, 0); err != nil {
		return err
	}
	if err := atLeast("schedule.step_size", s.StepSize, 0); err != nil {
		return err
	}
	if s.Type == "step" && s.StepSize < 1 {
		return errorf(`schedule.step_size = %d: must be at least 1 for schedule.type = "step"`, s.StepSize)
	}
	if err := finite("schedule.gamma", s.Gamma); err != nil {
		return err
	}
	if !(s.Gamma > 0 && s.Gamma <= 1) {
		return errorf("schedule.gamma = %s: must be in (0, 1]", formatFloat(s.Gamma))
	}
	if err := finite("schedule.min_lr", s.MinLR); err != nil {
		return err
	}
	if s.MinLR != 0 && s.Type != "cosine" {
		return errorf(`schedule.min_lr = %s: only used by schedule.type = "cosine", not %q`, formatFloat(s.MinLR), s.Type)
	}
	if !(s.MinLR >= 0 && s.MinLR <= c.Optimizer.LR) {
		return errorf("schedule.min_lr = %s: must be in [0, optimizer.lr = %s]", formatFloat(s.MinLR), formatFloat(c.Optimizer.LR))
	}
	return nil
}

func (c *Config) validatePipeline() error {
	p := c.Pipeline
	if err := oneOf("pipeline.schedule", p.Schedule, pipelineSchedules); err != nil {
		return err
	}
	if int(p.MicroBatches) > c.Data.BatchSize {
		return errorf("pipeline.micro_batches = %d exceeds data.batch_size = %d", p.MicroBatches, c.Data.BatchSize)
	}
	if err := atLeast("pipeline.stages", p.Stages, 0); err != nil {
		return err
	}
	if p.Stages > len(c.Model.Layers) {
		return errorf("pipeline.stages = %d exceeds the %d layers of model.layers", p.Stages, len(c.Model.Layers))
	}
	if err := atLeast("pipeline.chunks", p.Chunks, 0); err != nil {
		return err
	}
	if s, err := actors.ParseSchedule(p.Schedule); p.Chunks > 1 && (err != nil || !s.Chunked()) && p.Schedule != "auto" {
		return errorf("pipeline.chunks = %d needs pipeline.schedule = \"interleaved\" or \"zbv\", not %q", p.Chunks, p.Schedule)
	}
	if n := max(1, p.Stages) * max(1, p.Chunks); p.Chunks > 1 && n > len(c.Model.Layers) {
		return errorf("pipeline.stages = %d of pipeline.chunks = %d positions each need %d layers; model.layers has %d", p.Stages, p.Chunks, n, len(c.Model.Layers))
	}
	if err := atLeast("pipeline.gemm_threads", p.GEMMThreads, 0); err != nil {
		return err
	}
	if int(p.Replicas) > c.Data.BatchSize {
		return errorf("pipeline.replicas = %d exceeds data.batch_size = %d", p.Replicas, c.Data.BatchSize)
	}
	if p.Listen != "" {
		if err := checkAddr(p.Listen, 0); err != nil {
			return errorf("pipeline.listen = %q: %v", p.Listen, err)
		}
	}
	if p.Advertise != "" {
		if err := checkHostPort(p.Advertise); err != nil {
			return errorf("pipeline.advertise = %q: %v", p.Advertise, err)
		}
	}
	if err := atLeast("pipeline.hosts_min", p.HostsMin, 0); err != nil {
		return err
	}
	if p.HostsMin > len(p.Hosts) {
		return errorf("pipeline.hosts_min = %d exceeds the %d pipeline.hosts", p.HostsMin, len(p.Hosts))
	}
	seen := map[string]int{}
	for i, h := range p.Hosts {
		if err := checkHostPort(h); err != nil {
			return errorf("pipeline.hosts[%d] = %q: %v", i, h, err)
		}
		if j, dup := seen[h]; dup {
			return errorf("pipeline.hosts[%d] = %q: the same host as pipeline.hosts[%d]", i, h, j)
		}
		seen[h] = i
	}
	return nil
}

// checkHostPort checks that s is a host:port with a non-empty host and a
// numeric port in 1..65535.
func checkHostPort(s string) error { return checkAddr(s, 1) }

// checkAddr is checkHostPort taking ports from lo on (0: any free one).
func checkAddr(s string, lo int) error {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		var ae *net.AddrError
		if errors.As(err, &ae) {
			return fmt.Errorf("not a host:port (%s)", ae.Err)
		}
		return fmt.Errorf("not a host:port (%v)", err)
	}
	if host == "" {
		return fmt.Errorf("not a host:port (missing host)")
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < lo || n > 65535 || strings.TrimLeft(port, "0123456789") != "" {
		return fmt.Errorf("port %q: want a number in %d..65535", port, lo)
	}
	return nil
}

func (c *Config) validateTrain() error {
	t := c.Train
	if err := atLeast("train.epochs", t.Epochs, 1); err != nil {
		return err
	}
	if err := atLeast("train.max_steps", t.MaxSteps, 0); err != nil {
		return err
	}
	if err := atLeast("train.eval_every", t.EvalEvery, 0); err != nil {
		return err
	}
	if t.CheckpointDir == "" {
		return errorf(`train.checkpoint_dir = "": must not be empty`)
	}
	if t.Name != "" && (t.Name != filepath.Base(t.Name) || t.Name == "." || t.Name == "..") {
		return errorf("train.name = %q: must be a folder's name, not a path", t.Name)
	}
	if err := atLeast("train.keep_checkpoints", t.KeepCheckpoints, 0); err != nil {
		return err
	}
	if err := atLeast("train.checkpoint_every", t.CheckpointEvery, 0); err != nil {
		return err
	}
	if err := atLeast("train.early_stop", t.EarlyStop, 0); err != nil {
		return err
	}
	if t.EarlyStop > 0 && !(c.Data.ValidationFraction > 0) {
		return errorf("train.early_stop = %d needs a validation split: set data.validation_fraction, e.g. 0.1", t.EarlyStop)
	}
	if err := oneOf("train.precision", t.Precision, precisions); err != nil {
		return err
	}
	if err := atLeast("train.restarts", t.Restarts, 0); err != nil {
		return err
	}
	if err := atLeast("train.snapshot_every", t.SnapshotEvery, 0); err != nil {
		return err
	}
	if d, err := time.ParseDuration(t.RestartWait); err != nil || d <= 0 {
		return errorf("train.restart_wait = %q: want a positive duration, e.g. \"30s\" or \"2m\"", t.RestartWait)
	}
	return oneOf("train.bf16_arithmetic", t.BF16Arithmetic, arithmetics)
}

func (c *Config) validateLog() error {
	l := c.Log
	if l.Dir == "" {
		return errorf(`log.dir = "": must not be empty`)
	}
	if l.Metrics != "" {
		if _, port, err := net.SplitHostPort(l.Metrics); err != nil || port == "" {
			return errorf("log.metrics = %q: want HOST:PORT, e.g. \"127.0.0.1:9090\" (port 0 picks a free one)", l.Metrics)
		}
	}
	return atLeast("log.every", l.Every, 1)
}

// CheckData checks the config against the data it will train on: features
// inputs per sample, and classes classes (0 for a regression set with one
// numeric target; a text's vocabulary). It first sets what the model takes
// from the data: the units of a last layer that leaves them out, and an
// embedding's vocabulary. The model's output width, the units of its last
// linear layer, must be the number of classes (1 for regression), and
// cross_entropy needs classes.
func (c *Config) CheckData(features, classes int) error {
	name := c.Data.Name
	layers := c.Model.Layers
	if n := len(layers); n > 0 && layers[n-1].unitsFromData() {
		layers[n-1].Units = max(1, classes) // a regression's one output
	}
	for i := range layers {
		if layers[i].TakesVocab() {
			layers[i].Vocab = classes
		}
	}
	if features < 1 {
		return errorf("data %q has %d features per sample; want at least 1", name, features)
	}
	if classes < 0 {
		return errorf("data %q has %d classes; want 0 (regression) or more", name, classes)
	}
	width, last := features, -1
	for i, l := range c.Model.Layers {
		if w, ok := l.Spec.Width(); ok {
			width, last = w, i
		}
	}
	if classes == 0 {
		if c.Loss.Type == string(nn.CrossEntropy) {
			return errorf("loss.type = %q: needs class labels, but data %q has a numeric target (use mse)", c.Loss.Type, name)
		}
		if width == 1 {
			return nil
		}
		if last < 0 {
			return errorf("the model has no linear layer, so its output is the %d features of data %q; its numeric target needs 1 output", width, name)
		}
		return errorf("model.layers[%d].units = %d does not match the single numeric target of data %q (want 1)", last, width, name)
	}
	if width == classes {
		return nil
	}
	if last < 0 {
		return errorf("the model has no linear layer, so its output is the %d features of data %q, which does not match its %d classes", width, name, classes)
	}
	return errorf("model.layers[%d].units = %d does not match the %d classes of data %q", last, width, classes, name)
}
