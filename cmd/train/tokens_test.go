package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/creack/pty"

	"github.com/pipetrain/pipetrain/dataset"
)

// charGPTConfig is a tiny GPT on the text at path under vocab, a few steps
// of it.
func charGPTConfig(path, vocab string) string {
	return tinyGPT{path: path, vocab: vocab, block: 16, batch: 8, testFraction: 0.1, dim: 16, blocks: 1, lr: 1e-3, steps: 6,
		afterward: "[log]\nevery = 1\n"}.toml()
}

// writeCorpus writes a seeded text of lines of words, some not ASCII, into
// dir and returns its path.
func writeCorpus(t *testing.T, dir string) string {
	t.Helper()
	rng := rand.New(rand.NewPCG(5, 6))
	words := []string{"the", "king", "ROMEO:", "naïve", "and", "of", "to", "日本"}
	var b strings.Builder
	for range 1500 {
		for k := range 1 + rng.IntN(7) {
			if k > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(words[rng.IntN(len(words))])
		}
		b.WriteByte('\n')
	}
	return writeText(t, filepath.Join(dir, "input.txt"), b.String())
}

// prepareIn runs train prepare on cfg (written into dir) and returns the
// folder it wrote.
func prepareIn(t *testing.T, dir, cfg string, args ...string) string {
	t.Helper()
	path := writeText(t, filepath.Join(dir, "prepare.toml"), cfg)
	out := filepath.Join(dir, "prepared")
	r := runSub(append([]string{"prepare", "--config", path, "--out", out}, args...)...)
	if r.code != 0 {
		t.Fatalf("prepare: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	if !strings.HasPrefix(r.stdout, "prepare: "+out+": train.bin ") {
		t.Errorf("prepare printed %q, want its one-line summary", r.stdout)
	}
	return out
}

// asTokens turns a text config into one training on the prepared folder.
func asTokens(cfg, folder string) string {
	lines := strings.Split(cfg, "\n")
	for i, l := range lines {
		switch {
		case l == `name = "text"`:
			lines[i] = `name = "tokens"`
		case strings.HasPrefix(l, "path = "):
			lines[i] = fmt.Sprintf("path = %q", folder)
		}
	}
	return strings.Join(lines, "\n")
}

// evalLosses maps each eval event's step and split to its loss.
func evalLosses(evs []map[string]any) map[string]float64 {
	out := map[string]float64{}
	for _, e := range eventsNamed(evs, "eval") {
		out[fmt.Sprintf("%v/%v", e["step"], e["split"])] = e["loss"].(float64)
	}
	return out
}

// TestTokensTrainAsText: training on the folder prepare made of a text gives
// the losses of training on the text itself, bit for bit, step and
// evaluation alike, with or without a validation split, under both
// vocabularies; and the files hold the text's split ids.
func TestTokensTrainAsText(t *testing.T) {
	corpus := writeCorpus(t, t.TempDir())
	for _, tc := range []struct {
		vocab string
		sets  []string
	}{
		{"chars", nil},
		{"bytes", nil},
		{"chars", []string{"--set", "data.validation_fraction=0.2"}},
	} {
		t.Run(tc.vocab+strings.Join(tc.sets, ""), func(t *testing.T) {
			dir := t.TempDir()
			cfg := charGPTConfig(corpus, tc.vocab)
			text := runCmd(t, filepath.Join(dir), cfg, tc.sets...)
			if text.code != 0 {
				t.Fatalf("text run: exit %d:\n%s", text.code, text.stderr)
			}
			folder := prepareIn(t, dir, cfg)
			checkPrepared(t, folder, corpus, tc.vocab)
			tdir := filepath.Join(dir, "tokens")
			os.Mkdir(tdir, 0o755)
			tok := runCmd(t, tdir, asTokens(cfg, folder), tc.sets...)
			if tok.code != 0 {
				t.Fatalf("tokens run: exit %d:\n%s", tok.code, tok.stderr)
			}
			want, got := stepLosses(text.events), stepLosses(tok.events)
			if len(want) != 6 || len(got) != len(want) {
				t.Fatalf("the runs logged %d and %d steps, want 6", len(want), len(got))
			}
			for s, l := range want {
				if got[s] != l {
					t.Errorf("step %d: tokens loss %v, text loss %v", s, got[s], l)
				}
			}
			we, ge := evalLosses(text.events), evalLosses(tok.events)
			if len(we) == 0 || !equalMaps(we, ge) {
				t.Errorf("eval losses: tokens %v, text %v", ge, we)
			}
		})
	}
}

func equalMaps(a, b map[string]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// checkPrepared checks that folder's train.bin and val.bin hold the ids of
// the text at path split as LoadText and Split split it, and meta.json its
// vocabulary.
func checkPrepared(t *testing.T, folder, path, vocab string) {
	t.Helper()
	text, err := dataset.LoadText(path, vocab)
	if err != nil {
		t.Fatal(err)
	}
	train, _, test, err := text.Split(0.1, 0)
	if err != nil {
		t.Fatal(err)
	}
	meta, err := dataset.ReadTokenMeta(filepath.Join(folder, "meta.json"))
	if err != nil {
		t.Fatal(err)
	}
	if meta.Vocab != vocab || meta.VocabSize != text.Vocab.Size() || meta.DType != "uint16" {
		t.Errorf("meta.json %+v, want vocab %q of %d tokens in uint16", meta, vocab, text.Vocab.Size())
	}
	if vocab == "chars" && !slices.Equal(meta.Tokens, text.Vocab.Tokens()) {
		t.Errorf("meta.json's tokens %q, want %q", meta.Tokens, text.Vocab.Tokens())
	}
	for _, f := range []struct {
		name string
		ids  []int32
	}{{"train.bin", train}, {"val.bin", test}} {
		var want bytes.Buffer
		if err := dataset.WriteTokens(&want, f.ids, "uint16"); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(folder, f.name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want.Bytes()) {
			t.Errorf("%s: %d bytes that are not the %d ids of the split", f.name, len(got), len(f.ids))
		}
	}
}

// TestTokensResume: a tokens run stopped at step 3 and resumed continues
// with the unbroken run's losses; eval and sample work on its checkpoint,
// eval reproducing the run's last evaluation.
func TestTokensResume(t *testing.T) {
	dir := t.TempDir()
	cfg := charGPTConfig(writeCorpus(t, dir), "chars")
	cfg = asTokens(cfg, prepareIn(t, dir, cfg))
	whole := runCmd(t, t.TempDir(), cfg)
	if whole.code != 0 {
		t.Fatalf("exit %d:\n%s", whole.code, whole.stderr)
	}
	half := t.TempDir()
	if r := runCmd(t, half, cfg, "--set", "train.max_steps=3"); r.code != 0 {
		t.Fatalf("first half: exit %d:\n%s", r.code, r.stderr)
	}
	second := runCmd(t, half, cfg, "--resume")
	if second.code != 0 {
		t.Fatalf("resumed half: exit %d:\n%s", second.code, second.stderr)
	}
	want, got := stepLosses(whole.events), stepLosses(second.events)
	if len(got) != 3 {
		t.Fatalf("the resumed run logged %d steps, want 3", len(got))
	}
	for s, l := range got {
		if s <= 3 || want[s] != l {
			t.Errorf("step %d: resumed loss %v, unbroken %v", s, l, want[s])
		}
	}

	evals := eventsNamed(second.events, "eval")
	ck := filepath.Join(half, "checkpoints")
	r := runSub("eval", "--checkpoint", ck, "--set", "log.dir="+filepath.Join(half, "evallogs"))
	if r.code != 0 {
		t.Fatalf("eval: exit %d:\n%s", r.code, r.stderr)
	}
	if wantLine := fmt.Sprintf(`"loss":%v,`, evals[len(evals)-1]["loss"]); !strings.Contains(r.stdout, wantLine) {
		t.Errorf("eval printed %s, want the run's last loss %s", r.stdout, wantLine)
	}
	r = runSub("sample", "--checkpoint", ck, "--prompt", "the king", "--tokens", "20")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "the king") || len([]rune(r.stdout)) != len("the king")+20+1 {
		t.Errorf("sample: exit %d, stdout %q, want the prompt and 20 characters", r.code, r.stdout)
	}
}

// TestNanoGPTLayout: a folder as nanoGPT's prepare.py writes it for ids that
// mean themselves (uint16, no meta.json) trains under data.vocab = "bytes",
// as the text it holds the bytes of does.
func TestNanoGPTLayout(t *testing.T) {
	dir := t.TempDir()
	corpus := writeCorpus(t, dir)
	text, err := os.ReadFile(corpus)
	if err != nil {
		t.Fatal(err)
	}
	cut := int(float64(len(text)) * 0.9)
	folder := filepath.Join(dir, "nanogpt")
	os.Mkdir(folder, 0o755)
	for _, f := range []struct {
		name string
		b    []byte
	}{{"train.bin", text[:cut]}, {"val.bin", text[cut:]}} {
		var buf bytes.Buffer
		for _, c := range f.b {
			buf.Write([]byte{c, 0}) // little-endian uint16
		}
		writeText(t, filepath.Join(folder, f.name), buf.String())
	}
	cfg := charGPTConfig(corpus, "bytes")
	want := runCmd(t, t.TempDir(), cfg)
	got := runCmd(t, t.TempDir(), asTokens(cfg, folder))
	if want.code != 0 || got.code != 0 {
		t.Fatalf("exit %d (text) and %d (folder):\n%s\n%s", want.code, got.code, want.stderr, got.stderr)
	}
	wl, gl := stepLosses(want.events), stepLosses(got.events)
	if len(wl) != 6 || !equalLosses(wl, gl) {
		t.Errorf("step losses: folder %v, text %v", gl, wl)
	}
}

func equalLosses(a, b map[int]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestTokensBadInput: each wrong folder, key or file is exit 2 with a last
// line naming it.
func TestTokensBadInput(t *testing.T) {
	dir := t.TempDir()
	corpus := writeCorpus(t, dir)
	cfg := charGPTConfig(corpus, "chars")
	good := prepareIn(t, dir, cfg)
	n := 0
	// folder copies good, then edit changes it
	folder := func(edit func(f string)) string {
		n++
		f := filepath.Join(dir, fmt.Sprintf("case%d", n))
		os.Mkdir(f, 0o755)
		for _, name := range []string{"train.bin", "val.bin", "meta.json"} {
			b, err := os.ReadFile(filepath.Join(good, name))
			if err != nil {
				t.Fatal(err)
			}
			writeText(t, filepath.Join(f, name), string(b))
		}
		edit(f)
		return f
	}
	write := func(name string, b []byte) func(string) {
		return func(f string) { writeText(t, filepath.Join(f, name), string(b)) }
	}
	remove := func(name string) func(string) {
		return func(f string) { os.Remove(filepath.Join(f, name)) }
	}
	var high bytes.Buffer
	dataset.WriteTokens(&high, []int32{1, 2, 3, 70, 4, 5}, "uint16")
	for _, tc := range []struct {
		name   string
		folder string
		sets   []string
		want   string
	}{
		{"high id", folder(write("val.bin", high.Bytes())), nil,
			"val.bin: token 70 at token offset 3 (byte offset 6) is not below the vocabulary size"},
		{"odd length", folder(write("train.bin", []byte{1, 0, 2})), nil, "train.bin: 3 bytes is not a whole number of uint16 ids (2 bytes each)"},
		{"uint32 length", folder(func(f string) {
			b, _ := os.ReadFile(filepath.Join(f, "meta.json"))
			write("meta.json", bytes.Replace(b, []byte(`"uint16"`), []byte(`"uint32"`), 1))(f)
			write("train.bin", []byte{1, 0, 0, 0, 2, 0})(f)
		}), nil, "train.bin: 6 bytes is not a whole number of uint32 ids (4 bytes each)"},
		{"no train.bin", folder(remove("train.bin")), nil, "train.bin is missing: make the folder with train prepare"},
		{"no val.bin", folder(remove("val.bin")), nil, "val.bin is missing"},
		{"no meta.json", folder(remove("meta.json")), nil, `meta.json is missing, and data.vocab = "chars" does not define the ids by itself`},
		{"vocab disagrees", good, []string{"--set", "data.vocab=bytes"}, `data.vocab = "bytes", but ` + filepath.Join(good, "meta.json") + ` says the ids are of vocab "chars"`},
		{"short val.bin", folder(write("val.bin", bytes.Repeat([]byte{1, 0}, 5))), nil, "val.bin: dataset: block_size 16 is longer than the test split (5 tokens)"},
		{"window needs one more", folder(write("val.bin", bytes.Repeat([]byte{1, 0}, 16))), nil, "a window needs 17"},
		{"short train.bin", good, []string{"--set", "data.block_size=100000"}, "train.bin: dataset: block_size 100000 is longer than the training split"},
		{"not a folder", corpus, nil, "not a folder"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runCmd(t, t.TempDir(), asTokens(cfg, tc.folder), tc.sets...)
			checkBadInput(t, subResult{code: r.code, stderr: r.stderr}, tc.want)
		})
	}
}

// TestPrepareBadInput: prepare's wrong input is exit 2 naming it, and
// leaves no folder, nor anything half-written beside it.
func TestPrepareBadInput(t *testing.T) {
	dir := t.TempDir()
	corpus := writeCorpus(t, dir)
	short := writeText(t, filepath.Join(dir, "short.txt"), "to be or not to be\n")
	cfg := writeText(t, filepath.Join(dir, "c.toml"), charGPTConfig(corpus, "chars"))
	other := filepath.Join(dir, "other")
	os.Mkdir(other, 0o755)
	writeText(t, filepath.Join(other, "notes.txt"), "mine")
	readOnly := filepath.Join(dir, "ro")
	os.Mkdir(readOnly, 0o555)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"short text", []string{"--set", "data.path=" + short}, "short.txt\" is too short for one window in val.bin: dataset: block_size 16 is longer than the test split (2 tokens)"},
		{"no test part", []string{"--set", "data.test_fraction=0"}, "data.test_fraction = 0 leaves val.bin empty"},
		{"not text", []string{"--set", "data.name=digits", "--set", "data.block_size=0"}, `prepare: data.name = "digits": prepare tokenizes a text`},
		{"missing text", []string{"--set", "data.path=" + filepath.Join(dir, "nope.txt")}, "nope.txt: no such file"},
		{"other files", []string{"--out", other}, "holds notes.txt, which prepare does not write"},
		{"no config", nil, "--config FILE is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"prepare"}, tc.args...)
			if tc.name != "no config" {
				args = append(args, "--config", cfg)
			}
			if !slices.Contains(tc.args, "--out") {
				args = append(args, "--out", filepath.Join(dir, "out"))
			}
			checkBadInput(t, runSub(args...), tc.want)
			if _, err := os.Stat(filepath.Join(dir, "out")); err == nil {
				t.Errorf("a failed prepare left %s", filepath.Join(dir, "out"))
			}
		})
	}
	if os.Geteuid() != 0 { // root writes anywhere
		checkBadInput(t, runSub("prepare", "--config", cfg, "--out", filepath.Join(readOnly, "out")), "cannot write there")
	}
	checkBadInput(t, runSub("prepare", "--config", cfg, "--out", filepath.Join(corpus, "out")), "--out "+filepath.Join(corpus, "out"))
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".tmp-") {
			t.Errorf("a failed prepare left %s", e.Name())
		}
	}
}

// TestPrepareReplaces: prepare again into its own folder replaces it whole,
// and the default --out is the text's path with the vocabulary's kind for
// its extension.
func TestPrepareReplaces(t *testing.T) {
	dir := t.TempDir()
	corpus := writeCorpus(t, dir)
	cfg := writeText(t, filepath.Join(dir, "c.toml"), charGPTConfig(corpus, "bytes"))
	for range 2 {
		if r := runSub("prepare", "--config", cfg); r.code != 0 {
			t.Fatalf("exit %d:\n%s", r.code, r.stderr)
		}
	}
	checkPrepared(t, filepath.Join(dir, "input.bytes"), corpus, "bytes")
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{"c.toml", "input.bytes", "input.txt"}; !slices.Equal(names, want) {
		t.Errorf("the folder holds %q, want %q", names, want)
	}
}

// TestPrepareBar: on a terminal prepare draws a bar that reaches 100% and is
// cleared; elsewhere (a pipe, a file) it writes nothing.
func TestPrepareBar(t *testing.T) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pty: %v", err)
	}
	defer ptmx.Close()
	defer tty.Close()
	bar := newBar(tty, 3000)
	for _, done := range []int{0, 1000, 1001, 3000, -1} {
		bar(done)
	}
	tty.Close()
	var out bytes.Buffer
	out.ReadFrom(ptmx) // ends with an error when the tty side is closed
	got := out.String()
	for _, want := range []string{"\rprepare: tokenizing [", "  0% of 0.0 MB", " 33% of 0.0 MB", "100% of 0.0 MB", "\r\033[K"} {
		if !strings.Contains(got, want) {
			t.Errorf("the bar wrote %q, want it to hold %q", got, want)
		}
	}
	if n := strings.Count(got, " 33%"); n != 1 {
		t.Errorf("33%% drawn %d times, want once (an unchanged percentage is not redrawn)", n)
	}
	var file bytes.Buffer
	newBar(&file, 3000)(1500)
	if file.Len() != 0 {
		t.Errorf("not a terminal: the bar wrote %q", file.String())
	}
}

// TestPrepareLargeText: a text of several pieces of EncodeParallel's, encoded
// on two goroutines, gives the files of its one-piece encoding.
func TestPrepareLargeText(t *testing.T) {
	dir := t.TempDir()
	piece, err := os.ReadFile(writeCorpus(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	corpus := writeText(t, filepath.Join(dir, "large.txt"), strings.Repeat(string(piece), (3<<20)/len(piece)+1))
	for _, vocab := range []string{"chars", "bytes"} {
		cfg := writeText(t, filepath.Join(dir, vocab+".toml"), charGPTConfig(corpus, vocab))
		if r := runSub("prepare", "--config", cfg); r.code != 0 {
			t.Fatalf("exit %d:\n%s", r.code, r.stderr)
		}
		checkPrepared(t, filepath.Join(dir, "large."+vocab), corpus, vocab)
	}
}

// TestTokensByteLevel prepares a text under the byte-level vocabularies and
// trains from the folder: the losses of the text run, bit for bit. A bpe
// folder and its checkpoints carry tokenizer.json, and the folder without
// it is exit 2 naming it; a gpt2 folder trains without meta.json too, as
// nanoGPT's prepare.py writes it.
func TestTokensByteLevel(t *testing.T) {
	corpus := writeCorpus(t, t.TempDir())
	for _, tc := range []struct {
		vocab string
		sets  []string
	}{
		{"bpe", []string{"--set", "data.vocab_size=300"}},
		{"gpt2", nil},
	} {
		t.Run(tc.vocab, func(t *testing.T) {
			dir := t.TempDir()
			cfg := charGPTConfig(corpus, tc.vocab)
			text := runCmd(t, dir, cfg, tc.sets...)
			if text.code != 0 {
				t.Fatalf("text run: exit %d:\n%s", text.code, text.stderr)
			}
			folder := prepareIn(t, dir, cfg, tc.sets...)
			want := stepLosses(text.events)
			train := func(name string, wantCode int) runResult {
				t.Helper()
				tdir := filepath.Join(dir, name)
				os.Mkdir(tdir, 0o755)
				r := runCmd(t, tdir, asTokens(cfg, folder), tc.sets...)
				if r.code != wantCode {
					t.Fatalf("%s: exit %d, want %d:\n%s", name, r.code, wantCode, r.stderr)
				}
				if wantCode != 0 {
					return r
				}
				got := stepLosses(r.events)
				if len(want) != 6 || len(got) != len(want) {
					t.Fatalf("%s: the runs logged %d and %d steps, want 6", name, len(want), len(got))
				}
				for s, l := range want {
					if got[s] != l {
						t.Errorf("%s: step %d: tokens loss %v, text loss %v", name, s, got[s], l)
					}
				}
				return r
			}
			tokenizer := filepath.Join(folder, "tokenizer.json")
			if tc.vocab == "bpe" {
				train("tokens", 0)
				cks, _ := filepath.Glob(filepath.Join(dir, "tokens", "checkpoints", "step-*", "tokenizer.json"))
				if len(cks) == 0 {
					t.Error("no checkpoint of the tokens run holds tokenizer.json")
				}
				if err := os.Remove(tokenizer); err != nil {
					t.Fatal(err)
				}
				r := train("no-tokenizer", 2)
				if !strings.Contains(r.stderr, "tokenizer.json is missing") {
					t.Errorf("without tokenizer.json: stderr %q does not name it", r.stderr)
				}
				return
			}
			if _, err := os.Stat(tokenizer); err == nil {
				t.Error("a gpt2 folder holds a tokenizer.json: its ids need none")
			}
			if err := os.Remove(filepath.Join(folder, "meta.json")); err != nil {
				t.Fatal(err)
			}
			train("nanogpt", 0)
		})
	}
}
