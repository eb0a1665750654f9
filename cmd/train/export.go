package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/pipetrain/pipetrain/model"
)

const exportUsage = "usage: train export --checkpoint DIR --onnx FILE"

// runExport writes the model of a checkpoint (or of the newest under a
// checkpoint_dir) to an ONNX file, atomically: the file is whole or, on any
// error, untouched.
func runExport(_ context.Context, args []string, _, _ io.Writer) error {
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	dir := fs.String("checkpoint", "", "a checkpoint folder, or a checkpoint_dir for its newest")
	file := fs.String("onnx", "", "the ONNX file to write")
	if err := parseFlags(fs, args, exportUsage); err != nil {
		return err
	}
	switch {
	case *dir == "":
		return badInputf("export: --checkpoint DIR is required (%s)", exportUsage)
	case *file == "":
		return badInputf("export: --onnx FILE is required (%s)", exportUsage)
	}
	m, err := model.Load(*dir)
	if err != nil {
		return badInputf("export: --checkpoint %s: %v", *dir, err)
	}
	if err := writeAtomically(*file, m.ExportONNX); err != nil {
		return badInputf("export: --onnx %s: %v", *file, err)
	}
	return nil
}

// writeAtomically writes a file through write into a temporary file beside
// it, then renames it into place, so that a reader never sees half of it
// and a failure leaves what was there.
func writeAtomically(file string, write func(io.Writer) error) (err error) {
	f, err := os.CreateTemp(filepath.Dir(file), "."+filepath.Base(file)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := write(f); err != nil {
		return err
	}
	if err := f.Chmod(0o644); err != nil { // CreateTemp's 0600 would hide it from other users
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), file); err != nil {
		return fmt.Errorf("rename: %w", err)
	}
	return nil
}
