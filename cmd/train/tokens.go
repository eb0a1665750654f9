package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/pipetrain/pipetrain/cmd/train/internal/config"
	"github.com/pipetrain/pipetrain/dataset"
)

// The files of a prepared token folder, as nanoGPT's prepare.py names the first two.
const (
	trainBin      = "train.bin"
	valBin        = "val.bin"
	metaJSON      = "meta.json"
	tokenizerJSON = "tokenizer.json"
)

// tokensEvalTokens bounds the targets an evaluation of data.name = "tokens"
// reads from val.bin (and from the validation part of train.bin): at most
// tokensEvalTokens/block_size windows spread evenly over the file, so that
// an evaluation costs the same time and memory whatever the file's size
// (2^20 targets took a small GPT 130 s and 500 MB more). A file up to this
// size, such as tiny Shakespeare's 111,540 test tokens, is evaluated on
// every window, as text is.
const tokensEvalTokens = 1 << 17

// loadTokens opens the prepared folder data.path: train.bin, mapped, to
// draw training windows from (its last validation_fraction held out for
// validation), and val.bin's windows as the test split. Every error is the
// user's input being wrong (exit 2).
func loadTokens(c *config.Config) (_ *textData, err error) {
	d := c.Data
	dir := d.Path
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, badInputf("data.path = %q: not a folder: data.name = \"tokens\" reads the folder train prepare writes (train.bin, val.bin, meta.json)", dir)
	}
	meta, vocab, err := tokensVocab(dir, d.Vocab)
	if err != nil {
		return nil, err
	}
	td := &textData{vocab: vocab}
	if vocab.Kind() == dataset.VocabBPE { // each checkpoint carries it
		if td.tokenizer, err = vocab.TokenizerJSON(); err != nil {
			return nil, err
		}
	}
	defer func() {
		if err != nil {
			td.close()
		}
	}()
	open := func(name string) (*dataset.TokenFile, error) {
		f, err := dataset.OpenTokens(filepath.Join(dir, name), meta.DType, vocab.Size())
		if errors.Is(err, fs.ErrNotExist) {
			return nil, badInputf("data.path = %q: %s is missing: make the folder with train prepare", dir, name)
		}
		if err != nil {
			return nil, badInputf("data.path = %q: %v", dir, err)
		}
		td.files = append(td.files, f)
		return f, nil
	}
	train, err := open(trainBin)
	if err != nil {
		return nil, err
	}
	val, err := open(valBin)
	if err != nil {
		return nil, err
	}
	// validation from train.bin's end, as text's comes from its training part's
	nFit := train.Len()
	nTrain := int(float64(nFit) * (1 - d.ValidationFraction))
	if d.ValidationFraction > 0 && nTrain == nFit {
		return nil, badInputf("data.validation_fraction = %v of %s's %d tokens leaves the validation split empty", d.ValidationFraction, train.Path(), nFit)
	}
	block := d.BlockSize
	for _, s := range []struct {
		name string
		f    *dataset.TokenFile
		set  **dataset.Set
	}{{"training", train.Slice(0, nTrain), nil}, {"validation", train.Slice(nTrain, nFit), &td.val}, {"test", val, &td.test}} {
		if s.name == "validation" && d.ValidationFraction == 0 {
			continue // no such split
		}
		if err := dataset.CheckBlockLen(s.name, s.f.Len(), block); err != nil {
			return nil, badInputf("data.block_size = %d: %s: %v", block, s.f.Path(), err)
		}
		if s.set == nil {
			td.train = s.f
			continue
		}
		x, labels := dataset.TokenWindows(s.f, block, max(1, tokensEvalTokens/block))
		*s.set = &dataset.Set{Name: filepath.Base(dir), X: x, Labels: labels, Classes: vocab.Tokens(), Features: block}
	}
	td.meta = &dataset.Set{Name: filepath.Base(dir), Classes: vocab.Tokens(), Features: block}
	return td, nil
}

// tokensVocab reads dir's meta.json and the vocabulary it names, which must
// be data.vocab's kind. Without a meta.json (nanoGPT's own folders for
// GPT-2's tokenizer) the ids are uint16 and their meaning is data.vocab's,
// which must then be one that defines its ids by itself.
func tokensVocab(dir, kind string) (dataset.TokenMeta, dataset.Vocab, error) {
	path := filepath.Join(dir, metaJSON)
	m, err := dataset.ReadTokenMeta(path)
	if errors.Is(err, fs.ErrNotExist) {
		switch kind {
		case dataset.VocabBytes, dataset.VocabGPT2:
			v, err := dataset.NewVocab(kind, nil, 0)
			return dataset.TokenMeta{DType: dataset.TokensUint16, VocabSize: v.Size(), Vocab: kind}, v, err
		}
		return m, dataset.Vocab{}, badInputf("data.path = %q: %s is missing, and data.vocab = %q does not define the ids by itself: make the folder with train prepare, which writes it, or set data.vocab = %q (GPT-2's ids, as nanoGPT's prepare.py writes them) or %q (byte ids)",
			dir, metaJSON, kind, dataset.VocabGPT2, dataset.VocabBytes)
	}
	if err != nil {
		return m, dataset.Vocab{}, badInputf("data.path = %q: %v", dir, err)
	}
	if m.Vocab != kind {
		return m, dataset.Vocab{}, badInputf("data.vocab = %q, but %s says the ids are of vocab %q: set data.vocab = %q", kind, path, m.Vocab, m.Vocab)
	}
	var v dataset.Vocab
	if kind == dataset.VocabBPE {
		tj := filepath.Join(dir, tokenizerJSON)
		v, err = dataset.ReadTokenizerFile(tj)
		if errors.Is(err, fs.ErrNotExist) {
			return m, v, badInputf("data.path = %q: %s is missing: a folder of data.vocab = \"bpe\" needs the tokenizer its ids are of; make the folder with train prepare, which writes it", dir, tokenizerJSON)
		}
		if err != nil {
			return m, v, badInputf("%s: %v", tj, err)
		}
	} else if v, err = dataset.VocabFrom(kind, m.Tokens); err != nil {
		return m, v, badInputf("%s: %v", path, err)
	}
	if v.Size() != m.VocabSize {
		return m, v, badInputf("%s: vocab_size %d, but vocab %q has %d tokens", path, m.VocabSize, kind, v.Size())
	}
	return m, v, nil
}

// tokenMeta is the meta.json train prepare writes for vocab: chars lists
// its tokens; bytes does not, as its ids are the byte values and JSON
// strings cannot hold the bytes above 0x7f alone.
func tokenMeta(v dataset.Vocab) dataset.TokenMeta {
	m := dataset.TokenMeta{DType: dataset.TokenDType(v.Size()), VocabSize: v.Size(), Vocab: v.Kind()}
	if v.Kind() == dataset.VocabChars {
		m.Tokens = v.Tokens()
	}
	return m
}
