package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/pipetrain/pipetrain/internal/checkpoint"
	"github.com/pipetrain/pipetrain/model"
)

const exportUsage = "usage: train export --checkpoint DIR (--onnx FILE | --hf OUT [--drop-head-bias])"

// runExport writes the model of a checkpoint (or of the newest under a
// checkpoint_dir) as an ONNX file, or as a folder in Hugging Face's GPT-2
// layout, atomically: the file or folder is whole or, on any error,
// untouched.
func runExport(_ context.Context, args []string, _, _ io.Writer) error {
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	dir := fs.String("checkpoint", "", "a checkpoint folder, or a checkpoint_dir for its newest")
	file := fs.String("onnx", "", "the ONNX file to write")
	hf := fs.String("hf", "", "the folder to write model.safetensors and config.json into, in Hugging Face's GPT-2 layout")
	dropBias := fs.Bool("drop-head-bias", false, "--hf: write a head whose bias is not zero without it (GPT-2's lm_head has none)")
	if err := parseFlags(fs, args, exportUsage); err != nil {
		return err
	}
	switch {
	case *dir == "":
		return badInputf("export: --checkpoint DIR is required (%s)", exportUsage)
	case *file == "" && *hf == "":
		return badInputf("export: --onnx FILE or --hf OUT is required (%s)", exportUsage)
	case *file != "" && *hf != "":
		return badInputf("export: --onnx and --hf: give one (%s)", exportUsage)
	case *dropBias && *hf == "":
		return badInputf("export: --drop-head-bias goes with --hf (%s)", exportUsage)
	}
	m, err := loadModel(*dir)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if *hf != "" {
		return exportHF(m, *hf, model.HFOptions{DropHeadBias: *dropBias})
	}
	if err := writeFileAtomic(*file, m.ExportONNX); err != nil {
		return badInputf("export: --onnx %s: %v", *file, err)
	}
	return nil
}

// hfFiles are the files export --hf writes, the whole of its folder.
var hfFiles = []string{"model.safetensors", "config.json"}

// exportHF writes m into the folder out in Hugging Face's GPT-2 layout: a
// folder of its own made beside out and renamed into place. An out that
// holds a previous export (those files only) is replaced; one that holds
// anything else is refused.
func exportHF(m *model.Model, out string, opts model.HFOptions) error {
	g, err := m.HF(opts)
	if errors.Is(err, model.ErrHeadBias) {
		return badInputf("export: --checkpoint %s: %v (--drop-head-bias writes it without)", m.Checkpoint.Dir, err)
	}
	if err != nil {
		return badInputf("export: --checkpoint %s: %v", m.Checkpoint.Dir, err)
	}
	cfg, err := json.MarshalIndent(g.Config, "", "  ")
	if err != nil {
		return fmt.Errorf("export: %v", err)
	}
	entries, err := os.ReadDir(out)
	exists := err == nil
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return badInputf("export: --hf %s: %v", out, err)
	}
	for _, e := range entries {
		if !slices.Contains(hfFiles, e.Name()) {
			return badInputf("export: --hf %s holds %s, which is not an export's: give a new folder", out, e.Name())
		}
	}
	parent, base := filepath.Dir(out), filepath.Base(out)
	tmp, err := os.MkdirTemp(parent, ".tmp-"+base+"-*")
	if err != nil {
		return badInputf("export: --hf %s: %v", out, err)
	}
	defer os.RemoveAll(tmp)                      // gone by then after the rename
	if err := os.Chmod(tmp, 0o755); err != nil { // MkdirTemp's 0700 would hide it from other users
		return badInputf("export: --hf %s: %v", out, err)
	}
	writes := []func(io.Writer) error{
		func(w io.Writer) error { return checkpoint.Encode(w, g.Tensors, map[string]string{"format": "pt"}) },
		func(w io.Writer) error { _, err := w.Write(append(cfg, '\n')); return err },
	}
	for i, name := range hfFiles {
		if err := writeFileAtomic(filepath.Join(tmp, name), writes[i]); err != nil {
			return badInputf("export: --hf %s: %v", out, err)
		}
	}
	if exists {
		// a previous export: moved aside, then removed once the new one is in place
		old, err := os.MkdirTemp(parent, ".old-"+base+"-*")
		if err != nil {
			return badInputf("export: --hf %s: %v", out, err)
		}
		defer os.RemoveAll(old)
		if err := os.Rename(out, filepath.Join(old, base)); err != nil {
			return badInputf("export: --hf %s: %v", out, err)
		}
	}
	if err := os.Rename(tmp, out); err != nil {
		return badInputf("export: --hf %s: %v", out, err)
	}
	return nil
}
