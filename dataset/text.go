package dataset

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/pipetrain/pipetrain/tensor"
)

// Tiny Shakespeare: the data set's name (its cache folder) and its one file.
const (
	ShakespeareName = "tinyshakespeare"
	ShakespeareFile = "input.txt"
)

// The vocabulary kinds.
const (
	VocabChars = "chars" // the sorted distinct characters of the text
	VocabBytes = "bytes" // the 256 byte values
)

// Vocab maps a text's tokens to ids and back. Under "chars" the tokens are the distinct
// Unicode characters of a text, sorted by code point, with ids 0..n-1 in that order (as
// nanoGPT's sorted(list(set(data)))); under "bytes" they are the 256 byte values and
// the id of a byte is its value. The zero Vocab has no tokens. A Vocab is never modified
// once built, so copies may be shared between goroutines.
type Vocab struct {
	kind   string
	tokens []string              // id -> text
	ascii  *[utf8.RuneSelf]int32 // chars: id+1 of an ASCII character, 0 if absent

	ids map[rune]int32 // chars: id of a non-ASCII character
}

func checkVocabKind(kind string) error {
	if kind != VocabChars && kind != VocabBytes {
		return fmt.Errorf("dataset: vocab %q: want %q or %q", kind, VocabChars, VocabBytes)
	}
	return nil
}

// bytesTokens are the one-byte strings of the "bytes" vocabulary.
var bytesTokens = func() []string {
	t := make([]string, 256)
	for i := range t {
		t[i] = string([]byte{byte(i)})
	}
	return t
}()

func bytesVocab() Vocab { return Vocab{kind: VocabBytes, tokens: bytesTokens} }

// charsVocab builds a "chars" vocabulary from sorted distinct runes.
func charsVocab(runes []rune) Vocab {
	v := Vocab{kind: VocabChars, tokens: make([]string, len(runes)), ascii: new([utf8.RuneSelf]int32)}
	for id, r := range runes {
		v.tokens[id] = string(r)
		if r < utf8.RuneSelf {
			v.ascii[r] = int32(id) + 1
		} else {
			if v.ids == nil {
				v.ids = map[rune]int32{}
			}
			v.ids[r] = int32(id)
		}
	}
	return v
}

// VocabFrom rebuilds a vocabulary from its kind and Tokens, as a checkpoint saves them,
// without the text it was made from. Under "chars" every token must be one valid
// character and the tokens must be sorted and distinct; under "bytes" tokens must be the
// 256 one-byte strings in order, or nil.
func VocabFrom(kind string, tokens []string) (Vocab, error) {
	if err := checkVocabKind(kind); err != nil {
		return Vocab{}, err
	}
	if kind == VocabBytes {
		if tokens != nil && !slices.Equal(tokens, bytesTokens) {
			return Vocab{}, fmt.Errorf("dataset: vocab %q: the tokens are not the 256 byte values in order", kind)
		}
		return bytesVocab(), nil
	}
	if len(tokens) == 0 {
		return Vocab{}, fmt.Errorf("dataset: vocab %q has no tokens", kind)
	}
	runes := make([]rune, len(tokens))
	for id, tok := range tokens {
		r, size := utf8.DecodeRuneInString(tok)
		switch {
		case size != len(tok) || r == utf8.RuneError && size <= 1:
			return Vocab{}, fmt.Errorf("dataset: vocab %q: token %d is %q, not one character", kind, id, tok)
		case id > 0 && r <= runes[id-1]:
			return Vocab{}, fmt.Errorf("dataset: vocab %q: token %d %q is not after token %d %q: tokens must be sorted and distinct",
				kind, id, tok, id-1, tokens[id-1])
		}
		runes[id] = r
	}
	return charsVocab(runes), nil
}

// Size returns the number of tokens, the width of a language model's output.
func (v Vocab) Size() int { return len(v.tokens) }

// Kind returns "chars" or "bytes" ("" for the zero Vocab).
func (v Vocab) Kind() string { return v.kind }

// Tokens returns a copy of each id's text: the character, or for "bytes" the one-byte
// string. VocabFrom(v.Kind(), v.Tokens()) rebuilds v.
func (v Vocab) Tokens() []string { return slices.Clone(v.tokens) }

// Encode returns the ids of the tokens of s. Under "chars" it is an error if s holds a
// character not in the vocabulary (the error gives its position, counted in characters
// from 0) or is not valid UTF-8 (counted in bytes); under "bytes" every string encodes.
func (v Vocab) Encode(s string) ([]int32, error) {
	if v.kind == VocabBytes {
		ids := make([]int32, len(s))
		for i := range len(s) {
			ids[i] = int32(s[i])
		}
		return ids, nil
	}
	ids := make([]int32, 0, len(s))
	for off := 0; off < len(s); {
		r, size := utf8.DecodeRuneInString(s[off:])
		if r == utf8.RuneError && size == 1 {
			return nil, fmt.Errorf("dataset: byte 0x%02x at byte offset %d is not valid UTF-8", s[off], off)
		}
		id, ok := v.id(r)
		if !ok {
			return nil, fmt.Errorf("dataset: character %q (%U) at %d is not in the vocabulary", r, r, len(ids))
		}
		ids = append(ids, id)
		off += size
	}
	return ids, nil
}

// id returns the id of r under "chars".
func (v *Vocab) id(r rune) (int32, bool) {
	if r >= 0 && r < utf8.RuneSelf {
		if v.ascii == nil {
			return 0, false
		}
		id := v.ascii[r]
		return id - 1, id > 0
	}
	id, ok := v.ids[r]
	return id, ok
}

// Decode returns the text of ids, concatenated; under "bytes" the result may not be
// valid UTF-8. An id outside [0, Size()) is a programming error (a model's outputs are
// as wide as its vocabulary), so Decode panics on one.
func (v Vocab) Decode(ids []int32) string {
	if v.kind == VocabBytes {
		b := make([]byte, len(ids))
		for i, id := range ids {
			if id < 0 || id > 255 {
				panic(fmt.Errorf("dataset.Vocab.Decode: id %d out of range [0, 256)", id))
			}
			b[i] = byte(id)
		}
		return string(b)
	}
	var sb strings.Builder
	sb.Grow(len(ids))
	for _, id := range ids {
		if id < 0 || int(id) >= len(v.tokens) {
			panic(fmt.Errorf("dataset.Vocab.Decode: id %d out of range [0, %d)", id, len(v.tokens)))
		}
		sb.WriteString(v.tokens[id])
	}
	return sb.String()
}

// Text is a whole text, encoded: IDs[i] is the id of token i under Vocab.
type Text struct {
	Name  string
	Vocab Vocab
	IDs   []int32
}

// LoadText reads a text file and encodes it under vocab ("chars" or "bytes"). Under
// "chars" the file must be UTF-8 and the vocabulary is made from its characters. An
// error names the file and what is wrong; a missing file gives an error that wraps
// fs.ErrNotExist. The text's Name is the file's base name.
func LoadText(path, vocab string) (*Text, error) {
	if err := checkVocabKind(vocab); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	return newText(filepath.Base(path), path, data, vocab)
}

// NewText encodes data under vocab ("chars" or "bytes") as LoadText does; name is the
// text's Name and stands for the file in errors.
func NewText(name string, data []byte, vocab string) (*Text, error) {
	return newText(name, name, data, vocab)
}

// newText encodes data; file names it in errors.
func newText(name, file string, data []byte, vocab string) (*Text, error) {
	if err := checkVocabKind(vocab); err != nil {
		return nil, err
	}
	if len(data) == 0 {
		return nil, fmt.Errorf("dataset: text file %q is empty", file)
	}
	if len(data) > math.MaxInt32 {
		return nil, fmt.Errorf("dataset: text file %q holds %d bytes, more than 2^31-1", file, len(data))
	}
	if vocab == VocabBytes {
		ids := make([]int32, len(data))
		for i, b := range data {
			ids[i] = int32(b)
		}
		return &Text{Name: name, Vocab: bytesVocab(), IDs: ids}, nil
	}
	// First pass: check the UTF-8 and collect the characters; second: encode.
	var seen [utf8.RuneSelf]bool
	other := map[rune]bool{}
	n := 0
	for off := 0; off < len(data); n++ {
		if b := data[off]; b < utf8.RuneSelf {
			seen[b] = true
			off++
			continue
		}
		r, size := utf8.DecodeRune(data[off:])
		if r == utf8.RuneError && size == 1 {
			return nil, fmt.Errorf("dataset: text file %q is not valid UTF-8: byte 0x%02x at byte offset %d (vocab %q reads any file)",
				file, data[off], off, VocabBytes)
		}
		other[r] = true
		off += size
	}
	runes := make([]rune, 0, len(other)+utf8.RuneSelf)
	for r, ok := range seen {
		if ok {
			runes = append(runes, rune(r))
		}
	}
	for r := range other {
		runes = append(runes, r)
	}
	slices.Sort(runes)
	v := charsVocab(runes)
	ids := make([]int32, 0, n)
	for off := 0; off < len(data); {
		r, size := rune(data[off]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRune(data[off:])
		}
		id, _ := v.id(r)
		ids = append(ids, id)
		off += size
	}
	return &Text{Name: name, Vocab: v, IDs: ids}, nil
}

// Split divides the text into contiguous training, validation and test parts, in that
// order, as nanoGPT does (its "val" is the test part here). A part of n tokens cut at
// fraction f keeps its first int(n·(1−f)) tokens (the product truncated, as nanoGPT's
// data[:int(n*0.9)]) and gives up the rest: the test part is what the whole text gives
// up at testFraction, and the validation part what the rest then gives up at
// validationFraction, from its end. Tiny Shakespeare's 1,115,394 characters at 0.1 and
// 0 split into 1,003,854 training and 111,540 test tokens.
//
// The fractions must be in [0, 1); a positive fraction that leaves its part empty is an
// error, as is an empty training part. The parts share t.IDs' storage (with their
// capacity cut, so that appending to one cannot overwrite the next).
func (t *Text) Split(testFraction, validationFraction float64) (train, val, test []int32, err error) {
	for _, f := range []struct {
		key string
		v   float64
	}{{"data.test_fraction", testFraction}, {"data.validation_fraction", validationFraction}} {
		if !(f.v >= 0 && f.v < 1) { // also rejects NaN
			return nil, nil, nil, fmt.Errorf("dataset: %s = %v: want a value in [0, 1)", f.key, f.v)
		}
	}
	n := len(t.IDs)
	nFit := int(float64(n) * (1 - testFraction))
	nTrain := int(float64(nFit) * (1 - validationFraction))
	switch {
	case testFraction > 0 && nFit == n:
		return nil, nil, nil, fmt.Errorf("dataset: %s: data.test_fraction = %v of %d tokens leaves the test split empty", t.Name, testFraction, n)
	case validationFraction > 0 && nTrain == nFit:
		return nil, nil, nil, fmt.Errorf("dataset: %s: data.validation_fraction = %v of %d tokens leaves the validation split empty", t.Name, validationFraction, nFit)
	case nTrain == 0:
		return nil, nil, nil, fmt.Errorf("dataset: %s: the fractions leave the training split empty (%d tokens)", t.Name, n)
	}
	ids := t.IDs
	return ids[:nTrain:nTrain], ids[nTrain:nFit:nFit], ids[nFit:n:n], nil
}

// CheckBlock reports whether the split name (such as "validation") of ids is long enough
// for windows of block tokens: a window needs block+1 tokens, its inputs and the token
// after each. Call it before TextWindows or NewTextSampler, which panic instead.
func CheckBlock(name string, ids []int32, block int) error {
	return CheckBlockLen(name, len(ids), block)
}

// CheckBlockLen is CheckBlock for a split of n tokens held anywhere, such as a
// TokenFile.
func CheckBlockLen(name string, n, block int) error {
	switch {
	case block < 1:
		return fmt.Errorf("dataset: block_size %d is not positive", block)
	case block > n:
		return fmt.Errorf("dataset: block_size %d is longer than the %s split (%d tokens)", block, name, n)
	case block == n:
		return fmt.Errorf("dataset: block_size %d is as long as the %s split (%d tokens); a window needs %d",
			block, name, n, block+1)
	}
	return nil
}

// TextWindows cuts ids into every non-overlapping window of block tokens, for
// evaluation: window j has the inputs ids[j·block : (j+1)·block] and the targets one
// token later, ids[j·block+1 : (j+1)·block+1], for j in [0, (len(ids)−1)/block), so
// each token but the first is a target at most once and a last partial window is left
// out. x is float32 [windows, block] holding the ids (exact, as ids are below 2^24);
// labels holds the windows·block targets, row-major. Too short a split gives no windows
// (see CheckBlock). It panics if block < 1.
func TextWindows(ids []int32, block int) (x *tensor.Tensor, labels []int) {
	if block < 1 {
		panic(fmt.Errorf("dataset.TextWindows: block %d is not positive", block))
	}
	return TokenWindows(IDs(ids), block, 0)
}

// TextSampler draws training batches of random windows from a token sequence, as
// nanoGPT's get_batch does. The offsets of batch step are drawn from
// rand.New(rand.NewPCG(seed, uint64(step))), uniform in [0, len(ids)−block−1], so a
// batch is a pure function of (seed, step): a run resumed at step k draws what the
// unbroken run drew, with no random state to save. The sequence may be in memory or a
// mapped TokenFile: the same ids give the same batches. A TextSampler is safe for
// concurrent use.
type TextSampler struct {
	src          Tokens
	block, batch int
	seed         uint64
}

// NewTextSampler returns a sampler of batch windows of block tokens from ids. It panics
// if block or batch is not positive or ids holds fewer than block+1 tokens (see
// CheckBlock).
func NewTextSampler(ids []int32, block, batch int, seed uint64) *TextSampler {
	return NewTokenSampler(IDs(ids), block, batch, seed)
}

// NewTokenSampler is NewTextSampler over any token sequence, such as a TokenFile.
func NewTokenSampler(src Tokens, block, batch int, seed uint64) *TextSampler {
	if block < 1 || batch < 1 {
		panic(fmt.Errorf("dataset.NewTextSampler: block %d and batch %d must be positive", block, batch))
	}
	if src.Len() <= block {
		panic(fmt.Errorf("dataset.NewTextSampler: %d tokens are too few for windows of %d tokens and their targets", src.Len(), block))
	}
	return &TextSampler{src: src, block: block, batch: batch, seed: seed}
}

// Block returns the window length.
func (s *TextSampler) Block() int { return s.block }

// BatchSize returns the number of windows in a batch.
func (s *TextSampler) BatchSize() int { return s.batch }

// StepsPerEpoch returns len(ids)/(batch·block), at least 1: the steps whose batches
// hold as many tokens as the split, nanoGPT's notion of an epoch.
func (s *TextSampler) StepsPerEpoch() int {
	return max(1, s.src.Len()/(s.batch*s.block))
}

// Batch returns batch step as freshly allocated values: x is float32 [batch, block] and
// labels the batch·block next tokens (see BatchInto).
func (s *TextSampler) Batch(step int) (x *tensor.Tensor, labels []int) {
	xb := make([]float32, s.batch*s.block)
	labels = make([]int, s.batch*s.block)
	s.BatchInto(step, xb, labels)
	return tensor.Wrap32(xb, s.batch, s.block), labels
}

// BatchInto writes batch step into the caller's buffers: row b of x (row-major,
// [batch, block]) holds the ids ids[o : o+block] as float32 for the batch's b-th random
// offset o, and labels the same rows one token later, ids[o+1 : o+block+1]. Both must
// hold batch·block values. It panics if one is too short or step is negative.
func (s *TextSampler) BatchInto(step int, x []float32, labels []int) {
	n := s.batch * s.block
	if len(x) < n || len(labels) < n {
		panic(fmt.Errorf("dataset.TextSampler.BatchInto: buffers of %d and %d values are too short for %d windows of %d tokens",
			len(x), len(labels), s.batch, s.block))
	}
	if step < 0 {
		panic(fmt.Errorf("dataset.TextSampler: step %d is negative", step))
	}
	rng := rand.New(rand.NewPCG(s.seed, uint64(step)))
	for b := range s.batch {
		o := rng.IntN(s.src.Len() - s.block)
		row := b * s.block
		s.src.Window(o, x[row:row+s.block], labels[row:row+s.block])
	}
}
