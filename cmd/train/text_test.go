package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pipetrain/pipetrain/dataset"
	"github.com/pipetrain/pipetrain/internal/checkpoint"
)

// tinyGPT is the config of a tiny GPT on a text, as the tests train it in
// a second or two; a zero field leaves its key out (its default).
type tinyGPT struct {
	path, vocab      string
	vocabSize        int
	block, batch     int
	testFraction     float64
	dim, blocks      int
	dropout          float64
	gptInit          bool // init = "gpt" on every layer that takes it
	norm, tie        bool // a layernorm before the head; the head tied to the embedding
	noHeadBias       bool // the head without a bias, as GPT-2's
	lr               float64
	steps            int
	train, afterward string // more keys of [train], and tables after it
}

func (g tinyGPT) toml() string {
	var b strings.Builder
	key := func(k string, v any) { fmt.Fprintf(&b, "%s = %v\n", k, v) }
	layer := func(typ string, keys ...string) {
		fmt.Fprintf(&b, "[[model.layers]]\ntype = %q\n", typ)
		for _, k := range keys {
			b.WriteString(k + "\n")
		}
		if g.gptInit && typ != "layernorm" {
			b.WriteString("init = \"gpt\"\n")
		}
	}
	b.WriteString("seed = 3\n[data]\nname = \"text\"\n")
	key("path", strconv.Quote(g.path))
	if g.vocab != "" {
		key("vocab", strconv.Quote(g.vocab))
	}
	if g.vocabSize > 0 {
		key("vocab_size", g.vocabSize)
	}
	key("block_size", g.block)
	key("batch_size", g.batch)
	if g.testFraction > 0 {
		key("test_fraction", g.testFraction)
	}
	layer("embedding", fmt.Sprintf("dim = %d", g.dim))
	for range g.blocks {
		block := []string{"heads = 2"}
		if g.dropout > 0 {
			block = append(block, fmt.Sprintf("dropout = %v", g.dropout))
		}
		layer("transformer_block", block...)
	}
	if g.norm {
		layer("layernorm")
	}
	var head []string
	if g.tie {
		head = append(head, "tie = true")
	}
	if g.noHeadBias {
		head = append(head, "bias = false")
	}
	layer("linear", head...)
	fmt.Fprintf(&b, "[optimizer]\ntype = \"adamw\"\nlr = %v\n[train]\nmax_steps = %d\n%s%s", g.lr, g.steps, g.train, g.afterward)
	return b.String()
}

// textConfig is a tiny GPT on the text at path under vocab (of size, for
// bpe): a few steps, a checkpoint every two.
func textConfig(path, vocab string, size int) string {
	return tinyGPT{path: path, vocab: vocab, vocabSize: size, block: 8, batch: 4, testFraction: 0.1, dim: 16, blocks: 1,
		gptInit: true, norm: true, lr: 1e-3, steps: 3, train: "checkpoint_every = 2\n"}.toml()
}

// checkpointDirs lists the step folders under root, best/ included.
func checkpointDirs(t *testing.T, root string) []string {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() && checkpoint.IsCheckpoint(p) {
			dirs = append(dirs, p)
		}
		return err
	})
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no checkpoint under %s (%v)", root, err)
	}
	return dirs
}

// TestTextVocabs trains a tiny GPT under the byte-level vocabularies, then
// samples from and evaluates its checkpoint, which alone must rebuild the
// vocabulary: a bpe checkpoint holds its tokenizer.json.
func TestTextVocabs(t *testing.T) {
	text, err := os.ReadFile(filepath.Join("..", "..", "dataset", "testdata", "tinyshakespeare-2000.txt"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		vocab     string
		size      int
		tokenizer bool // checkpoints hold tokenizer.json
	}{
		{dataset.VocabBPE, 300, true},
		{dataset.VocabGPT2, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.vocab, func(t *testing.T) {
			dir := t.TempDir()
			path := writeText(t, filepath.Join(dir, "input.txt"), string(text))
			ev := trainIn(t, dir, textConfig(path, tc.vocab, tc.size))
			bpc, _ := ev["bits_per_char"].(float64)
			bpb, _ := ev["bits_per_byte"].(float64)
			if !(bpc > 0) || !(bpb > 0) || bpb >= bpc { // a token holds more than one byte
				t.Errorf("eval event: bits_per_char %v, bits_per_byte %v; want both positive, fewer bits a byte", ev["bits_per_char"], ev["bits_per_byte"])
			}
			want := tc.size
			if tc.vocab == dataset.VocabGPT2 {
				want = 50257
			}
			root := filepath.Join(dir, "checkpoints")
			for _, ck := range checkpointDirs(t, root) {
				meta, err := checkpoint.ReadMeta(ck)
				if err != nil {
					t.Fatal(err)
				}
				var d struct {
					Classes []string `json:"classes"`
					Vocab   string   `json:"vocab"`
				}
				if err := json.Unmarshal(meta.Model, &d); err != nil || d.Vocab != tc.vocab || len(d.Classes) != want {
					t.Errorf("%s: model of vocab %q with %d classes (%v); want %q, %d", ck, d.Vocab, len(d.Classes), err, tc.vocab, want)
				}
				_, err = os.Stat(filepath.Join(ck, dataset.TokenizerFile))
				if has := err == nil; has != tc.tokenizer {
					t.Errorf("%s: tokenizer.json there: %v, want %v", ck, has, tc.tokenizer)
				}
				if tc.tokenizer {
					v, err := dataset.ReadTokenizerFile(filepath.Join(ck, dataset.TokenizerFile))
					if err != nil || v.Size() != tc.size {
						t.Errorf("%s: its tokenizer.json: %d tokens, %v; want %d", ck, v.Size(), err, tc.size)
					}
				}
			}

			sample := func() subResult {
				return runSub("sample", "--checkpoint", root, "--prompt", "ROMEO:", "--tokens", "6", "--seed", "5")
			}
			s1, s2 := sample(), sample()
			if s1.code != 0 || !strings.HasPrefix(s1.stdout, "ROMEO:") || len(s1.stdout) <= len("ROMEO:\n") {
				t.Fatalf("sample: exit %d, stdout %q, stderr %s", s1.code, s1.stdout, s1.stderr)
			}
			if s2.stdout != s1.stdout {
				t.Errorf("sample twice with one seed: %q, then %q", s1.stdout, s2.stdout)
			}
			e := runSub("eval", "--checkpoint", root, "--set", "log.dir="+filepath.Join(dir, "eval-logs"))
			if e.code != 0 {
				t.Fatalf("eval: exit %d, stderr %s", e.code, e.stderr)
			}
			var res evalResult
			if err := json.Unmarshal([]byte(e.stdout), &res); err != nil || res.BitsPerB == nil || res.BitsPerChr == nil {
				t.Fatalf("eval printed %q (%v), want a result with bits per character and byte", e.stdout, err)
			}
			// The run's last evaluation (the test split at step 3) and eval's of the
			// step-3 checkpoint see the same weights and windows.
			if loss := ev["loss"].(float64); math.Abs(res.Loss-loss) > 1e-5*loss || math.Abs(*res.BitsPerB-bpb) > 1e-5*bpb {
				t.Errorf("eval: loss %v, bits per byte %v; the run's last test evaluation %v, %v", res.Loss, *res.BitsPerB, loss, bpb)
			}
		})
	}
}

// TestTextMissingTokenizer removes a bpe checkpoint's tokenizer.json:
// sample and eval must say so, exit 2.
func TestTextMissingTokenizer(t *testing.T) {
	text, err := os.ReadFile(filepath.Join("..", "..", "dataset", "testdata", "tinyshakespeare-2000.txt"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := writeText(t, filepath.Join(dir, "input.txt"), string(text))
	trainIn(t, dir, textConfig(path, dataset.VocabBPE, 260))
	ck, ok, err := checkpoint.Latest(filepath.Join(dir, "checkpoints"))
	if err != nil || !ok {
		t.Fatalf("no checkpoint: %v", err)
	}
	if err := os.Remove(filepath.Join(ck, dataset.TokenizerFile)); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("--checkpoint %s: no tokenizer.json there", ck)
	for _, args := range [][]string{
		{"sample", "--checkpoint", ck},
		{"eval", "--checkpoint", ck, "--set", "log.dir=" + filepath.Join(dir, "eval-logs")},
	} {
		r := runSub(args...)
		if r.code != 2 || !strings.Contains(r.stderr, want) {
			t.Errorf("%s: exit %d, stderr %q; want 2 and %q", args[0], r.code, r.stderr, want)
		}
	}
}

// TestTextVocabSizeErrors checks that the size of a bpe vocabulary is
// the user's to get right: exit 2, naming the key.
func TestTextVocabSizeErrors(t *testing.T) {
	dir := t.TempDir()
	path := writeText(t, filepath.Join(dir, "input.txt"), "some text, some more text\n")
	tests := []struct {
		vocab string
		size  int
		want  string
	}{
		{dataset.VocabBPE, 0, `data.vocab_size = 0: required for data.vocab = "bpe"`},
		{dataset.VocabBPE, 100, `data.vocab_size = 100: below 256`},
		{dataset.VocabGPT2, 300, `data.vocab_size = 300: only for data.vocab = "bpe", not "gpt2"`},
	}
	for _, tc := range tests {
		r := runCmd(t, dir, textConfig(path, tc.vocab, tc.size))
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("vocab %s, size %d: exit %d, stderr %q; want 2 and %q", tc.vocab, tc.size, r.code, r.stderr, tc.want)
		}
	}
}

// TestTextResumeBPE resumes a bpe run: on the same text it goes on, with
// the losses of the unbroken run; on a changed text, whose vocabulary is
// no longer the checkpoint's, it is refused.
func TestTextResumeBPE(t *testing.T) {
	text, err := os.ReadFile(filepath.Join("..", "..", "dataset", "testdata", "tinyshakespeare-2000.txt"))
	if err != nil {
		t.Fatal(err)
	}
	losses := func(r runResult) []float64 {
		var l []float64
		for _, e := range eventsNamed(r.events, "step") {
			l = append(l, e["loss"].(float64))
		}
		return l
	}
	whole := t.TempDir()
	cfg := textConfig(writeText(t, filepath.Join(whole, "input.txt"), string(text)), dataset.VocabBPE, 280)
	full := runCmd(t, whole, cfg, "--set", "log.every=1")
	if full.code != 0 {
		t.Fatalf("unbroken run: exit %d: %s", full.code, full.stderr)
	}

	dir := t.TempDir()
	path := writeText(t, filepath.Join(dir, "input.txt"), string(text))
	cfg = textConfig(path, dataset.VocabBPE, 280)
	if r := runCmd(t, dir, cfg, "--set", "log.every=1", "--set", "train.max_steps=2"); r.code != 0 {
		t.Fatalf("first run: exit %d: %s", r.code, r.stderr)
	}
	resumed := runCmd(t, dir, cfg, "--set", "log.every=1", "--resume")
	if got, want := losses(resumed), losses(full)[2:]; resumed.code != 0 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("resumed: exit %d, losses %v; want those of the unbroken run's step 3, %v (%s)", resumed.code, got, want, resumed.stderr)
	}

	writeText(t, path, strings.ReplaceAll(string(text), "the", "thy"))
	refused := runCmd(t, dir, cfg, "--set", "train.max_steps=4", "--resume")
	if want := "tokenizer.json is not the vocabulary data.path"; refused.code != 2 || !strings.Contains(refused.stderr, want) {
		t.Errorf("resumed on a changed text: exit %d, stderr %q; want 2 and %q", refused.code, refused.stderr, want)
	}
}
