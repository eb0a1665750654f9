package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pipetrain/pipetrain/cmd/train/internal/config"
	"github.com/pipetrain/pipetrain/dataset"
)

const prepareUsage = "usage: train prepare --config FILE [--set KEY=VALUE]... [--out DIR]"

// runPrepare tokenizes the text the config's [data] names once, as
// nanoGPT's prepare.py does: the first 1 − data.test_fraction of its
// tokens into train.bin, the rest into val.bin, and meta.json saying how to
// read them, all in --out (by default the text's path with its extension
// replaced by the vocabulary's kind: input.txt gives input.chars/). The
// folder appears whole or not at all. data.name = "tokens" with
// data.path = that folder then trains from it.
func runPrepare(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("prepare", flag.ContinueOnError)
	cfgPath := fs.String("config", "", "the TOML config whose [data] names the text")
	var sets setFlags
	fs.Var(&sets, "set", "override a config key: KEY=VALUE (repeatable)")
	out := fs.String("out", "", "the folder to write (default: the text's path with its extension replaced by the vocabulary's kind)")
	if err := parseFlags(fs, args, prepareUsage); err != nil {
		return err
	}
	if *cfgPath == "" {
		return badInputf("prepare: --config FILE is required (%s)", prepareUsage)
	}
	c, err := config.Load(*cfgPath, sets)
	if err != nil {
		return badInput(err)
	}
	d := c.Data
	if d.Name != "text" && d.Name != "shakespeare" {
		return badInputf("prepare: data.name = %q: prepare tokenizes a text: data.name = \"text\" or \"shakespeare\"", d.Name)
	}
	path, err := textPath(ctx, d, func() { fmt.Fprintln(stderr, "prepare: fetching tiny Shakespeare into the cache") })
	if err != nil {
		return err
	}
	text, err := os.ReadFile(path)
	if err != nil {
		return badInputf("prepare: data.path: %v", err)
	}
	if *out == "" {
		*out = strings.TrimSuffix(path, filepath.Ext(path)) + "." + d.Vocab
	}
	start := time.Now()
	p, err := prepareTokens(text, path, c, newBar(stderr, len(text)))
	if err != nil {
		return err
	}
	if err := writeTokenDir(*out, p); err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "prepare: %s: %s %d tokens, %s %d tokens (%s), vocab %q of %d tokens, %.2fs\n",
		*out, trainBin, len(p.train), valBin, len(p.val), p.meta.DType, p.vocab.Kind(), p.vocab.Size(), time.Since(start).Seconds())
	return err
}

// prepared is a text tokenized and split, ready to write.
type prepared struct {
	vocab      dataset.Vocab
	meta       dataset.TokenMeta
	train, val []int32
}

// prepareTokens builds the vocabulary of text (read from path) and encodes
// its two parts on every core, reporting progress to bar.
func prepareTokens(text []byte, path string, c *config.Config, bar func(done int)) (*prepared, error) {
	d := c.Data
	cut, err := testCut(text, path, d.Vocab, d.TestFraction)
	if err != nil {
		return nil, err
	}
	source := text // chars and bytes: every token of the text, as LoadText makes them
	if d.Vocab != dataset.VocabChars && d.Vocab != dataset.VocabBytes {
		source = text[:cut] // a trained tokenizer learns from the training part only
	}
	vocab, err := dataset.NewVocab(d.Vocab, source, d.VocabSize)
	if err != nil {
		return nil, badInputf("prepare: data.path = %q: %v", path, err)
	}
	workers := runtime.GOMAXPROCS(0)
	defer bar(-1)
	train, err := dataset.EncodeParallel(vocab, text[:cut], workers, bar)
	if err != nil {
		return nil, badInputf("prepare: data.path = %q: %v", path, err)
	}
	val, err := dataset.EncodeParallel(vocab, text[cut:], workers, func(done int) { bar(cut + done) })
	if err != nil {
		return nil, badInputf("prepare: data.path = %q: %v", path, err)
	}
	for _, s := range []struct {
		name, file string
		n          int
	}{{"training", trainBin, len(train)}, {"test", valBin, len(val)}} {
		if err := dataset.CheckBlockLen(s.name, s.n, d.BlockSize); err != nil {
			return nil, badInputf("prepare: data.block_size = %d: data.path = %q is too short for one window in %s: %v", d.BlockSize, path, s.file, err)
		}
	}
	return &prepared{vocab: vocab, meta: tokenMeta(vocab), train: train, val: val}, nil
}

// testCut returns the byte offset at which text's test part (val.bin)
// begins: after the first int(n·(1 − fraction)) of its n tokens, as
// dataset's Text.Split and nanoGPT's data[:int(n*0.9)] cut. A token is a
// byte under "bytes" and a character otherwise (the test part of a trained
// tokenizer's text is cut at a character, as nanoGPT cuts its text before
// encoding it).
func testCut(text []byte, path, kind string, fraction float64) (int, error) {
	if fraction == 0 {
		return 0, badInputf("prepare: data.test_fraction = 0 leaves %s empty: training on the folder evaluates on it; set data.test_fraction (nanoGPT: 0.1)", valBin)
	}
	n := len(text)
	if kind != dataset.VocabBytes {
		n = utf8.RuneCount(text)
	}
	nFit := int(float64(n) * (1 - fraction))
	switch {
	case n == 0:
		return 0, badInputf("prepare: data.path = %q: the text is empty", path)
	case nFit == n:
		return 0, badInputf("prepare: data.test_fraction = %v of the %d tokens of %q leaves %s empty", fraction, n, path, valBin)
	case nFit == 0:
		return 0, badInputf("prepare: data.test_fraction = %v of the %d tokens of %q leaves %s empty", fraction, n, path, trainBin)
	}
	if kind == dataset.VocabBytes {
		return nFit, nil
	}
	off := 0
	for range nFit {
		_, size := utf8.DecodeRune(text[off:])
		off += size
	}
	return off, nil
}

// writeTokenDir writes p's files into dir whole or not at all: into a
// temporary folder beside it, renamed into place at the end. A dir that
// exists is replaced if it holds only a prepared folder's files.
func writeTokenDir(dir string, p *prepared) error {
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return badInputf("prepare: --out %s: %v", dir, err)
	}
	if err := replaceable(dir); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(parent, ".tmp-"+filepath.Base(dir)+"-*")
	if err != nil {
		return badInputf("prepare: --out %s: cannot write there: %v", dir, err)
	}
	defer os.RemoveAll(tmp) // gone by then after the rename
	meta, err := json.MarshalIndent(p.meta, "", "  ")
	if err != nil {
		return fmt.Errorf("prepare: %v", err)
	}
	files := []struct {
		name  string
		write func(io.Writer) error
	}{
		{trainBin, func(w io.Writer) error { return dataset.WriteTokens(w, p.train, p.meta.DType) }},
		{valBin, func(w io.Writer) error { return dataset.WriteTokens(w, p.val, p.meta.DType) }},
		{metaJSON, func(w io.Writer) error { _, err := w.Write(append(meta, '\n')); return err }},
	}
	if p.vocab.Kind() == dataset.VocabBPE {
		tj, err := p.vocab.TokenizerJSON()
		if err != nil {
			return fmt.Errorf("prepare: %v", err)
		}
		files = append(files, struct {
			name  string
			write func(io.Writer) error
		}{tokenizerJSON, func(w io.Writer) error { _, err := w.Write(tj); return err }})
	}
	for _, f := range files {
		if err := writeFile(filepath.Join(tmp, f.name), f.write); err != nil {
			return fmt.Errorf("prepare: --out %s: %v", dir, err)
		}
	}
	if err := os.Chmod(tmp, 0o755); err != nil { // MkdirTemp's 0700 would hide it from other users
		return fmt.Errorf("prepare: --out %s: %v", dir, err)
	}
	if _, err := os.Stat(dir); err == nil {
		old := tmp + ".old"
		if err := os.Rename(dir, old); err != nil {
			return fmt.Errorf("prepare: --out %s: %v", dir, err)
		}
		if err := os.Rename(tmp, dir); err != nil {
			_ = os.Rename(old, dir) // put the old folder back
			return fmt.Errorf("prepare: --out %s: %v", dir, err)
		}
		return os.RemoveAll(old)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("prepare: --out %s: %v", dir, err)
	}
	return nil
}

// replaceable checks that dir does not exist, or is a folder holding only
// what prepare writes, so that replacing it loses nothing else.
func replaceable(dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return nil // nothing there (or nothing we can see: the rename will say)
	}
	if !st.IsDir() {
		return badInputf("prepare: --out %s is a file, not a folder", dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return badInputf("prepare: --out %s: %v", dir, err)
	}
	for _, e := range entries {
		if !slices.Contains([]string{trainBin, valBin, metaJSON, tokenizerJSON}, e.Name()) {
			return badInputf("prepare: --out %s holds %s, which prepare does not write: choose another --out, or empty it", dir, e.Name())
		}
	}
	return nil
}

// writeFile writes path through a buffer, synced to disk.
func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	if err := write(w); err != nil {
		f.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// newBar returns a progress callback drawing a bar of the bytes of total
// encoded on stderr when it is a terminal (and nothing otherwise); -1 clears it.
func newBar(stderr io.Writer, total int) func(done int) {
	if !isTerminal(stderr) {
		return func(int) {}
	}
	last := -1
	return func(done int) {
		if done < 0 {
			fmt.Fprint(stderr, "\r\033[K")
			return
		}
		pct := 100 * done / max(1, total)
		if pct == last {
			return
		}
		last = pct
		const width = 40
		fill := width * pct / 100
		fmt.Fprintf(stderr, "\rprepare: tokenizing [%s%s] %3d%% of %.1f MB", strings.Repeat("=", fill), strings.Repeat(" ", width-fill), pct, float64(total)/1e6)
	}
}
