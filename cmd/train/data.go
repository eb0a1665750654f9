package main

import (
	"context"
	"path/filepath"

	"github.com/pipetrain/pipetrain/cmd/train/internal/config"
	"github.com/pipetrain/pipetrain/dataset"
	"github.com/pipetrain/pipetrain/model"
	"github.com/pipetrain/pipetrain/nn"
)

// spiralsRows is the size of the synthetic spirals set.
const spiralsRows = 3000

// loadData returns the training and test sets the config names, a CSV
// file's standardized by the training split's statistics, and how raw
// inputs became their features. Every error is the user's input being
// wrong (exit 2).
func loadData(ctx context.Context, c *config.Config, log *runLog) (train, val, test *dataset.Set, in model.Input, err error) {
	in = model.Input{Data: c.Data.Name, Divide: rawDivide(c.Data.Name)}
	if train, test, err = loadSplits(ctx, c, log); err != nil {
		return nil, nil, nil, in, err
	}
	if train, val, err = holdOut(c, train); err != nil {
		return nil, nil, nil, in, err
	}
	if c.Data.Name == "csv" {
		z := dataset.FitStandardizer(train)
		train, test = z.Apply(train), z.Apply(test)
		if val != nil {
			val = z.Apply(val)
		}
		in.Mean, in.Std = z.Mean, z.Std
	}
	return train, val, test, in, nil
}

// load loads the data the config names: a set's splits, or a text's
// (r.text then holds its training tokens).
func (r *trainRun) load(ctx context.Context) (train, val, test *dataset.Set, in model.Input, err error) {
	c := r.cfg
	if !isText(c) {
		return loadData(ctx, c, r.log)
	}
	if r.text, err = loadText(ctx, c, r.log, nil); err != nil {
		return nil, nil, nil, in, err
	}
	return r.text.meta, r.text.val, r.text.test, model.Input{Data: c.Data.Name, Divide: 1}, nil
}

// validationSeed sets the validation split's draw apart from the test
// split's, which uses the config's seed itself.
const validationSeed = 0x56414c // "VAL"

// holdOut splits data.validation_fraction of the training rows off as the
// validation set (nil when the fraction is 0), seeded.
func holdOut(c *config.Config, train *dataset.Set) (rest, val *dataset.Set, err error) {
	vf := c.Data.ValidationFraction
	if vf == 0 {
		return train, nil, nil
	}
	rest, val, err = dataset.Split(train, vf, c.Seed+validationSeed)
	if err != nil {
		return nil, nil, badInputf("data.validation_fraction = %v: %v", vf, err)
	}
	return rest, val, nil
}

// rawDivide is what the data set divided its raw values by.
func rawDivide(name string) float64 {
	switch name {
	case "mnist", "fashion-mnist":
		return 255
	case "digits":
		return 16
	}
	return 1
}

// dataRecord is what a checkpoint records of the data the model was trained
// on. The path is made absolute, so that train eval finds the data from
// any folder.
func dataRecord(c *config.Config) *model.Data {
	d := c.Data
	if d.Path != "" {
		if abs, err := filepath.Abs(d.Path); err == nil {
			d.Path = abs
		}
	}
	md := &model.Data{Seed: c.Seed, Name: d.Name, Path: d.Path, Download: d.Download, LabelColumn: d.LabelColumn,
		TestFraction: d.TestFraction, ValidationFraction: d.ValidationFraction}
	if isText(c) {
		md.Vocab, md.VocabSize, md.BlockSize = d.Vocab, d.VocabSize, d.BlockSize
	}
	return md
}

// loadSplits loads the data set's training and test splits, a CSV file's
// not yet standardized.
func loadSplits(ctx context.Context, c *config.Config, log *runLog) (train, test *dataset.Set, err error) {
	d := c.Data
	split := func(s *dataset.Set, err error) (*dataset.Set, *dataset.Set, error) {
		if err != nil {
			return nil, nil, badInput(err)
		}
		tr, te, err := dataset.Split(s, d.TestFraction, c.Seed)
		if err != nil {
			return nil, nil, badInputf("data.test_fraction = %v: %v", d.TestFraction, err)
		}
		return tr, te, nil
	}
	switch d.Name {
	case "digits":
		return split(dataset.Digits())
	case "spirals":
		return split(dataset.Spirals(spiralsRows, 3, 0.2, c.Seed), nil)
	case "csv":
		return split(dataset.LoadCSV(d.Path, d.LabelColumn))
	case "mnist", "fashion-mnist":
		dir := d.Path
		if dir == "" {
			if !d.Download {
				return nil, nil, badInputf("data.path is empty: give the folder holding the %s IDX files, or set data.download = true", d.Name)
			}
			log.event("download").Str("data", d.Name).Msg("fetching data set into the cache")
			if dir, err = dataset.Download(ctx, d.Name, dataset.DownloadOptions{}); err != nil {
				return nil, nil, badInputf("data.download: %v (with the four %s IDX files at hand, --set data.path=DIR trains from them without a download)", err, d.Name)
			}
		}
		tr, te, err := dataset.LoadIDX(dir, d.Name)
		if err != nil {
			return nil, nil, badInput(err)
		}
		return tr, te, nil
	}
	return nil, nil, badInputf("data.name = %q: unknown data set", d.Name)
}

// target returns what the loss compares outputs with: the set's numeric targets
// for a regression model (one output, mse, numeric targets), labels otherwise.
func target(s *dataset.Set, regression bool) nn.Target {
	if regression {
		return nn.Target{Values: s.Targets}
	}
	// a text window's rows have a label a token
	return nn.Target{Labels: s.Labels, PerRow: len(s.Labels) / max(1, s.Len())}
}

// isRegression reports whether the model regresses the set's numeric target.
func isRegression(c *config.Config, s *dataset.Set) bool {
	return c.Loss.Type == string(nn.MSE) && s.Targets != nil && lastUnits(c) == 1
}

// lastUnits returns the output width the model's last layer that sets one
// (a linear layer's units) gives it.
func lastUnits(c *config.Config) int {
	for i := len(c.Model.Layers) - 1; i >= 0; i-- {
		if w, ok := c.Model.Layers[i].Spec.Width(); ok {
			return w
		}
	}
	return 0
}
