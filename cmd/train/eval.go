package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/pipetrain/pipetrain/cmd/train/internal/config"
	"github.com/pipetrain/pipetrain/dataset"
	"github.com/pipetrain/pipetrain/model"
)

const evalUsage = "usage: train eval --checkpoint DIR [--config FILE] [--set KEY=VALUE]... [--log-format auto|json|console]"

// evalResult is the line eval prints.
type evalResult struct {
	Split      string   `json:"split"`
	Loss       float64  `json:"loss"`
	Accuracy   *float64 `json:"accuracy,omitempty"`      // classifiers only
	BitsPerChr *float64 `json:"bits_per_char,omitempty"` // text models only: per token
	BitsPerB   *float64 `json:"bits_per_byte,omitempty"` // text models only
	Rows       int      `json:"rows"`
	Checkpoint string   `json:"checkpoint"`
	Step       int      `json:"step"`
	Data       string   `json:"data"`
}

// runEval evaluates a checkpoint's model on the test split of the data it
// was trained on, loaded as its run loaded it (--set data.… may change
// that), prints the result as one JSON line and logs it as an eval event.
// With --config, the model and data are the config's, for a checkpoint
// that does not record them (an older pipetrain wrote it).
func runEval(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("eval", flag.ContinueOnError)
	dir := fs.String("checkpoint", "", "a checkpoint folder (step-…), or a checkpoint_dir: its newest")
	cfgPath := fs.String("config", "", "the config the checkpoint was trained with, for one that does not record its model or data")
	var sets setFlags
	fs.Var(&sets, "set", "override seed, a data.* key or log.dir: KEY=VALUE (repeatable)")
	logFormat := fs.String("log-format", "auto", "stderr log format: auto, json or console")
	if err := parseFlags(fs, args, evalUsage); err != nil {
		return err
	}
	if *dir == "" {
		return badInputf("eval: --checkpoint DIR is required")
	}
	if err := checkLogFormat(*logFormat); err != nil {
		return err
	}
	var m *model.Model
	var trained, c *config.Config
	var err error
	if *cfgPath == "" {
		if m, err = loadModel(*dir); err != nil {
			return err
		}
		if m.Data == nil {
			return badInputf("eval: %s does not record the data set it was trained on (an older pipetrain wrote it): give the config it was trained with as --config", m.Checkpoint.Dir)
		}
		if c, err = dataConfig(m.Data, sets); err != nil {
			return err
		}
	} else if trained, c, err = trainedConfig(*cfgPath, sets); err != nil {
		return err
	}
	log, err := openRunLog(c.Log.Dir, *logFormat, stderr, false)
	if err != nil {
		return err
	}
	if m == nil {
		m, err = loadTrained(ctx, *dir, trained, c, log)
	}
	var res *evalResult
	if err == nil {
		res, err = evaluateModel(ctx, m, c, log)
	}
	if cerr := log.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	line, err := json.Marshal(res)
	if err != nil {
		return fmt.Errorf("eval: %v", err)
	}
	_, err = fmt.Fprintf(stdout, "%s\n", line)
	return err
}

// trainedConfig loads eval's --config: as the run was trained with it, and
// with the --set overrides of the data applied.
func trainedConfig(path string, sets []string) (trained, c *config.Config, err error) {
	if trained, err = config.Load(path, nil); err != nil {
		return nil, nil, badInput(err)
	}
	copied := *trained // the overrides change seed, [data] and log.dir: values, not shared slices
	if err := copied.SetData(sets); err != nil {
		return nil, nil, badInput(err)
	}
	return trained, &copied, nil
}

// loadTrained loads the model of checkpoint dir, trained with the config
// trained (eval's --config, c with its overrides): its own description if
// it holds one, else one made from c and its data as the run made it. A
// checkpoint of another config is refused.
func loadTrained(ctx context.Context, dir string, trained, c *config.Config, log *runLog) (*model.Model, error) {
	vet := func(ck model.Checkpoint) error {
		if !sameConfig(trained, ck.ConfigHash) {
			return badInputf("eval: %s was written for a different model, data or optimizer than the --config", ck.Dir)
		}
		return nil
	}
	describe := func() (model.Description, error) {
		r := &trainRun{cfg: c, log: log}
		train, _, _, in, err := r.load(ctx)
		if err != nil {
			return model.Description{}, err
		}
		if r.text != nil {
			r.text.close()
		}
		return r.describe(train, in), nil
	}
	m, err := model.LoadAs(dir, describe, vet)
	var exit *exitError
	if err != nil && !errors.As(err, &exit) {
		return nil, badInputf("--checkpoint %s: %v", dir, err)
	}
	return m, err
}

// loadModel loads the model of --checkpoint dir; any failure is the
// command line's (exit 2).
func loadModel(dir string) (*model.Model, error) {
	m, err := model.Load(dir)
	if errors.Is(err, model.ErrNoDescription) {
		return nil, badInputf("--checkpoint %s: %w (train eval --config FILE evaluates it with the config it was trained with; train --config FILE --resume goes on from it)", dir, err)
	}
	if err != nil {
		return nil, badInputf("--checkpoint %s: %w", dir, err)
	}
	return m, nil
}

// dataConfig is the config of the data a model was trained on, with the
// --set overrides applied.
func dataConfig(d *model.Data, sets []string) (*config.Config, error) {
	c := config.Default()
	c.Seed = d.Seed
	c.Data.Name, c.Data.Path, c.Data.Download = d.Name, d.Path, d.Download
	c.Data.LabelColumn, c.Data.TestFraction, c.Data.ValidationFraction = d.LabelColumn, d.TestFraction, d.ValidationFraction
	if d.Vocab != "" {
		c.Data.Vocab, c.Data.VocabSize, c.Data.BlockSize = d.Vocab, d.VocabSize, d.BlockSize
	}
	if err := c.SetData(sets); err != nil {
		return nil, badInput(err)
	}
	return c, nil
}

// evaluateModel loads the test split c names, prepares it as the model's
// training did, evaluates the model on it in training's chunks and logs
// the eval event.
func evaluateModel(ctx context.Context, m *model.Model, c *config.Config, log *runLog) (*evalResult, error) {
	name := c.Data.Name
	if rawDivide(name) != m.Input.Divide || (name == "csv") != (m.Input.Mean != nil) {
		return nil, badInputf("eval: data.name = %q: the model was trained on %q, whose raw values became features differently", name, m.Input.Data)
	}
	var train, test *dataset.Set
	var vocab dataset.Vocab // text models'
	var err error
	if isText(c) {
		var given *dataset.Vocab
		if m.IsText() && (m.Vocab == dataset.VocabGPT2 || m.Vocab == dataset.VocabBPE) {
			v, err := checkpointVocab("eval", m)
			if err != nil {
				return nil, err
			}
			if c.Data.Vocab != m.Vocab {
				return nil, badInputf("eval: data.vocab = %q: the model was trained on vocabulary %q", c.Data.Vocab, m.Vocab)
			}
			given = &v
		}
		td, err := loadText(ctx, c, log, given)
		if err != nil {
			return nil, err
		}
		defer td.close()
		train, test, vocab = td.meta, td.test, td.vocab
	} else if train, test, err = loadSplits(ctx, c, log); err != nil {
		return nil, err
	}
	switch {
	case test.Len() == 0:
		return nil, badInputf("eval: data %q: the test split is empty (data.test_fraction = %v)", name, c.Data.TestFraction)
	case test.Features != m.Features():
		return nil, badInputf("eval: data %q has %d features, the model takes %d", name, test.Features, m.Features())
	case m.Regression() && test.Targets == nil:
		return nil, badInputf("eval: data %q has no numeric target for the regression model", name)
	case !m.Regression() && !slices.Equal(test.Classes, m.Classes):
		return nil, badInputf("eval: data %q has the classes %q, the model %q", name, test.Classes, m.Classes)
	}
	if m.Input.Mean != nil {
		z := &dataset.Standardizer{Mean: m.Input.Mean, Std: m.Input.Std}
		fit, _, err := holdOut(c, train)
		if err != nil {
			return nil, err
		}
		checkStandardizer(log, z, dataset.FitStandardizer(fit))
		test = z.Apply(test) // the checkpoint's, as the run's, not refitted
	}
	loss, acc, err := m.Evaluate(test.X, target(test, m.Regression()), evalChunk(test))
	if err != nil {
		return nil, fmt.Errorf("eval: %v", err)
	}
	if math.IsNaN(loss) || math.IsInf(loss, 0) {
		return nil, fmt.Errorf("eval: the loss is %v", loss)
	}
	ck := m.Checkpoint
	res := &evalResult{Split: "test", Loss: loss, Rows: test.Len(), Checkpoint: ck.Dir, Step: ck.Step, Data: name}
	ev := log.event("eval").Int("epoch", stepEpoch(ck)).Int("step", ck.Step).Str("split", "test").Float64("loss", loss)
	if !math.IsNaN(acc) {
		res.Accuracy = &acc
		ev = ev.Float64("accuracy", acc)
	}
	if m.IsText() {
		bpc := bitsPerChar(loss)
		res.BitsPerChr = &bpc
		ev = ev.Float64("bits_per_char", bpc)
		if vocab.Size() > 0 {
			bpb := bitsPerByte(loss, vocab, test.Labels)
			res.BitsPerB = &bpb
			ev = ev.Float64("bits_per_byte", bpb)
		}
	}
	ev.Int("rows", test.Len()).Str("checkpoint", ck.Dir).Str("data", name).Msg("")
	return res, nil
}

// stepEpoch is the epoch, from 1, in which a checkpoint's last step was
// taken, as training's eval event at that step gave it.
func stepEpoch(ck model.Checkpoint) int {
	if ck.Batch > 0 {
		return ck.Epoch + 1
	}
	return max(1, ck.Epoch)
}

// checkStandardizer warns when the training split no longer gives the
// statistics the model was trained with: the data changed since, or --set
// names other data. The checkpoint's are used either way, as the model
// expects its features so.
func checkStandardizer(log *runLog, recorded, refit *dataset.Standardizer) {
	for j := range recorded.Mean {
		if recorded.Mean[j] != refit.Mean[j] || recorded.Std[j] != refit.Std[j] {
			log.Warn().Str("event", "standardization").Int("feature", j).
				Float64("recorded_mean", recorded.Mean[j]).Float64("refit_mean", refit.Mean[j]).
				Float64("recorded_std", recorded.Std[j]).Float64("refit_std", refit.Std[j]).
				Msg("the training split's statistics differ from the checkpoint's; the test split is standardized with the checkpoint's")
			return
		}
	}
}
