package main

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/pipetrain/pipetrain/cmd/train/internal/config"
	"github.com/pipetrain/pipetrain/dataset"
)

// textData is a text split for a language model: the training tokens,
// which each step draws windows from, and the evaluation splits as their
// non-overlapping windows.
type textData struct {
	vocab     dataset.Vocab
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
		return "", badInputf("data.download: %v", err)
	}
	return path, nil
}

// loadText reads the text the config names and splits it: the first
// 1 − test_fraction of the tokens train, the rest test; validation comes
// from the end of the training part. data.name = "tokens" reads a
// prepared folder instead (loadTokens).
func loadText(ctx context.Context, c *config.Config, log *runLog) (*textData, error) {
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
	text, err := dataset.LoadText(path, d.Vocab)
	if err != nil {
		return nil, badInput(err)
	}
	train, val, test, err := text.Split(d.TestFraction, d.ValidationFraction)
	if err != nil {
		return nil, badInput(err)
	}
	td := &textData{vocab: text.Vocab, train: dataset.IDs(train)}
	for _, s := range []struct {
		name string
		ids  []int32
		set  **dataset.Set
	}{{"training", train, nil}, {"validation", val, &td.val}, {"test", test, &td.test}} {
		if s.set != nil && len(s.ids) == 0 {
			continue // no such split
		}
		if err := dataset.CheckBlock(s.name, s.ids, d.BlockSize); err != nil {
			return nil, badInputf("data.block_size = %d: %v", d.BlockSize, err)
		}
		if s.set != nil {
			*s.set = textSet(text, s.ids, d.BlockSize)
		}
	}
	td.meta = textMeta(text.Name, text.Vocab, d.BlockSize)
	return td, nil
}

// textMeta is a text's set with no rows that a language model's
// description is made from: its vocabulary as the classes, the block as
// the features.
func textMeta(name string, v dataset.Vocab, block int) *dataset.Set {
	return &dataset.Set{Name: name, Classes: v.Tokens(), Features: block}
}

// configVocab returns the vocabulary of c's text model, reading the text
// only when the vocabulary is made from it ("chars"): "bytes" is fixed.
func configVocab(ctx context.Context, c *config.Config, log *runLog) (dataset.Vocab, error) {
	// integrate: "gpt2" is fixed too: a case dataset.VocabGPT2 returning
	// dataset.NewVocab(dataset.VocabGPT2, no text, 0), so that import reads
	// no text for GPT-2's weights.
	switch c.Data.Vocab {
	case dataset.VocabBytes:
		v, err := dataset.VocabFrom(dataset.VocabBytes, nil)
		if err != nil {
			return dataset.Vocab{}, badInputf("data.vocab = %q: %v", c.Data.Vocab, err)
		}
		return v, nil
	}
	td, err := loadText(ctx, c, log)
	if err != nil {
		return dataset.Vocab{}, err
	}
	return td.vocab, nil
}

// textSet is a split's non-overlapping windows as a set: each row a window
// of token ids, its labels the next tokens, a label a token.
func textSet(text *dataset.Text, ids []int32, block int) *dataset.Set {
	x, labels := dataset.TextWindows(ids, block)
	return &dataset.Set{Name: text.Name, X: x, Labels: labels, Classes: text.Vocab.Tokens(), Features: block}
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

// bitsPerByte is a text model's loss, in nats per target token of set, in
// bits per byte of the targets' UTF-8 text, which compares models whose
// tokenizers differ.
func bitsPerByte(v dataset.Vocab, set *dataset.Set, loss float64) float64 {
	ids := make([]int32, len(set.Labels))
	for i, l := range set.Labels {
		ids[i] = int32(l)
	}
	return loss * float64(len(ids)) / float64(len(v.Decode(ids))) / math.Ln2
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
