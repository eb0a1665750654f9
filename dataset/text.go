package dataset

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
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
	VocabGPT2  = "gpt2"  // GPT-2's byte-level BPE, tiktoken's "gpt2" encoding (50,257 tokens)
	VocabBPE   = "bpe"   // a byte-level BPE trained on the text
)

// vocabKinds are the kinds, in the order errors list them.
var vocabKinds = []string{VocabChars, VocabBytes, VocabGPT2, VocabBPE}

// Vocab maps a text's tokens to ids and back. Under "chars" the tokens are the distinct
// Unicode characters of a text, sorted by code point, with ids 0..n-1 in that order (as
// nanoGPT's sorted(list(set(data)))); under "bytes" they are the 256 byte values and
// the id of a byte is its value. Under "gpt2" and "bpe" they are byte strings, merged
// from a text's bytes by byte-pair encoding (see NewVocab). The zero Vocab has no
// tokens. A Vocab is never modified once built, so copies may be shared between
// goroutines.
type Vocab struct {
	kind   string
	tokens []string              // id -> text; gpt2, bpe: in GPT-2's printable form
	ascii  *[utf8.RuneSelf]int32 // chars: id+1 of an ASCII character, 0 if absent

	ids map[rune]int32 // chars: id of a non-ASCII character
	bpe *bpeModel      // gpt2, bpe
}

func checkVocabKind(kind string) error {
	if !slices.Contains(vocabKinds, kind) {
		return fmt.Errorf("dataset: vocab %q: want %q, %q, %q or %q", kind, VocabChars, VocabBytes, VocabGPT2, VocabBPE)
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
// 256 one-byte strings in order, or nil; under "gpt2" GPT-2's tokens, or nil. A "bpe"
// vocabulary cannot be rebuilt from its tokens, as its merges are not among them: read
// its TokenizerJSON with ReadTokenizerJSON.
func VocabFrom(kind string, tokens []string) (Vocab, error) {
	if err := checkVocabKind(kind); err != nil {
		return Vocab{}, err
	}
	switch kind {
	case VocabBytes:
		if tokens != nil && !slices.Equal(tokens, bytesTokens) {
			return Vocab{}, fmt.Errorf("dataset: vocab %q: the tokens are not the 256 byte values in order", kind)
		}
		return bytesVocab(), nil
	case VocabGPT2:
		v := gpt2Vocab()
		if tokens != nil && !slices.Equal(tokens, v.tokens) {
			return Vocab{}, fmt.Errorf("dataset: vocab %q: the %d tokens are not GPT-2's %d", kind, len(tokens), v.Size())
		}
		return v, nil
	case VocabBPE:
		return Vocab{}, fmt.Errorf("dataset: vocab %q: its tokens do not hold its merges: read its tokenizer.json (ReadTokenizerJSON)", kind)
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

// gpt2Vocab is GPT-2's vocabulary, its printable tokens made once.
var gpt2Vocab = sync.OnceValue(func() Vocab { return bpeVocab(VocabGPT2, gpt2Model()) })

// bpeVocab wraps a byte-level BPE as a vocabulary of kind.
func bpeVocab(kind string, m *bpeModel) Vocab {
	v := Vocab{kind: kind, tokens: make([]string, len(m.tokens)), bpe: m}
	for id, t := range m.tokens {
		if m.special[int32(id)] {
			v.tokens[id] = t
		} else {
			v.tokens[id] = printable(t)
		}
	}
	return v
}

// MinBPESize is the smallest size of a "bpe" vocabulary: its 256 bytes.
const MinBPESize = 256

// NewVocab returns a vocabulary of kind for text. Under "chars" its tokens are the
// text's distinct characters (the text must be UTF-8); under "bytes" and "gpt2" the text
// is not read. Under "bpe" it is a byte-level BPE trained on the text to size tokens
// (size >= MinBPESize; size is ignored by the other kinds):
//
//   - the text is cut into pre-tokens by GPT-2's pattern (words with their leading
//     space, numbers, runs of punctuation, runs of white space; a byte of invalid UTF-8
//     counts as punctuation), and no token crosses a pre-token's edge;
//   - ids 0..255 are the bytes in plain byte order (the id of a byte is its value; its
//     printable form is GPT-2's, "Ġ" for the space);
//   - each merge joins the pair of adjacent ids seen most often in the text into the
//     next id, ties going to the smallest pair (left id, then right id), so the same
//     text and size give the same merges on any machine;
//   - training stops early, with fewer than size tokens, if the text has no pair left.
//
// Training updates the pair counts a merge changes rather than counting again: tiny
// Shakespeare (1 MB) trains to a few thousand tokens in about a second.
func NewVocab(kind string, text []byte, size int) (Vocab, error) {
	if err := checkVocabKind(kind); err != nil {
		return Vocab{}, err
	}
	switch kind {
	case VocabBytes:
		return bytesVocab(), nil
	case VocabGPT2:
		return gpt2Vocab(), nil
	case VocabBPE:
		if size < MinBPESize {
			return Vocab{}, fmt.Errorf("dataset: vocab %q: size %d is below %d, its bytes", kind, size, MinBPESize)
		}
		if size > math.MaxInt32 {
			return Vocab{}, fmt.Errorf("dataset: vocab %q: size %d is above 2^31-1", kind, size)
		}
		return bpeVocab(VocabBPE, trainBPE(text, size)), nil
	}
	runes, _, err := textRunes("text", text)
	if err != nil {
		return Vocab{}, err
	}
	if len(runes) == 0 {
		return Vocab{}, fmt.Errorf("dataset: vocab %q: the text is empty", kind)
	}
	return charsVocab(runes), nil
}

// Size returns the number of tokens, the width of a language model's output.
func (v Vocab) Size() int { return len(v.tokens) }

// Kind returns "chars", "bytes", "gpt2" or "bpe" ("" for the zero Vocab).
func (v Vocab) Kind() string { return v.kind }

// Tokens returns a copy of each id's text: the character, for "bytes" the one-byte
// string, and for "gpt2" and "bpe" the token's bytes in GPT-2's printable form, as
// GPT-2's vocab.json and Hugging Face's tokenizer.json write them ("Ġthe" for " the";
// GPT-2's last token is "<|endoftext|>"), so that they survive JSON. VocabFrom(v.Kind(),
// v.Tokens()) rebuilds v, but for "bpe".
func (v Vocab) Tokens() []string { return slices.Clone(v.tokens) }

// ByteLen returns the number of bytes the text of ids holds, len(v.Decode(ids)), without
// making it: the denominator of bits per byte. It panics on an id outside [0, Size()).
func (v Vocab) ByteLen(ids []int32) int {
	n := 0
	for _, id := range ids {
		if id < 0 || int(id) >= len(v.tokens) {
			panic(fmt.Errorf("dataset.Vocab.ByteLen: id %d out of range [0, %d)", id, len(v.tokens)))
		}
		switch {
		case v.kind == VocabBytes:
			n++
		case v.bpe != nil:
			n += len(v.bpe.tokens[id])
		default:
			n += len(v.tokens[id])
		}
	}
	return n
}

// Encode returns the ids of the tokens of s. Under "chars" it is an error if s holds a
// character not in the vocabulary (the error gives its position, counted in characters
// from 0) or is not valid UTF-8 (counted in bytes); under "bytes", "gpt2" and "bpe"
// every string encodes. Under "gpt2" the ids are tiktoken's encode_ordinary's: a
// "<|endoftext|>" in s is ordinary text. Each distinct pre-token is merged once a call.
func (v Vocab) Encode(s string) ([]int32, error) {
	if v.bpe != nil {
		return v.bpe.encode(make([]int32, 0, len(s)/3+1), s, map[string][]int32{}), nil
	}
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

// Decode returns the text of ids, concatenated; under "bytes", "gpt2" and "bpe" the
// result may not be valid UTF-8 (a token may hold part of a character). An id outside
// [0, Size()) is a programming error (a model's outputs are as wide as its vocabulary),
// so Decode panics on one.
func (v Vocab) Decode(ids []int32) string {
	if v.bpe != nil {
		var sb strings.Builder
		sb.Grow(4 * len(ids))
		for _, id := range ids {
			if id < 0 || int(id) >= len(v.bpe.tokens) {
				panic(fmt.Errorf("dataset.Vocab.Decode: id %d out of range [0, %d)", id, len(v.bpe.tokens)))
			}
			sb.WriteString(v.bpe.tokens[id])
		}
		return sb.String()
	}
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

// LoadText reads a text file and encodes it under vocab ("chars", "bytes" or "gpt2";
// "bpe" is trained on a training split, see LoadSplits). Under "chars" the file must be
// UTF-8 and the vocabulary is made from its characters. An error names the file and
// what is wrong; a missing file gives an error that wraps fs.ErrNotExist. The text's
// Name is the file's base name.
func LoadText(path, vocab string) (*Text, error) {
	if err := checkTextKind(vocab); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	return newText(filepath.Base(path), path, data, vocab)
}

// NewText encodes data under vocab ("chars", "bytes" or "gpt2") as LoadText does; name
// is the text's Name and stands for the file in errors.
func NewText(name string, data []byte, vocab string) (*Text, error) {
	return newText(name, name, data, vocab)
}

// checkTextKind refuses the kinds a Text cannot be made with alone.
func checkTextKind(kind string) error {
	if kind == VocabBPE {
		return fmt.Errorf("dataset: vocab %q is trained on the training split: use LoadSplits or NewVocab", kind)
	}
	return checkVocabKind(kind)
}

// checkTextSize refuses an empty text or one too long for int32 positions.
func checkTextSize(file string, data []byte) error {
	if len(data) == 0 {
		return fmt.Errorf("dataset: text file %q is empty", file)
	}
	if len(data) > math.MaxInt32 {
		return fmt.Errorf("dataset: text file %q holds %d bytes, more than 2^31-1", file, len(data))
	}
	return nil
}

// newText encodes data; file names it in errors.
func newText(name, file string, data []byte, vocab string) (*Text, error) {
	if err := checkTextKind(vocab); err != nil {
		return nil, err
	}
	if err := checkTextSize(file, data); err != nil {
		return nil, err
	}
	switch vocab {
	case VocabBytes:
		ids := make([]int32, len(data))
		for i, b := range data {
			ids[i] = int32(b)
		}
		return &Text{Name: name, Vocab: bytesVocab(), IDs: ids}, nil
	case VocabGPT2:
		v := gpt2Vocab()
		ids, _ := v.Encode(string(data))
		return &Text{Name: name, Vocab: v, IDs: ids}, nil
	}
	runes, n, err := textRunes(file, data)
	if err != nil {
		return nil, err
	}
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

// textRunes checks that data is UTF-8 and returns its distinct characters,
// sorted, and its length in characters; file names it in errors.
func textRunes(file string, data []byte) (runes []rune, n int, err error) {
	var seen [utf8.RuneSelf]bool
	other := map[rune]bool{}
	for off := 0; off < len(data); n++ {
		if b := data[off]; b < utf8.RuneSelf {
			seen[b] = true
			off++
			continue
		}
		r, size := utf8.DecodeRune(data[off:])
		if r == utf8.RuneError && size == 1 {
			return nil, 0, fmt.Errorf("dataset: text file %q is not valid UTF-8: byte 0x%02x at byte offset %d (vocab %q reads any file)",
				file, data[off], off, VocabBytes)
		}
		other[r] = true
		off += size
	}
	runes = make([]rune, 0, len(other)+utf8.RuneSelf)
	for r, ok := range seen {
		if ok {
			runes = append(runes, rune(r))
		}
	}
	for r := range other {
		runes = append(runes, r)
	}
	slices.Sort(runes)
	return runes, n, nil
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
	n := len(t.IDs)
	nTrain, nFit, err := cutPoints(t.Name, n, "tokens", testFraction, validationFraction)
	if err != nil {
		return nil, nil, nil, err
	}
	ids := t.IDs
	return ids[:nTrain:nTrain], ids[nTrain:nFit:nFit], ids[nFit:n:n], nil
}

// cutPoints returns where Split cuts n units (named unit in errors) of the
// text name: the training part ends at nTrain, the validation part at nFit.
func cutPoints(name string, n int, unit string, testFraction, validationFraction float64) (nTrain, nFit int, err error) {
	for _, f := range []struct {
		key string
		v   float64
	}{{"data.test_fraction", testFraction}, {"data.validation_fraction", validationFraction}} {
		if !(f.v >= 0 && f.v < 1) { // also rejects NaN
			return 0, 0, fmt.Errorf("dataset: %s = %v: want a value in [0, 1)", f.key, f.v)
		}
	}
	nFit = int(float64(n) * (1 - testFraction))
	nTrain = int(float64(nFit) * (1 - validationFraction))
	switch {
	case testFraction > 0 && nFit == n:
		return 0, 0, fmt.Errorf("dataset: %s: data.test_fraction = %v of %d %s leaves the test split empty", name, testFraction, n, unit)
	case validationFraction > 0 && nTrain == nFit:
		return 0, 0, fmt.Errorf("dataset: %s: data.validation_fraction = %v of %d %s leaves the validation split empty", name, validationFraction, nFit, unit)
	case nTrain == 0:
		return 0, 0, fmt.Errorf("dataset: %s: the fractions leave the training split empty (%d %s)", name, n, unit)
	}
	return nTrain, nFit, nil
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
