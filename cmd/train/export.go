package main

import (
	"context"
	"flag"
	"fmt"
	"io"
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
	m, err := loadModel(*dir)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if err := writeFileAtomic(*file, m.ExportONNX); err != nil {
		return badInputf("export: --onnx %s: %v", *file, err)
	}
	return nil
}
