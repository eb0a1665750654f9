package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pipetrain/pipetrain/model"
)

// TestExport: train export writes the checkpoint's model as ExportONNX
// does, replacing a file that was there, and leaves no temporary file; a
// folder that cannot take the file exits 2 naming --onnx.
func TestExport(t *testing.T) {
	dir := t.TempDir()
	if r := runCmd(t, dir, baseConfig, "--set", "train.epochs=1"); r.code != 0 {
		t.Fatalf("training: exit %d\n%s", r.code, r.stderr)
	}
	ck := filepath.Join(dir, "checkpoints")
	m, err := model.Load(ck)
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := m.ExportONNX(&want); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	os.Mkdir(out, 0o755)
	file := filepath.Join(out, "model.onnx")
	os.WriteFile(file, []byte("old"), 0o644)
	var stderr bytes.Buffer
	if code := run(context.Background(), []string{"export", "--checkpoint", ck, "--onnx", file}, &stderr); code != 0 {
		t.Fatalf("export: exit %d\n%s", code, stderr.String())
	}
	got, err := os.ReadFile(file)
	if err != nil || !bytes.Equal(got, want.Bytes()) {
		t.Errorf("%s: %d bytes (%v), want the %d of ExportONNX", file, len(got), err, want.Len())
	}
	if entries, _ := os.ReadDir(out); len(entries) != 1 {
		t.Errorf("%s holds %d files, want model.onnx alone", out, len(entries))
	}

	// a folder that cannot take the file
	file = filepath.Join(dir, "no", "such", "folder", "model.onnx")
	stderr.Reset()
	code := run(context.Background(), []string{"export", "--checkpoint", ck, "--onnx", file}, &stderr)
	if l := lastLine(stderr.String()); code != exitBadInput || !strings.HasPrefix(l, "train: export: --onnx "+file) {
		t.Errorf("exit %d, last stderr line %q, want 2 and train: export: --onnx %s...", code, l, file)
	}
}

// TestExportBadInput: a wrong command line or checkpoint exits 2, naming it,
// and writes nothing.
func TestExportBadInput(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	os.Mkdir(empty, 0o755)
	file := filepath.Join(dir, "model.onnx")
	tests := []struct {
		name string
		args []string
		want string // in the last stderr line
	}{
		{"no checkpoint flag", []string{"--onnx", file}, "--checkpoint DIR is required"},
		{"no onnx flag", []string{"--checkpoint", empty}, "--onnx FILE or --hf OUT is required"},
		{"unknown flag", []string{"--bogus"}, "bogus"},
		{"stray argument", []string{"--checkpoint", empty, "--onnx", file, "extra"}, `"extra"`},
		{"no checkpoint there", []string{"--checkpoint", empty, "--onnx", file}, "--checkpoint " + empty},
		{"missing folder", []string{"--checkpoint", filepath.Join(dir, "none"), "--onnx", file}, "none"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			code := run(context.Background(), append([]string{"export"}, tc.args...), &stderr)
			if code != exitBadInput {
				t.Fatalf("args %v: exit %d, want 2; stderr:\n%s", tc.args, code, stderr.String())
			}
			if l := lastLine(stderr.String()); !strings.HasPrefix(l, "train: ") || !strings.Contains(l, tc.want) {
				t.Errorf("args %v: last stderr line %q, want train: ...%s...", tc.args, l, tc.want)
			}
			if _, err := os.Stat(file); err == nil {
				t.Errorf("args %v: %s was written", tc.args, file)
			}
		})
	}
}
