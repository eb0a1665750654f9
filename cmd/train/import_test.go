package main

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pipetrain/pipetrain/internal/checkpoint"
	"github.com/pipetrain/pipetrain/tensor"
)

// tinyHF is the GPT-2 file model/testdata/hf/make_gpt2_tiny.py made: 2
// blocks of 2 heads, width 32, 16 positions, 256 tokens, head tied.
const tinyHF = "../../model/testdata/hf/gpt2_tiny.safetensors"

// tinyGPTConfig is that model over bytes of a text.
var tinyGPTConfig = tinyGPT{path: "input.txt", vocab: "bytes", block: 16, batch: 4, testFraction: 0.2, dim: 32, blocks: 2,
	gptInit: true, norm: true, tie: true, lr: 1e-3, steps: 2}.toml()

// gptDir is a folder with input.txt and run.toml holding cfg.
func gptDir(t *testing.T, cfg string) string {
	t.Helper()
	dir := t.TempDir()
	text := strings.Repeat("To be, or not to be, that is the question.\n", 20)
	if err := os.WriteFile(filepath.Join(dir, "input.txt"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "run.toml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// runIn runs train with args in dir (the config's relative paths are
// from there), returning the exit status, stdout and stderr.
func runIn(t *testing.T, dir string, args ...string) (int, string, string) {
	t.Helper()
	t.Chdir(dir)
	var stdout, stderr bytes.Buffer
	code := runWith(context.Background(), args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func absPath(t *testing.T, p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func checkpointWeights(t *testing.T, dir string) map[string]*tensor.Tensor {
	t.Helper()
	step, ok, err := checkpoint.Latest(dir)
	if err != nil || !ok {
		t.Fatalf("no checkpoint in %s (%v)", dir, err)
	}
	_, w, _, err := checkpoint.Load(step)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func sameBitsAll(a, b map[string]*tensor.Tensor) string {
	if ka, kb := slices.Sorted(maps.Keys(a)), slices.Sorted(maps.Keys(b)); !slices.Equal(ka, kb) {
		return "tensors " + strings.Join(ka, ",") + " and " + strings.Join(kb, ",")
	}
	for k, x := range a {
		xs, ys := x.Float64s(), b[k].Float64s()
		if !slices.Equal(x.Shape(), b[k].Shape()) {
			return k + ": shapes differ"
		}
		for i := range xs {
			if math.Float64bits(xs[i]) != math.Float64bits(ys[i]) {
				return k + ": values differ"
			}
		}
	}
	return ""
}

// TestImportHF: GPT-2's weights become a checkpoint that eval and sample
// read, --resume fine-tunes from step 0 and export --hf writes back, and
// export then import gives the same tensors, bit for bit.
func TestImportHF(t *testing.T) {
	dir := gptDir(t, tinyGPTConfig)
	hf := absPath(t, tinyHF)
	code, out, stderr := runIn(t, dir, "import", "--hf", hf, "--config", "run.toml", "--out", "imported")
	if code != 0 {
		t.Fatalf("import: exit %d\n%s", code, stderr)
	}
	var res importResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("import printed %q: %v", out, err)
	}
	// wte 256·32, wpe 16·32, 2 blocks of 12,608 and 32·64, ln_f 64, the head's bias 256
	if want := 256*32 + 16*32 + 2*(2*64+32*96+96+32*32+32+32*128+128+128*32+32) + 64 + 256; res.Parameters != want || res.Tensors != 30 {
		t.Errorf("import: %+v, want 30 tensors and %d parameters", res, want)
	}
	if res.Checkpoint != filepath.Join("imported", "step-00000000") {
		t.Errorf("import: checkpoint %q, want imported/step-00000000", res.Checkpoint)
	}
	imported := checkpointWeights(t, filepath.Join(dir, "imported"))

	if code, out, stderr = runIn(t, dir, "eval", "--checkpoint", "imported", "--set", "log.dir=logs"); code != 0 || !strings.Contains(out, `"step":0`) {
		t.Errorf("eval: exit %d, stdout %q\n%s", code, out, stderr)
	}
	if code, out, stderr = runIn(t, dir, "sample", "--checkpoint", "imported", "--prompt", "To be", "--tokens", "8"); code != 0 || !strings.HasPrefix(out, "To be") || len(out) != len("To be")+8+1 {
		t.Errorf("sample: exit %d, stdout %q, want To be and 8 bytes\n%s", code, out, stderr)
	}

	// export then import: the same tensors
	if code, _, stderr = runIn(t, dir, "export", "--checkpoint", "imported", "--hf", "exported"); code != 0 {
		t.Fatalf("export: exit %d\n%s", code, stderr)
	}
	var cfg map[string]any
	if b, err := os.ReadFile(filepath.Join(dir, "exported", "config.json")); err != nil || json.Unmarshal(b, &cfg) != nil {
		t.Fatalf("exported config.json: %v", err)
	}
	if cfg["model_type"] != "gpt2" || cfg["n_layer"] != 2.0 || cfg["tie_word_embeddings"] != true || cfg["activation_function"] != "gelu" {
		t.Errorf("exported config.json: %v", cfg)
	}
	if code, _, stderr = runIn(t, dir, "import", "--hf", filepath.Join("exported", "model.safetensors"), "--config", "run.toml", "--out", "again"); code != 0 {
		t.Fatalf("import of the export: exit %d\n%s", code, stderr)
	}
	if diff := sameBitsAll(checkpointWeights(t, filepath.Join(dir, "again")), imported); diff != "" {
		t.Errorf("export then import: %s", diff)
	}

	// fine-tuning: --resume starts from the import at step 0
	code, _, stderr = runIn(t, dir, "--config", "run.toml", "--set", "train.checkpoint_dir=imported", "--set", "log.dir=logs", "--log-format", "json", "--resume")
	if code != 0 || !strings.Contains(stderr, `"event":"resume","step":0`) {
		t.Fatalf("train --resume: exit %d\n%s", code, stderr)
	}
	// the trained head has a bias GPT-2 cannot hold
	code, _, stderr = runIn(t, dir, "export", "--checkpoint", "imported", "--hf", "tuned")
	if l := lastLine(stderr); code != exitBadInput || !strings.Contains(l, "has a bias") || !strings.Contains(l, "--drop-head-bias") {
		t.Errorf("export of the fine-tuned model: exit %d, %q, want 2 naming the head's bias", code, l)
	}
	if code, _, stderr = runIn(t, dir, "export", "--checkpoint", "imported", "--hf", "tuned", "--drop-head-bias"); code != 0 {
		t.Errorf("export --drop-head-bias: exit %d\n%s", code, stderr)
	}
	// a second export replaces the first
	if code, _, stderr = runIn(t, dir, "export", "--checkpoint", "imported", "--hf", "exported", "--drop-head-bias"); code != 0 {
		t.Errorf("export over a previous export: exit %d\n%s", code, stderr)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".tmp-") || strings.HasPrefix(e.Name(), ".old-") {
			t.Errorf("export left %s behind", e.Name())
		}
	}
}

// TestFineTuneGPT2Head: a head without a bias (bias = false), as GPT-2's,
// imports without one, fine-tunes, and exports as it is, no flag needed.
func TestFineTuneGPT2Head(t *testing.T) {
	g := tinyGPT{path: "input.txt", vocab: "bytes", block: 16, batch: 4, testFraction: 0.2, dim: 32, blocks: 2,
		gptInit: true, norm: true, tie: true, noHeadBias: true, lr: 1e-3, steps: 2}
	dir := gptDir(t, g.toml())
	code, out, stderr := runIn(t, dir, "import", "--hf", absPath(t, tinyHF), "--config", "run.toml", "--out", "imported")
	if code != 0 {
		t.Fatalf("import: exit %d\n%s", code, stderr)
	}
	var res importResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("import printed %q: %v", out, err)
	}
	if res.Tensors != 29 { // TestImportHF's 30 but the head's bias
		t.Errorf("import: %+v, want 29 tensors", res)
	}
	code, _, stderr = runIn(t, dir, "--config", "run.toml", "--set", "train.checkpoint_dir=imported", "--set", "log.dir=logs", "--log-format", "json", "--resume")
	if code != 0 {
		t.Fatalf("train --resume: exit %d\n%s", code, stderr)
	}
	tuned := checkpointWeights(t, filepath.Join(dir, "imported"))
	if _, ok := tuned["4.bias"]; ok {
		t.Error("the fine-tuned checkpoint holds a head bias")
	}
	if code, _, stderr = runIn(t, dir, "export", "--checkpoint", "imported", "--hf", "tuned"); code != 0 {
		t.Fatalf("export of the fine-tuned model: exit %d\n%s", code, stderr)
	}
	if code, _, stderr = runIn(t, dir, "import", "--hf", filepath.Join("tuned", "model.safetensors"), "--config", "run.toml", "--out", "again"); code != 0 {
		t.Fatalf("import of the export: exit %d\n%s", code, stderr)
	}
	if diff := sameBitsAll(checkpointWeights(t, filepath.Join(dir, "again")), tuned); diff != "" {
		t.Errorf("fine-tuned, exported, imported: %s", diff)
	}
}

// hfVariant writes the tiny file changed by change into dir and returns
// its path.
func hfVariant(t *testing.T, dir string, change func(map[string]*tensor.Tensor)) string {
	t.Helper()
	b, err := os.ReadFile(tinyHF)
	if err != nil {
		t.Fatal(err)
	}
	ts, _, err := checkpoint.DecodeBytes(b)
	if err != nil {
		t.Fatal(err)
	}
	change(ts)
	path := filepath.Join(dir, "variant.safetensors")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := checkpoint.Encode(f, ts, nil); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestImportBadInput: a file that does not fit the config, a config that is
// not a GPT's, a bad file or command line exit 2, naming what is wrong, and
// write nothing.
func TestImportBadInput(t *testing.T) {
	hf := absPath(t, tinyHF)
	oneBlock := strings.Replace(tinyGPTConfig, "[[model.layers]]\ntype = \"transformer_block\"\nheads = 2\ninit = \"gpt\"\n", "", 1)
	tests := []struct {
		name   string
		config string
		file   func(map[string]*tensor.Tensor) // a changed copy of the tiny file, if set
		args   []string                        // instead of --hf FILE
		want   []string                        // in the last stderr line
	}{
		{"shape", strings.Replace(tinyGPTConfig, "dim = 32", "dim = 64", 1), nil, nil,
			[]string{"tensor wte.weight: the file's shape [256 32], the model's [256 64]"}},
		{"chars vocabulary, read from the text", strings.Replace(tinyGPTConfig, `vocab = "bytes"`, `vocab = "chars"`, 1), nil, nil,
			[]string{"tensor wte.weight: the file's shape [256 32], the model's [17 32]"}}, // the text's 17 distinct characters
		{"block size", strings.Replace(tinyGPTConfig, "block_size = 16", "block_size = 32", 1), nil, nil,
			[]string{"tensor wpe.weight: the file's shape [16 32], the model's [32 32]"}},
		{"missing tensor", tinyGPTConfig, func(ts map[string]*tensor.Tensor) { delete(ts, "h.1.mlp.c_proj.bias") }, nil,
			[]string{"no tensor transformer.h.1.mlp.c_proj.bias (the model's is [32])"}},
		{"extra tensor", oneBlock, nil, nil,
			[]string{"tensor h.1.", "has no place in the model (1 blocks"}},
		{"transposed Conv1D", tinyGPTConfig, func(ts map[string]*tensor.Tensor) {
			ts["h.0.mlp.c_fc.weight"] = tensor.Zeros(tensor.Float32, 128, 32)
		}, nil, []string{"tensor h.0.mlp.c_fc.weight: the file's shape [128 32], the model's [32 128]"}},
		{"not a GPT", strings.Replace(tinyGPTConfig, "type = \"layernorm\"", "type = \"relu\"", 1), nil, nil,
			[]string{"not a GPT-2: layer 3 is relu"}},
		{"not text", baseConfig, nil, nil, []string{`data.name = "digits"`}},
		{"bad file", tinyGPTConfig, nil, []string{"--hf", "run.toml"}, []string{"--hf run.toml: safetensors: header length"}},
		{"no file", tinyGPTConfig, nil, []string{"--hf", "none.safetensors"}, []string{"none.safetensors"}},
		{"no --hf", tinyGPTConfig, nil, []string{}, []string{"--hf FILE.safetensors is required"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := gptDir(t, tc.config)
			args := []string{"--hf", hf}
			if tc.file != nil {
				args = []string{"--hf", hfVariant(t, dir, tc.file)}
			}
			if tc.args != nil {
				args = tc.args
			}
			code, _, stderr := runIn(t, dir, append(append([]string{"import"}, args...), "--config", "run.toml", "--out", "out")...)
			l := lastLine(stderr)
			if code != exitBadInput || !strings.HasPrefix(l, "train: import") {
				t.Fatalf("exit %d, last stderr line %q, want 2 and train: import...", code, l)
			}
			for _, w := range tc.want {
				if !strings.Contains(l, w) {
					t.Errorf("last stderr line %q, want %q in it", l, w)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, "out")); err == nil {
				t.Errorf("out was written")
			}
		})
	}

	// an --out that holds something
	dir := gptDir(t, tinyGPTConfig)
	os.MkdirAll(filepath.Join(dir, "out", "step-00000010"), 0o755)
	code, _, stderr := runIn(t, dir, "import", "--hf", hf, "--config", "run.toml", "--out", "out")
	if l := lastLine(stderr); code != exitBadInput || !strings.Contains(l, "--out out is not empty (it holds step-00000010)") {
		t.Errorf("--out not empty: exit %d, %q", code, l)
	}
}

// TestExportHFBadInput: a checkpoint that is not a GPT's, or flags that do
// not go together, exit 2 naming why, and write nothing.
func TestExportHFBadInput(t *testing.T) {
	dir := t.TempDir()
	if r := runCmd(t, dir, baseConfig, "--set", "train.epochs=1"); r.code != 0 {
		t.Fatalf("training: exit %d\n%s", r.code, r.stderr)
	}
	ck := filepath.Join(dir, "checkpoints")
	other := filepath.Join(dir, "other")
	os.Mkdir(other, 0o755)
	os.WriteFile(filepath.Join(other, "notes.txt"), nil, 0o644)
	out := filepath.Join(dir, "out")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"not a GPT", []string{"--checkpoint", ck, "--hf", out}, "not a GPT-2"},
		{"both", []string{"--checkpoint", ck, "--hf", out, "--onnx", out + ".onnx"}, "--onnx and --hf: give one"},
		{"drop without hf", []string{"--checkpoint", ck, "--onnx", out + ".onnx", "--drop-head-bias"}, "--drop-head-bias goes with --hf"},
		{"neither", []string{"--checkpoint", ck}, "--onnx FILE or --hf OUT is required"},
	} {
		var stderr bytes.Buffer
		code := run(context.Background(), append([]string{"export"}, tc.args...), &stderr)
		if l := lastLine(stderr.String()); code != exitBadInput || !strings.HasPrefix(l, "train: export") || !strings.Contains(l, tc.want) {
			t.Errorf("%s: exit %d, last stderr line %q, want 2 and %q", tc.name, code, l, tc.want)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%s: %s was written", tc.name, out)
		}
	}
}
