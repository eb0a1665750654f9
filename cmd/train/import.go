package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/rs/zerolog"

	"github.com/pipetrain/pipetrain/cmd/train/internal/config"
	"github.com/pipetrain/pipetrain/internal/checkpoint"
	"github.com/pipetrain/pipetrain/model"
	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/tensor"
)

const importUsage = "usage: train import --hf FILE.safetensors --config FILE --out DIR [--set KEY=VALUE]..."

// importResult is the line import prints.
type importResult struct {
	Checkpoint string `json:"checkpoint"`
	Tensors    int    `json:"tensors"`
	Parameters int    `json:"parameters"` // the model's, the tied head's copy counted once
	From       string `json:"from"`
}

// runImport turns GPT-2's weights in Hugging Face's layout into a
// checkpoint of the --config's model: --out DIR becomes a checkpoint_dir
// holding the one checkpoint step-00000000 (step 0, no optimizer state),
// which `train --config FILE --set train.checkpoint_dir=DIR --resume`
// fine-tunes and `train eval` and `train sample` read. A file that does
// not fit the config is exit 2, naming the tensor; nothing is written then.
func runImport(ctx context.Context, args []string, stdout, _ io.Writer) error {
	fs := flag.NewFlagSet("import", flag.ContinueOnError)
	file := fs.String("hf", "", "GPT-2's weights in Hugging Face's layout (model.safetensors)")
	cfgPath := fs.String("config", "", "the config of the model (a GPT: embedding, transformer_blocks, layernorm, linear head)")
	out := fs.String("out", "", "the checkpoint_dir to write the checkpoint into: new or empty")
	var sets setFlags
	fs.Var(&sets, "set", "override a config key: KEY=VALUE (repeatable)")
	if err := parseFlags(fs, args, importUsage); err != nil {
		return err
	}
	switch {
	case *file == "":
		return badInputf("import: --hf FILE.safetensors is required (%s)", importUsage)
	case *cfgPath == "":
		return badInputf("import: --config FILE is required (%s)", importUsage)
	case *out == "":
		return badInputf("import: --out DIR is required (%s)", importUsage)
	}
	c, err := config.Load(*cfgPath, sets)
	if err != nil {
		return badInput(err)
	}
	if err := checkImportDir(*out); err != nil {
		return err
	}
	d, err := importedModel(ctx, c)
	if err != nil {
		return err
	}
	f, err := os.Open(*file)
	if err != nil {
		return badInputf("import: --hf: %v", err)
	}
	hf, _, err := checkpoint.DecodeWide(f)
	f.Close()
	if err != nil {
		return badInputf("import: --hf %s: %v", *file, err)
	}
	weights, err := model.FromHF(d, hf)
	if err != nil {
		return badInputf("import: --hf %s does not fit the model of --config %s: %v", *file, *cfgPath, err)
	}
	m, err := model.New(d, weights) // what eval, sample and --resume will load
	if err != nil {
		return fmt.Errorf("import: %v", err)
	}
	abs, err := filepath.Abs(*file)
	if err != nil {
		abs = *file
	}
	meta := checkpoint.Meta{
		Version: 1, Seed: c.Seed, OptimizerType: c.Optimizer.Type, ConfigHash: configHash(c), Precision: precision(c).String(),
		Extra: map[string]any{"imported_from": abs},
	}
	if meta.Model, err = json.Marshal(d); err != nil {
		return fmt.Errorf("import: %v", err)
	}
	dir, err := checkpoint.Save(*out, meta, weights, nil)
	if err != nil {
		os.Remove(*out) // the folder Save made, if it is still empty
		return badInputf("import: --out %s: %v", *out, err)
	}
	line, err := json.Marshal(importResult{Checkpoint: dir, Tensors: len(weights), Parameters: parameters(m.Description, weights), From: abs})
	if err != nil {
		return fmt.Errorf("import: %v", err)
	}
	_, err = fmt.Fprintf(stdout, "%s\n", line)
	return err
}

// checkImportDir refuses an --out that holds anything: the import would mix
// with another run's checkpoints, and --resume take the newest of them.
func checkImportDir(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case os.IsNotExist(err):
		return nil
	case err != nil:
		return badInputf("import: --out %s: %v", dir, err)
	case len(entries) > 0:
		return badInputf("import: --out %s is not empty (it holds %s): give a new folder", dir, entries[0].Name())
	}
	return nil
}

// importedModel is the description of c's model as training makes it
// (modelDescription), for a text model, whose vocabulary is read from
// the text only when it is made from it.
func importedModel(ctx context.Context, c *config.Config) (model.Description, error) {
	if !isText(c) {
		return model.Description{}, badInputf("import: data.name = %q: GPT-2's weights make a language model: want data.name = \"text\" or \"shakespeare\"", c.Data.Name)
	}
	v, err := configVocab(ctx, c, &runLog{Logger: zerolog.Nop()})
	if err != nil {
		return model.Description{}, err
	}
	meta := textMeta(c.Data.Name, v, c.Data.BlockSize)
	if err := c.CheckData(meta.Features, len(meta.Classes)); err != nil {
		return model.Description{}, badInput(err)
	}
	if _, err := nn.OutShapes(modelSpecs(c), meta.SampleShape()); err != nil {
		return model.Description{}, badInputf("model.layers: %v", err)
	}
	return modelDescription(c, meta, model.Input{Data: c.Data.Name, Divide: 1}, v.Kind()), nil
}

// parameters counts the model's parameters, a tied head's copy of the
// embedding once.
func parameters(d model.Description, weights map[string]*tensor.Tensor) int {
	n := 0
	for _, w := range weights {
		n += w.Size()
	}
	for _, t := range nn.Ties(d.Layers) {
		_, head := t.Names()
		n -= weights[head].Size()
	}
	return n
}
