package checkpoint

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/pipetrain/pipetrain/tensor"
)

func testMeta(step int) Meta {
	return Meta{
		Step: step, Epoch: 2, Batch: 7, Seed: 1<<63 + 5,
		OptimizerType: "adam", OptimizerStep: step, ConfigHash: "sha256:0123abcd",
	}
}

func testModel() map[string]*tensor.Tensor {
	return map[string]*tensor.Tensor{
		"0.weight": tensor.FromFloat64s(tensor.Float32, []float64{1, -2, 3.5, math.Inf(1), 0, -0.25}, 2, 3),
		"0.bias":   tensor.Wrap32([]float32{math.Float32frombits(0x7fa00001), math.Float32frombits(0x80000000)}, 2),
		"2.alpha":  tensor.Full(tensor.Float64, 0.25),  // 0-D
		"3.gamma":  tensor.Zeros(tensor.Float32, 0, 4), // empty
	}
}

func testOptim() map[string]*tensor.Tensor {
	return map[string]*tensor.Tensor{
		"0.weight.m": tensor.FromFloat64s(tensor.Float64, []float64{0.1, 0.2, 0.3, 0.4, 0.5, math.NaN()}, 2, 3),
		"0.weight.v": tensor.Full(tensor.Float64, 1e-300, 2, 3),
	}
}

func mustSave(t *testing.T, root string, meta Meta, model, optim map[string]*tensor.Tensor) string {
	t.Helper()
	dir, err := Save(root, meta, model, optim)
	if err != nil {
		t.Fatalf("Save(step %d): %v", meta.Step, err)
	}
	return dir
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestSaveLoadRoundTrip(t *testing.T) {
	root := filepath.Join(t.TempDir(), "checkpoints") // Save creates it
	meta := testMeta(20)
	meta.Extra = map[string]any{"best_loss": 0.125, "note": "warm start", "rng_state": uint64(1<<60 + 1)}
	dir := mustSave(t, root, meta, testModel(), testOptim())
	if want := filepath.Join(root, "step-00000020"); dir != want {
		t.Errorf("Save returned %s, want %s", dir, want)
	}
	if got, want := dirNames(t, root), []string{"step-00000020"}; !slices.Equal(got, want) {
		t.Errorf("root holds %v, want %v", got, want)
	}
	if got, want := dirNames(t, dir), []string{ModelFile, OptimizerFile, StateFile}; !slices.Equal(got, want) {
		t.Errorf("%s holds %v, want %v", dir, got, want)
	}

	gotMeta, model, optim, err := Load(dir)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if err := sameTensors(model, testModel()); err != nil {
		t.Errorf("model: %v", err)
	}
	if err := sameTensors(optim, testOptim()); err != nil {
		t.Errorf("optimizer: %v", err)
	}
	want := meta
	want.Version = Version
	want.Extra = map[string]any{"best_loss": json.Number("0.125"), "note": "warm start", "rng_state": json.Number("1152921504606846977")}
	if !reflect.DeepEqual(gotMeta, want) {
		t.Errorf("Load meta =\n%+v\nwant\n%+v", gotMeta, want)
	}
}

func TestSaveEmpty(t *testing.T) {
	root := t.TempDir()
	dir := mustSave(t, root, Meta{}, nil, map[string]*tensor.Tensor{})
	meta, model, optim, err := Load(dir)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if meta.Step != 0 || meta.Version != Version || len(model) != 0 || len(optim) != 0 {
		t.Errorf("Load = %+v, %d tensors, %d tensors; want step 0, version %d, none", meta, len(model), len(optim), Version)
	}
	if filepath.Base(dir) != "step-00000000" {
		t.Errorf("dir = %s, want step-00000000", dir)
	}
}

func TestSaveFloat64Model(t *testing.T) {
	root := t.TempDir()
	model := oddTensors() // both dtypes, NaN payloads, -0, 0-D and empty
	dir := mustSave(t, root, testMeta(3), model, model)
	_, gotModel, gotOptim, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := sameTensors(gotModel, model); err != nil {
		t.Error(err)
	}
	if err := sameTensors(gotOptim, model); err != nil {
		t.Error(err)
	}
}

func TestSaveReplacesStep(t *testing.T) {
	root := t.TempDir()
	mustSave(t, root, testMeta(5), testModel(), testOptim())
	newer := map[string]*tensor.Tensor{"w": tensor.Full(tensor.Float32, 9, 3)}
	meta := testMeta(5)
	meta.Batch = 99
	dir := mustSave(t, root, meta, newer, nil)
	got, model, _, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got.Batch != 99 {
		t.Errorf("batch = %d, want 99 (the second save)", got.Batch)
	}
	if err := sameTensors(model, newer); err != nil {
		t.Error(err)
	}
	if names := dirNames(t, root); !slices.Equal(names, []string{"step-00000005"}) {
		t.Errorf("root holds %v, want only step-00000005", names)
	}
}

func TestSaveCleansUp(t *testing.T) {
	root := t.TempDir()
	// A checkpoint of step 7 that a Save moved aside before being killed, so that
	// step-00000007 is missing: the next Save must put it back.
	d7 := mustSave(t, root, testMeta(7), testModel(), testOptim())
	if err := os.Rename(d7, filepath.Join(root, ".old-step-00000007-0badf00d")); err != nil {
		t.Fatal(err)
	}
	// A stale copy of step 9, which exists: to be removed.
	d9 := mustSave(t, root, testMeta(9), testModel(), testOptim())
	copyDir(t, d9, filepath.Join(root, ".old-step-00000009-12345678"))
	// Interrupted writes and prunes: to be removed.
	for _, name := range []string{".tmp-step-00000003-deadbeef", ".tmp-prune-step-00000001-cafe0000"} {
		if err := os.MkdirAll(filepath.Join(root, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, name, ModelFile), []byte("partial"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Not ours: left alone.
	for _, name := range []string{"notes.txt", ".old-photos"} {
		if err := os.WriteFile(filepath.Join(root, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	if dir, ok, err := Latest(root); err != nil || !ok || dir != d9 {
		t.Fatalf("Latest before cleanup = %s, %v, %v; want %s", dir, ok, err, d9)
	}
	mustSave(t, root, testMeta(8), testModel(), testOptim())
	want := []string{".old-photos", "notes.txt", "step-00000007", "step-00000008", "step-00000009"}
	if got := dirNames(t, root); !slices.Equal(got, want) {
		t.Errorf("after Save, root holds %v, want %v", got, want)
	}
	if _, _, _, err := Load(filepath.Join(root, "step-00000007")); err != nil {
		t.Errorf("restored step 7: %v", err)
	}
}

func TestSaveErrors(t *testing.T) {
	root := t.TempDir()
	file := filepath.Join(root, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	bad := testMeta(4)
	bad.Extra = map[string]any{"f": func() {}}
	nan := testMeta(4)
	nan.Extra = map[string]any{"loss": math.NaN()}
	v2 := testMeta(4)
	v2.Version = 2
	tests := []struct {
		name  string
		root  string
		meta  Meta
		model map[string]*tensor.Tensor
		want  string
	}{
		{"no root", "", testMeta(4), nil, "no root directory given"},
		{"negative step", root, testMeta(-1), nil, "step -1 is negative"},
		{"future version", root, v2, nil, "meta version 2"},
		{"unencodable extra", root, bad, nil, "meta cannot be written as JSON"},
		{"NaN in extra", root, nan, nil, "meta cannot be written as JSON"},
		{"root is a file", file, testMeta(4), nil, "is not a directory"},
		{"nil tensor", root, testMeta(4), map[string]*tensor.Tensor{"w": nil}, `model.safetensors: safetensors: tensor "w" is nil`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Save(tt.root, tt.meta, tt.model, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "checkpoint: ") {
				t.Errorf("Save: err = %v, want checkpoint: ...%s...", err, tt.want)
			}
		})
	}
	if got := dirNames(t, root); !slices.Equal(got, []string{"file"}) {
		t.Errorf("failed Saves left %v behind", got)
	}
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	if err := os.CopyFS(to, os.DirFS(from)); err != nil {
		t.Fatal(err)
	}
}

func TestLatest(t *testing.T) {
	root := t.TempDir()
	if dir, ok, err := Latest(filepath.Join(root, "missing")); dir != "" || ok || err != nil {
		t.Errorf("Latest(missing root) = %q, %v, %v; want \"\", false, nil", dir, ok, err)
	}
	if dir, ok, err := Latest(root); dir != "" || ok || err != nil {
		t.Errorf("Latest(empty root) = %q, %v, %v; want \"\", false, nil", dir, ok, err)
	}
	for _, step := range []int{1, 9, 10} {
		mustSave(t, root, testMeta(step), testModel(), testOptim())
	}
	good := filepath.Join(root, "step-00000010")
	if dir, ok, err := Latest(root); dir != good || !ok || err != nil {
		t.Fatalf("Latest = %q, %v, %v; want %s (numeric order)", dir, ok, err, good)
	}

	// Newer entries that are not complete checkpoints, all to be ignored.
	src := mustSave(t, root, testMeta(50), testModel(), testOptim())
	if err := os.Rename(src, filepath.Join(root, ".tmp-step-00000050-0000abcd")); err != nil {
		t.Fatal(err)
	}
	broken := map[string]func(dir string) error{
		"step-00000040": func(d string) error { return os.Remove(filepath.Join(d, OptimizerFile)) },
		"step-00000041": func(d string) error { return os.Remove(filepath.Join(d, StateFile)) },
		"step-00000042": func(d string) error {
			return os.WriteFile(filepath.Join(d, StateFile), []byte(`{"version":1,"step":`), 0o644)
		},
		"step-00000043": func(d string) error { return os.Remove(filepath.Join(d, ModelFile)) },
		"step-00000044": func(d string) error {
			return os.Rename(filepath.Join(d, ModelFile), filepath.Join(d, "model.safetensors.partial"))
		},
		"step-00000045": func(d string) error { // names another step
			return os.Rename(d, filepath.Join(root, "step-00000046"))
		},
		"step-00000047": func(d string) error { // not canonical
			return os.Rename(d, filepath.Join(root, "step-47"))
		},
	}
	for name, breakIt := range broken {
		d := filepath.Join(root, name)
		copyDir(t, good, d)
		if err := breakIt(d); err != nil {
			t.Fatal(err)
		}
	}
	// The state of step 45 now lives in step-00000046, naming step 10.
	if err := os.WriteFile(filepath.Join(root, "step-00000099"), []byte("a file"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "step-00000098"), 0o755); err != nil {
		t.Fatal(err)
	}
	if dir, ok, err := Latest(root); dir != good || !ok || err != nil {
		t.Errorf("Latest with broken newer entries = %q, %v, %v; want %s", dir, ok, err, good)
	}

	// Beyond eight digits the names grow, and order stays numeric.
	big := mustSave(t, root, testMeta(123456789), testModel(), testOptim())
	if filepath.Base(big) != "step-123456789" {
		t.Errorf("dir for step 123456789 = %s", big)
	}
	if dir, ok, err := Latest(root); dir != big || !ok || err != nil {
		t.Errorf("Latest = %q, %v, %v; want %s", dir, ok, err, big)
	}
}

// TestLoadErrors damages a checkpoint in one way at a time and checks that Load
// names the file and what is wrong.
func TestLoadErrors(t *testing.T) {
	editFile := func(name string, edit func([]byte) []byte) func(t *testing.T, dir string) string {
		return func(t *testing.T, dir string) string {
			p := filepath.Join(dir, name)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, edit(b), 0o644); err != nil {
				t.Fatal(err)
			}
			return dir
		}
	}
	replaceState := func(old, new string) func(t *testing.T, dir string) string {
		return editFile(StateFile, func(b []byte) []byte {
			if !strings.Contains(string(b), old) {
				t.Fatalf("state.json has no %q:\n%s", old, b)
			}
			return []byte(strings.Replace(string(b), old, new, 1))
		})
	}
	tests := []struct {
		name   string
		damage func(t *testing.T, dir string) string // returns the dir to load
		file   string
		want   string
	}{
		{"state.json missing", func(t *testing.T, dir string) string {
			os.Remove(filepath.Join(dir, StateFile))
			return dir
		}, StateFile, "no such file or directory"},
		{"state.json truncated", editFile(StateFile, func(b []byte) []byte { return b[:len(b)/2] }), StateFile, "invalid JSON: unexpected EOF"},
		{"state.json not JSON", editFile(StateFile, func([]byte) []byte { return []byte("step=20\n") }), StateFile, "invalid JSON"},
		{"state.json two objects", editFile(StateFile, func(b []byte) []byte { return append(b, b...) }), StateFile, "unexpected data after the object"},
		{"unknown field", replaceState(`"epoch"`, `"epoc": 1, "epoch"`), StateFile, `unknown field "epoc"`},
		{"future version", replaceState(`"version": 1`, `"version": 2`), StateFile, "version 2 is not supported (want 1)"},
		{"wrong type", replaceState(`"batch": 7`, `"batch": "7"`), StateFile, "cannot unmarshal string"},
		{"negative counter", replaceState(`"epoch": 2`, `"epoch": -2`), StateFile, "negative counter"},
		{"no file record", replaceState(`"optimizer.safetensors"`, `"optim.safetensors"`), StateFile, "no record of optimizer.safetensors"},
		{"bad checksum record", replaceState(`"crc32c": "`, `"crc32c": "xyz`), StateFile, "record of model.safetensors is malformed"},
		{"directory of another step", func(t *testing.T, dir string) string {
			other := filepath.Join(filepath.Dir(dir), "step-00000021")
			if err := os.Rename(dir, other); err != nil {
				t.Fatal(err)
			}
			return other
		}, StateFile, "step is 20, but the directory is named for step 21"},
		{"model missing", func(t *testing.T, dir string) string {
			os.Remove(filepath.Join(dir, ModelFile))
			return dir
		}, ModelFile, "no such file or directory"},
		{"model truncated", editFile(ModelFile, func(b []byte) []byte { return b[:len(b)-3] }), ModelFile,
			"data section is 37 bytes, but the header describes 40 (file truncated?)"},
		{"model cut inside its header", editFile(ModelFile, func(b []byte) []byte { return b[:40] }), ModelFile, "runs past the end of the file (40 bytes)"},
		{"model empty", editFile(ModelFile, func(b []byte) []byte { return nil }), ModelFile, "file is 0 bytes"},
		{"model with trailing bytes", editFile(ModelFile, func(b []byte) []byte { return append(b, 0) }), ModelFile, "1 trailing bytes"},
		{"model offsets wrong", editFile(ModelFile, func(b []byte) []byte {
			return []byte(strings.Replace(string(b), `"data_offsets":[16,40]`, `"data_offsets":[16,36]`, 1))
		}), ModelFile, `data offsets of "0.weight" [16, 36] span 20 bytes, but F32 shape [2 3] needs 24`},
		{"model bit flipped", editFile(ModelFile, func(b []byte) []byte { b[len(b)-5] ^= 0x10; return b }), ModelFile,
			"but state.json records"},
		{"optimizer replaced", func(t *testing.T, dir string) string {
			var other = filepath.Join(t.TempDir(), "o")
			d := mustSave(t, other, testMeta(20), nil, testModel())
			b, err := os.ReadFile(filepath.Join(d, OptimizerFile))
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(dir, OptimizerFile), b, 0o644)
			return dir
		}, OptimizerFile, "but state.json records"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			dir := mustSave(t, root, testMeta(20), testModel(), testOptim())
			dir = tt.damage(t, dir)
			_, _, _, err := Load(dir)
			prefix := "checkpoint: " + filepath.Join(dir, tt.file) + ": "
			if err == nil || !strings.HasPrefix(err.Error(), prefix) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Load: err = %v\nwant %s...%s...", err, prefix, tt.want)
			}
		})
	}
	t.Run("errors.Is", func(t *testing.T) {
		_, _, _, err := Load(filepath.Join(t.TempDir(), "step-00000001"))
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Load(missing dir): err = %v, want one that is fs.ErrNotExist", err)
		}
	})
}

func TestPrune(t *testing.T) {
	root := t.TempDir()
	for step := 1; step <= 5; step++ {
		mustSave(t, root, testMeta(step*10), testModel(), testOptim())
	}
	// An incomplete newer directory and an incomplete older one.
	for _, name := range []string{"step-00000060", "step-00000005"} {
		if err := os.MkdirAll(filepath.Join(root, name), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Prune(root, 0); err == nil {
		t.Error("Prune(keep 0) succeeded")
	}
	removed, err := Prune(root, 10) // fewer than 10 complete: nothing goes
	if err != nil || len(removed) != 0 {
		t.Errorf("Prune(keep 10) = %v, %v; want nothing removed", removed, err)
	}
	removed, err = Prune(root, 2)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range removed {
		names = append(names, filepath.Base(d))
	}
	if want := []string{"step-00000030", "step-00000020", "step-00000010", "step-00000005"}; !slices.Equal(names, want) {
		t.Errorf("Prune removed %v, want %v", names, want)
	}
	if got, want := dirNames(t, root), []string{"step-00000040", "step-00000050", "step-00000060"}; !slices.Equal(got, want) {
		t.Errorf("after Prune, root holds %v, want %v", got, want)
	}
	if dir, ok, _ := Latest(root); !ok || filepath.Base(dir) != "step-00000050" {
		t.Errorf("Latest after Prune = %s, %v; want step-00000050", dir, ok)
	}
}

func TestStepDir(t *testing.T) {
	for _, tt := range []struct {
		step int
		want string
	}{{0, "step-00000000"}, {20, "step-00000020"}, {99999999, "step-99999999"}, {100000000, "step-100000000"}} {
		if got := StepDir("ck", tt.step); got != filepath.Join("ck", tt.want) {
			t.Errorf("StepDir(ck, %d) = %s, want %s", tt.step, got, tt.want)
		}
		if step, ok := parseStepName(tt.want); !ok || step != tt.step {
			t.Errorf("parseStepName(%s) = %d, %v; want %d, true", tt.want, step, ok, tt.step)
		}
	}
	for _, name := range []string{"step-", "step-20", "step-0000002x", "step--0000002", "step-+0000020", "step-000000020", "Step-00000020", ".tmp-step-00000020"} {
		if step, ok := parseStepName(name); ok {
			t.Errorf("parseStepName(%q) = %d, true; want false", name, step)
		}
	}
}

func TestSaveFiles(t *testing.T) {
	root := t.TempDir()
	files := map[string][]byte{"tokenizer.json": []byte(`{"model": {}}`), "notes.txt": nil}
	dir, err := SaveFiles(root, testMeta(3), testModel(), testOptim(), files)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := dirNames(t, dir), []string{ModelFile, "notes.txt", OptimizerFile, StateFile, "tokenizer.json"}; !slices.Equal(got, want) {
		t.Errorf("%s holds %v, want %v", dir, got, want)
	}
	for name, want := range files {
		if got, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(got) != string(want) {
			t.Errorf("%s = %q, %v; want %q", name, got, err, want)
		}
	}
	if _, _, _, err := Load(dir); err != nil {
		t.Errorf("Load of a checkpoint with more files: %v", err)
	}
	for _, name := range []string{"", ".", "..", "a/b", "../x", ".tmp", ModelFile, OptimizerFile, StateFile} {
		_, err := SaveFiles(root, testMeta(4), testModel(), testOptim(), map[string][]byte{name: nil})
		if want := fmt.Sprintf("checkpoint: %q cannot be an extra file's name", name); err == nil || err.Error() != want {
			t.Errorf("SaveFiles with file %q: error %v, want %q", name, err, want)
		}
	}
	if got := dirNames(t, root); !slices.Equal(got, []string{"step-00000003"}) {
		t.Errorf("after the refused saves, root holds %v", got)
	}
}
