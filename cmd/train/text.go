package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/pipetrain/pipetrain/cmd/train/internal/config"
	"github.com/pipetrain/pipetrain/dataset"
	"github.com/pipetrain/pipetrain/model"
)

// textData is a text split for a language model: the training tokens,
// which each step draws windows from, and the evaluation splits as their
// non-overlapping windows.
type textData struct {
	vocab     dataset.Vocab
	tokenizer []byte         // a bpe vocabulary's tokenizer.json, for each checkpoint; nil for the others
	train     dataset.Tokens // in memory, or train.bin mapped
	val, test *dataset.Set   // windows; val nil without data.validation_fraction
	meta      *dataset.Set   // no rows: the vocabulary as classes and the block as features
	files     []*dataset.TokenFile
}

// close unmaps the token files, if any; td must not be used after.
func (td *textData) close() {
	for _, f := range td.files {
		_ = f.Close() // read-only mappings: nothing is lost
	}
	td.files = nil
}

// isText reports whether the config trains a language model on text, or on
// its tokens as train prepare wrote them.
func isText(c *config.Config) bool {
	return slices.Contains([]string{"text", "shakespeare", "tokens"}, c.Data.Name)
}

// textPath is the text file the config names, tiny Shakespeare fetched
// into the cache (after announce) when data.download asks for it.
func textPath(ctx context.Context, d config.Data, announce func()) (string, error) {
	if d.Name != "shakespeare" || d.Path != "" {
		return d.Path, nil
	}
	if !d.Download {
		return "", badInputf("data.path is empty: give tiny Shakespeare's input.txt, or set data.download = true")
	}
	announce()
	path, err := dataset.DownloadShakespeare(ctx, dataset.DownloadOptions{})
	if err != nil {
		return "", badInputf("data.download: %v (with tiny Shakespeare's input.txt at hand, --set data.path=FILE trains from it without a download)", err)
	}
	return path, nil
}

// loadText reads the text the config names, makes its vocabulary (a bpe
// one trained on the training part) or takes vocab, a checkpoint's, when
// not nil, and splits it: the first 1 − test_fraction of the tokens (of
// the characters, for gpt2 and bpe) train, the rest test; validation comes
// from the end of the training part. data.name = "tokens" reads a
// prepared folder instead (loadTokens).
func loadText(ctx context.Context, c *config.Config, log *runLog, vocab *dataset.Vocab) (*textData, error) {
	d := c.Data
	if d.Name == "tokens" {
		return loadTokens(c)
	}
	path, err := textPath(ctx, d, func() {
		log.event("download").Str("data", d.Name).Msg("fetching data set into the cache")
	})
	if err != nil {
		return nil, err
	}
	var splits *dataset.Splits
	if vocab == nil {
		splits, err = dataset.LoadSplits(path, d.Vocab, d.VocabSize, d.TestFraction, d.ValidationFraction)
	} else {
		var data []byte
		if data, err = os.ReadFile(path); err != nil {
			return nil, badInputf("data.path: %v", err)
		}
		splits, err = vocab.EncodeSplits(filepath.Base(path), data, d.TestFraction, d.ValidationFraction)
	}
	if err != nil {
		return nil, badInput(err)
	}
	td := &textData{vocab: splits.Vocab, train: dataset.IDs(splits.Train)}
	if td.vocab.Kind() == dataset.VocabBPE {
		if td.tokenizer, err = td.vocab.TokenizerJSON(); err != nil {
			return nil, err
		}
	}
	for _, s := range []struct {
		name string
		ids  []int32
		set  **dataset.Set
	}{{"training", splits.Train, nil}, {"validation", splits.Val, &td.val}, {"test", splits.Test, &td.test}} {
		if s.set != nil && len(s.ids) == 0 {
			continue // no such split
		}
		if err := dataset.CheckBlock(s.name, s.ids, d.BlockSize); err != nil {
			return nil, badInputf("data.block_size = %d: %v", d.BlockSize, err)
		}
		if s.set != nil {
			*s.set = textSet(splits.Name, td.vocab.Tokens(), s.ids, d.BlockSize)
		}
	}
	td.meta = textMeta(splits.Name, td.vocab, d.BlockSize)
	return td, nil
}

// textMeta is a text's set with no rows that a language model's
// description is made from: its vocabulary as the classes, the block as
// the features.
func textMeta(name string, v dataset.Vocab, block int) *dataset.Set {
	return &dataset.Set{Name: name, Classes: v.Tokens(), Features: block}
}

// configVocab returns the vocabulary of c's text model, reading the text
// only when the vocabulary is made from it ("chars", "bpe"): "bytes" and
// "gpt2" are fixed.
func configVocab(ctx context.Context, c *config.Config, log *runLog) (dataset.Vocab, error) {
	switch c.Data.Vocab {
	case dataset.VocabBytes, dataset.VocabGPT2:
		v, err := dataset.NewVocab(c.Data.Vocab, nil, 0)
		if err != nil {
			return dataset.Vocab{}, badInputf("data.vocab = %q: %v", c.Data.Vocab, err)
		}
		return v, nil
	}
	td, err := loadText(ctx, c, log, nil)
	if err != nil {
		return dataset.Vocab{}, err
	}
	td.close()
	return td.vocab, nil
}

// textSet is a split's non-overlapping windows as a set: each row a window
// of token ids, its labels the next tokens, a label a token.
func textSet(name string, classes []string, ids []int32, block int) *dataset.Set {
	x, labels := dataset.TextWindows(ids, block)
	return &dataset.Set{Name: name, X: x, Labels: labels, Classes: classes, Features: block}
}

// checkpointVocab rebuilds a text model's vocabulary from its checkpoint
// alone: from its kind and tokens, or a bpe one from the tokenizer.json
// beside its state.json. cmd names the command in errors.
func checkpointVocab(cmd string, m *model.Model) (dataset.Vocab, error) {
	if m.Vocab != dataset.VocabBPE {
		v, err := dataset.VocabFrom(m.Vocab, m.Classes)
		if err != nil {
			return dataset.Vocab{}, badInputf("%s: --checkpoint %s: %v", cmd, m.Checkpoint.Dir, err)
		}
		return v, nil
	}
	path := filepath.Join(m.Checkpoint.Dir, dataset.TokenizerFile)
	v, err := dataset.ReadTokenizerFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return dataset.Vocab{}, badInputf("%s: --checkpoint %s: no %s there: a model of data.vocab = \"bpe\" needs the vocabulary it was trained with", cmd, m.Checkpoint.Dir, dataset.TokenizerFile)
	case err != nil:
		return dataset.Vocab{}, badInputf("%s: --checkpoint %s: %v", cmd, m.Checkpoint.Dir, err)
	case !slices.Equal(v.Tokens(), m.Classes):
		return dataset.Vocab{}, badInputf("%s: --checkpoint %s: the %d tokens of %s are not the model's %d classes", cmd, m.Checkpoint.Dir, v.Size(), path, len(m.Classes))
	}
	return v, nil
}

// textBatches draws each training step's windows at random offsets, keyed
// by the step's place in the run so that a resumed run draws the same.
type textBatches struct {
	s      *dataset.TextSampler
	epochs int // batches an epoch
}

func (b textBatches) BatchSize() int       { return b.s.BatchSize() }
func (b textBatches) BatchesPerEpoch() int { return b.epochs }

func (b textBatches) BatchInto(epoch, i int, x []float32, labels []int, _ []float32) int {
	b.s.BatchInto(epoch*b.epochs+i, x, labels)
	return b.s.BatchSize()
}

// bitsPerChar is a text model's loss in bits per token.
func bitsPerChar(loss float64) float64 { return loss / math.Ln2 }

// bitsPerByte is a text model's loss, the mean over the targets labels,
// in bits per byte of their text: comparable across vocabularies.
func bitsPerByte(loss float64, v dataset.Vocab, labels []int) float64 {
	ids := make([]int32, len(labels))
	for i, l := range labels {
		ids[i] = int32(l)
	}
	return loss * float64(len(labels)) / math.Ln2 / float64(v.ByteLen(ids))
}

// describeText is the data event's account of a text: its tokens a split.
func describeText(td *textData) string {
	n := func(s *dataset.Set) int {
		if s == nil {
			return 0
		}
		return len(s.Labels)
	}
	return fmt.Sprintf("%d training, %d validation and %d test tokens (windows: their targets), vocabulary %d", td.train.Len(), n(td.val), n(td.test), td.vocab.Size())
}
