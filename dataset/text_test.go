package dataset

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

const sampleText = "testdata/tinyshakespeare-2000.txt"

// seq returns the ids 0..n-1, so that a window's values tell where it was cut.
func seq(n int) []int32 {
	ids := make([]int32, n)
	for i := range ids {
		ids[i] = int32(i)
	}
	return ids
}

func mustText(t *testing.T, data, vocab string) *Text {
	t.Helper()
	text, err := NewText("t", []byte(data), vocab)
	if err != nil {
		t.Fatalf("NewText(%q, %s): %v", data, vocab, err)
	}
	return text
}

func TestVocabChars(t *testing.T) {
	tests := []struct {
		data   string
		tokens []string
		ids    []int32
	}{
		{"hello world", []string{" ", "d", "e", "h", "l", "o", "r", "w"}, []int32{3, 2, 4, 4, 5, 0, 7, 5, 6, 4, 1}},
		{"ba\nab", []string{"\n", "a", "b"}, []int32{2, 1, 0, 1, 2}},
		{"x", []string{"x"}, []int32{0}},
		// Sorted by code point, so the ASCII characters first; ids count characters.
		{"é✓a\uFFFDé", []string{"a", "é", "✓", "\uFFFD"}, []int32{1, 2, 0, 3, 1}},
	}
	for _, tc := range tests {
		text := mustText(t, tc.data, "chars")
		v := text.Vocab
		if v.Kind() != "chars" || v.Size() != len(tc.tokens) || !slices.Equal(v.Tokens(), tc.tokens) {
			t.Errorf("%q: vocab %s of %d tokens %q, want chars, %q", tc.data, v.Kind(), v.Size(), v.Tokens(), tc.tokens)
		}
		if !slices.Equal(text.IDs, tc.ids) {
			t.Errorf("%q: IDs = %v, want %v", tc.data, text.IDs, tc.ids)
		}
		if got := v.Decode(text.IDs); got != tc.data {
			t.Errorf("%q: Decode(IDs) = %q", tc.data, got)
		}
		if ids, err := v.Encode(tc.data); err != nil || !slices.Equal(ids, tc.ids) {
			t.Errorf("%q: Encode = %v, %v; want %v", tc.data, ids, err, tc.ids)
		}
		w, err := VocabFrom(v.Kind(), v.Tokens())
		if err != nil {
			t.Fatalf("%q: VocabFrom(Tokens): %v", tc.data, err)
		}
		if ids, err := w.Encode(tc.data); err != nil || !slices.Equal(ids, tc.ids) || w.Decode(ids) != tc.data {
			t.Errorf("%q: the rebuilt vocabulary encodes %v, %v; want %v", tc.data, ids, err, tc.ids)
		}
	}
}

func TestVocabEncodeErrors(t *testing.T) {
	v := mustText(t, "abcé", "chars").Vocab
	tests := []struct {
		s, want string
	}{
		{"abcZ", `dataset: character 'Z' (U+005A) at 3 is not in the vocabulary`},
		{"éa\n", `dataset: character '\n' (U+000A) at 2 is not in the vocabulary`}, // counted in characters
		{"ab✓", `dataset: character '✓' (U+2713) at 2 is not in the vocabulary`},
		{"ab\xff", `dataset: byte 0xff at byte offset 2 is not valid UTF-8`},
	}
	for _, tc := range tests {
		ids, err := v.Encode(tc.s)
		if err == nil || err.Error() != tc.want {
			t.Errorf("Encode(%q) = %v, %v; want error %q", tc.s, ids, err, tc.want)
		}
	}
	if ids, err := v.Encode(""); err != nil || len(ids) != 0 {
		t.Errorf("Encode(\"\") = %v, %v; want no ids", ids, err)
	}
	if _, err := (Vocab{}).Encode("a"); err == nil {
		t.Errorf("the zero Vocab encoded %q", "a")
	}
}

func TestVocabBytes(t *testing.T) {
	data := []byte{0xff, 'a', 0, 0xc3, 'a'} // not UTF-8
	text, err := NewText("bin", data, "bytes")
	if err != nil {
		t.Fatal(err)
	}
	v := text.Vocab
	if v.Kind() != "bytes" || v.Size() != 256 {
		t.Errorf("vocab %s of %d tokens, want bytes, 256", v.Kind(), v.Size())
	}
	if want := []int32{255, 97, 0, 195, 97}; !slices.Equal(text.IDs, want) {
		t.Errorf("IDs = %v, want %v", text.IDs, want)
	}
	if got := v.Decode(text.IDs); got != string(data) {
		t.Errorf("Decode = %q, want %q", got, data)
	}
	if ids, err := v.Encode("\xffé"); err != nil || !slices.Equal(ids, []int32{255, 0xc3, 0xa9}) {
		t.Errorf("Encode = %v, %v", ids, err)
	}
	tokens := v.Tokens()
	if len(tokens) != 256 || tokens[0] != "\x00" || tokens[200] != "\xc8" {
		t.Errorf("Tokens = %d tokens, 0 %q, 200 %q", len(tokens), tokens[0], tokens[200])
	}
	tokens[0] = "changed" // a copy
	for _, tok := range [][]string{nil, v.Tokens()} {
		w, err := VocabFrom("bytes", tok)
		if err != nil || w.Size() != 256 || w.Decode([]int32{104, 105}) != "hi" {
			t.Errorf("VocabFrom(bytes, %d tokens) = %d tokens, %v", len(tok), w.Size(), err)
		}
	}
}

func TestVocabFromErrors(t *testing.T) {
	tests := []struct {
		kind   string
		tokens []string
		want   string
	}{
		{"words", []string{"a"}, `dataset: vocab "words": want "chars", "bytes", "gpt2" or "bpe"`},
		{"chars", nil, `dataset: vocab "chars" has no tokens`},
		{"chars", []string{"a", "bc"}, `dataset: vocab "chars": token 1 is "bc", not one character`},
		{"chars", []string{""}, `dataset: vocab "chars": token 0 is "", not one character`},
		{"chars", []string{"\xff"}, `dataset: vocab "chars": token 0 is "\xff", not one character`},
		{"chars", []string{"b", "a"}, `dataset: vocab "chars": token 1 "a" is not after token 0 "b": tokens must be sorted and distinct`},
		{"chars", []string{"a", "a"}, `dataset: vocab "chars": token 1 "a" is not after token 0 "a": tokens must be sorted and distinct`},
		{"bytes", []string{"a"}, `dataset: vocab "bytes": the tokens are not the 256 byte values in order`},
	}
	for _, tc := range tests {
		_, err := VocabFrom(tc.kind, tc.tokens)
		if err == nil || err.Error() != tc.want {
			t.Errorf("VocabFrom(%q, %q) error = %v, want %q", tc.kind, tc.tokens, err, tc.want)
		}
	}
}

func TestVocabDecodePanics(t *testing.T) {
	chars := mustText(t, "ab", "chars").Vocab
	bytes := mustText(t, "ab", "bytes").Vocab
	for _, tc := range []struct {
		v  Vocab
		id int32
	}{{chars, 2}, {chars, -1}, {bytes, 256}, {bytes, -1}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: Decode(%d) did not panic", tc.v.Kind(), tc.id)
				}
			}()
			tc.v.Decode([]int32{0, tc.id})
		}()
	}
}

func TestNewTextErrors(t *testing.T) {
	tests := []struct {
		data, vocab, want string
	}{
		{"", "chars", `dataset: text file "t" is empty`},
		{"", "bytes", `dataset: text file "t" is empty`},
		{"abc", "words", `dataset: vocab "words": want "chars", "bytes", "gpt2" or "bpe"`},
		{"ab\xffcd", "chars", `dataset: text file "t" is not valid UTF-8: byte 0xff at byte offset 2 (vocab "bytes" reads any file)`},
		{"aé\xc3", "chars", `dataset: text file "t" is not valid UTF-8: byte 0xc3 at byte offset 3 (vocab "bytes" reads any file)`},        // cut short
		{"a\xed\xa0\x80", "chars", `dataset: text file "t" is not valid UTF-8: byte 0xed at byte offset 1 (vocab "bytes" reads any file)`}, // a surrogate
	}
	for _, tc := range tests {
		_, err := NewText("t", []byte(tc.data), tc.vocab)
		if err == nil || err.Error() != tc.want {
			t.Errorf("NewText(%q, %s) error = %v, want %q", tc.data, tc.vocab, err, tc.want)
		}
	}
}

func TestLoadText(t *testing.T) {
	text, err := LoadText(sampleText, "chars")
	if err != nil {
		t.Fatal(err)
	}
	if text.Name != "tinyshakespeare-2000.txt" || len(text.IDs) != 2000 || text.Vocab.Size() != 49 {
		t.Errorf("LoadText = %s: %d tokens, %d in the vocabulary; want tinyshakespeare-2000.txt, 2000, 49",
			text.Name, len(text.IDs), text.Vocab.Size())
	}
	raw, err := os.ReadFile(sampleText)
	if err != nil {
		t.Fatal(err)
	}
	if got := text.Vocab.Decode(text.IDs); got != string(raw) {
		t.Errorf("Decode(IDs) differs from the file")
	}
	if !strings.HasPrefix(string(raw), "First Citizen:\n") || text.IDs[0] != int32(slices.Index(text.Vocab.Tokens(), "F")) {
		t.Errorf("the sample does not begin with %q encoded", "F")
	}

	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.txt")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadText(empty, "chars"); err == nil || err.Error() != `dataset: text file "`+empty+`" is empty` {
		t.Errorf("LoadText(empty) error = %v", err)
	}
	bad := filepath.Join(dir, "bad.txt")
	if err := os.WriteFile(bad, []byte("ok\n\x80"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadText(bad, "chars"); err == nil || !strings.Contains(err.Error(), `"`+bad+`" is not valid UTF-8: byte 0x80 at byte offset 3`) {
		t.Errorf("LoadText(bad) error = %v", err)
	}
	if text, err := LoadText(bad, "bytes"); err != nil || len(text.IDs) != 4 || text.IDs[3] != 0x80 {
		t.Errorf("LoadText(bad, bytes) = %v, %v", text, err)
	}
	missing := filepath.Join(dir, "missing.txt")
	_, err = LoadText(missing, "chars")
	if !errors.Is(err, fs.ErrNotExist) || !strings.HasPrefix(err.Error(), "dataset: ") || !strings.Contains(err.Error(), missing) {
		t.Errorf("LoadText(missing) error = %v, want a dataset error naming the path and wrapping fs.ErrNotExist", err)
	}
	if _, err := LoadText(missing, "words"); err == nil || err.Error() != `dataset: vocab "words": want "chars", "bytes", "gpt2" or "bpe"` {
		t.Errorf("LoadText(words) error = %v", err)
	}
}

func TestTextSplit(t *testing.T) {
	tests := []struct {
		n                  int
		test, val          float64
		nTrain, nVal, nTst int
	}{
		{10, 0.1, 0, 9, 0, 1},
		{10, 0.25, 0, 7, 0, 3}, // int(7.5)
		{10, 0, 0, 10, 0, 0},
		{10, 0.1, 0.2, 7, 2, 1}, // int(9*0.8) = int(7.2)
		{5, 0.1, 0, 4, 0, 1},    // int(4.5): the test part gets the fraction's rounding
		{5, 0, 0.1, 4, 1, 0},
		{100, 0.1, 0.1, 81, 9, 10},
		{1, 0, 0, 1, 0, 0},
	}
	for _, tc := range tests {
		text := &Text{Name: "t", IDs: seq(tc.n)}
		train, val, test, err := text.Split(tc.test, tc.val)
		if err != nil {
			t.Errorf("n=%d: Split(%v, %v): %v", tc.n, tc.test, tc.val, err)
			continue
		}
		if len(train) != tc.nTrain || len(val) != tc.nVal || len(test) != tc.nTst {
			t.Errorf("n=%d: Split(%v, %v) = %d, %d, %d tokens; want %d, %d, %d",
				tc.n, tc.test, tc.val, len(train), len(val), len(test), tc.nTrain, tc.nVal, tc.nTst)
			continue
		}
		// Contiguous and in order: train, then val, then test.
		if got := slices.Concat(train, val, test); !slices.Equal(got, text.IDs) {
			t.Errorf("n=%d: the parts concatenate to %v", tc.n, got)
		}
		if cap(train) != len(train) || cap(val) != len(val) {
			t.Errorf("n=%d: capacities %d and %d reach into the next part", tc.n, cap(train), cap(val))
		}
	}

	errTests := []struct {
		n         int
		test, val float64
		want      string
	}{
		{10, 1, 0, "dataset: data.test_fraction = 1: want a value in [0, 1)"},
		{10, -0.1, 0, "dataset: data.test_fraction = -0.1: want a value in [0, 1)"},
		{10, 0.1, 1.5, "dataset: data.validation_fraction = 1.5: want a value in [0, 1)"},
		{10, 0, 2 - 3, "dataset: data.validation_fraction = -1: want a value in [0, 1)"},
		// The cut is truncated, so only a fraction too small to change 1−f leaves a part empty.
		{10, 1e-20, 0, "dataset: t: data.test_fraction = 1e-20 of 10 tokens leaves the test split empty"},
		{10, 0.1, 1e-17, "dataset: t: data.validation_fraction = 1e-17 of 9 tokens leaves the validation split empty"},
		{2, 0.5, 0.5, "dataset: t: the fractions leave the training split empty (2 tokens)"},
	}
	for _, tc := range errTests {
		_, _, _, err := (&Text{Name: "t", IDs: seq(tc.n)}).Split(tc.test, tc.val)
		if err == nil || err.Error() != tc.want {
			t.Errorf("n=%d: Split(%v, %v) error = %v, want %q", tc.n, tc.test, tc.val, err, tc.want)
		}
	}
}

// TestShakespeareSplit checks nanoGPT's shakespeare_char figures: prepare.py prints
// "vocab size: 65", "train has 1,003,854 tokens", "val has 111,540 tokens".
func TestShakespeareSplit(t *testing.T) {
	text, err := LoadText(filepath.Join(needData(t, "tinyshakespeare"), ShakespeareFile), "chars")
	if err != nil {
		t.Fatal(err)
	}
	if len(text.IDs) != 1115394 || text.Vocab.Size() != 65 {
		t.Errorf("%d tokens, vocabulary of %d; want 1115394, 65", len(text.IDs), text.Vocab.Size())
	}
	if got := strings.Join(text.Vocab.Tokens(), ""); got != "\n !$&',-.3:;?ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" {
		t.Errorf("vocabulary %q", got)
	}
	tests := []struct {
		test, val          float64
		nTrain, nVal, nTst int
	}{
		{0.1, 0, 1003854, 0, 111540},
		{0.1, 0.1, 903468, 100386, 111540}, // int(1003854*0.9) = int(903468.6)
	}
	for _, tc := range tests {
		train, val, test, err := text.Split(tc.test, tc.val)
		if err != nil || len(train) != tc.nTrain || len(val) != tc.nVal || len(test) != tc.nTst {
			t.Errorf("Split(%v, %v) = %d, %d, %d tokens, %v; want %d, %d, %d",
				tc.test, tc.val, len(train), len(val), len(test), err, tc.nTrain, tc.nVal, tc.nTst)
		}
	}
}

func TestTextWindows(t *testing.T) {
	tests := []struct {
		n, block, windows int
	}{
		{11, 3, 3}, // tokens 9 and 10 would be a partial window: left out
		{11, 5, 2}, // exact: every token but the first is a target
		{11, 10, 1},
		{11, 11, 0},
		{12, 11, 1},
		{1, 1, 0},
		{0, 4, 0},
		{2, 1, 1},
	}
	for _, tc := range tests {
		ids := seq(tc.n)
		for i := range ids {
			ids[i] += 100 // ids differ from positions
		}
		x, labels := TextWindows(ids, tc.block)
		if !slices.Equal(x.Shape(), []int{tc.windows, tc.block}) || len(labels) != tc.windows*tc.block {
			t.Errorf("n=%d block=%d: x %v, %d labels; want [%d %d], %d", tc.n, tc.block, x.Shape(), len(labels),
				tc.windows, tc.block, tc.windows*tc.block)
			continue
		}
		for i, v := range x.Data32() {
			if v != float32(100+i) || labels[i] != 101+i {
				t.Errorf("n=%d block=%d: position %d holds %v with target %d, want %d and %d", tc.n, tc.block, i, v, labels[i], 100+i, 101+i)
				break
			}
		}
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("TextWindows(block 0) did not panic")
			}
		}()
		TextWindows(seq(5), 0)
	}()
}

func TestCheckBlock(t *testing.T) {
	tests := []struct {
		name  string
		n     int
		block int
		want  string
	}{
		{"validation", 120, 300, "dataset: block_size 300 is longer than the validation split (120 tokens)"},
		{"test", 64, 64, "dataset: block_size 64 is as long as the test split (64 tokens); a window needs 65"},
		{"training", 0, 8, "dataset: block_size 8 is longer than the training split (0 tokens)"},
		{"training", 10, 0, "dataset: block_size 0 is not positive"},
		{"training", 10, -3, "dataset: block_size -3 is not positive"},
		{"test", 65, 64, ""},
		{"test", 1000, 1, ""},
	}
	for _, tc := range tests {
		err := CheckBlock(tc.name, seq(tc.n), tc.block)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || err.Error() != tc.want) {
			t.Errorf("CheckBlock(%s, %d tokens, %d) = %v, want %q", tc.name, tc.n, tc.block, err, tc.want)
		}
		if tc.block < 1 {
			continue
		}
		if x, _ := TextWindows(seq(tc.n), tc.block); tc.want == "" && x.Dim(0) == 0 || tc.want != "" && x.Dim(0) != 0 {
			t.Errorf("CheckBlock(%s, %d tokens, %d) = %v, but TextWindows gives %d windows", tc.name, tc.n, tc.block, err, x.Dim(0))
		}
	}
}

// offsets returns the window offsets of a batch over seq ids, checking that each row
// holds consecutive ids and its labels are the same shifted by one.
func offsets(t *testing.T, x []float32, labels []int, block int) []int {
	t.Helper()
	var offs []int
	for row := 0; row < len(x); row += block {
		o := int(x[row])
		for i := range block {
			if x[row+i] != float32(o+i) || labels[row+i] != o+i+1 {
				t.Fatalf("window at %d: position %d holds %v with target %d, want %d and %d", o, i, x[row+i], labels[row+i], o+i, o+i+1)
			}
		}
		offs = append(offs, o)
	}
	return offs
}

func TestTextSampler(t *testing.T) {
	const n, block, batch = 1000, 8, 4
	s := NewTextSampler(seq(n), block, batch, 1)
	if s.Block() != block || s.BatchSize() != batch || s.StepsPerEpoch() != 31 { // 1000/32
		t.Errorf("block %d, batch %d, %d steps per epoch; want 8, 4, 31", s.Block(), s.BatchSize(), s.StepsPerEpoch())
	}
	batchOffsets := func(s *TextSampler, step int) []int {
		x := make([]float32, batch*block)
		labels := make([]int, batch*block)
		s.BatchInto(step, x, labels)
		return offsets(t, x, labels, block)
	}
	// Golden: a change here changes every run's batches and breaks resuming.
	golden := map[int][]int{
		0: {593, 88, 709, 23},
		1: {989, 101, 856, 905},
		7: {546, 181, 484, 374},
	}
	for step, want := range golden {
		if got := batchOffsets(s, step); !slices.Equal(got, want) {
			t.Errorf("step %d: offsets %v, want %v", step, got, want)
		}
	}
	// A batch depends only on (seed, step): a fresh sampler, asked in another order,
	// draws the same; another step or seed draws differently.
	fresh := NewTextSampler(seq(n), block, batch, 1)
	for _, step := range []int{9, 3, 0, 3} {
		if a, b := batchOffsets(s, step), batchOffsets(fresh, step); !slices.Equal(a, b) {
			t.Errorf("step %d: %v, then %v", step, a, b)
		}
	}
	if a, b := batchOffsets(s, 4), batchOffsets(s, 5); slices.Equal(a, b) {
		t.Errorf("steps 4 and 5 both draw %v", a)
	}
	if a, b := batchOffsets(s, 4), batchOffsets(NewTextSampler(seq(n), block, batch, 2), 4); slices.Equal(a, b) {
		t.Errorf("seeds 1 and 2 both draw %v at step 4", a)
	}
	x, labels := s.Batch(7)
	if !slices.Equal(x.Shape(), []int{batch, block}) || !slices.Equal(offsets(t, x.Data32(), labels, block), golden[7]) {
		t.Errorf("Batch(7) = %v, offsets %v; want [4 8], %v", x.Shape(), offsets(t, x.Data32(), labels, block), golden[7])
	}
}

// TestTextSamplerBounds: offsets are uniform in [0, len−block−1], both ends included,
// so every window has its block+1 tokens.
func TestTextSamplerBounds(t *testing.T) {
	const n, block, batch = 12, 9, 5 // offsets 0, 1 and 2
	s := NewTextSampler(seq(n), block, batch, 3)
	counts := make([]int, n)
	for step := range 200 {
		x, labels := s.Batch(step)
		for _, o := range offsets(t, x.Data32(), labels, block) {
			counts[o]++
		}
	}
	t.Logf("offset counts %v", counts)
	for o, c := range counts {
		if o <= n-block-1 && c < 250 || o > n-block-1 && c != 0 {
			t.Errorf("offset %d drawn %d times in 1000 draws", o, c)
		}
	}
	// The shortest split a sampler takes: one window.
	one := NewTextSampler(seq(4), 3, 2, 0)
	if x, labels := one.Batch(5); !slices.Equal(offsets(t, x.Data32(), labels, 3), []int{0, 0}) || one.StepsPerEpoch() != 1 {
		t.Errorf("one window: offsets %v, %d steps per epoch", offsets(t, x.Data32(), labels, 3), one.StepsPerEpoch())
	}
}

func TestTextSamplerPanics(t *testing.T) {
	s := NewTextSampler(seq(20), 4, 2, 0)
	tests := []struct {
		name string
		f    func()
	}{
		{"too few tokens", func() { NewTextSampler(seq(4), 4, 1, 0) }},
		{"block 0", func() { NewTextSampler(seq(10), 0, 1, 0) }},
		{"batch 0", func() { NewTextSampler(seq(10), 2, 0, 0) }},
		{"short x", func() { s.BatchInto(0, make([]float32, 7), make([]int, 8)) }},
		{"short labels", func() { s.BatchInto(0, make([]float32, 8), make([]int, 7)) }},
		{"negative step", func() { s.BatchInto(-1, make([]float32, 8), make([]int, 8)) }},
	}
	for _, tc := range tests {
		func() {
			defer func() {
				if r := recover(); r == nil {
					t.Errorf("%s: no panic", tc.name)
				} else if _, ok := r.(error); !ok {
					t.Errorf("%s: panicked with %T, want an error", tc.name, r)
				}
			}()
			tc.f()
		}()
	}
}

// TestTextSamplerConcurrent: goroutines sharing a sampler draw what one draws alone
// (run with -race).
func TestTextSamplerConcurrent(t *testing.T) {
	s := NewTextSampler(seq(500), 16, 8, 7)
	want := make([][]int, 32)
	for step := range want {
		_, want[step] = s.Batch(step)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			x := make([]float32, 8*16)
			labels := make([]int, 8*16)
			for step := g; step < len(want); step += 2 {
				s.BatchInto(step, x, labels)
				if !slices.Equal(labels, want[step]) {
					t.Errorf("goroutine %d: step %d differs", g, step)
				}
			}
		})
	}
	wg.Wait()
}

// FuzzNewText: whatever NewText accepts decodes back to the input, and every id is
// within the vocabulary.
func FuzzNewText(f *testing.F) {
	for _, seed := range []string{"hello", "é✓\n", "\xff\x00", "a\uFFFDb", "\xed\xa0\x80"} {
		f.Add([]byte(seed), false)
		f.Add([]byte(seed), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, bytes bool) {
		vocab := map[bool]string{false: "chars", true: "bytes"}[bytes]
		text, err := NewText("fuzz", data, vocab)
		if err != nil {
			if bytes && len(data) > 0 || !bytes && utf8.Valid(data) && len(data) > 0 {
				t.Fatalf("NewText(%q, %s): %v", data, vocab, err)
			}
			return
		}
		for _, id := range text.IDs {
			if id < 0 || int(id) >= text.Vocab.Size() {
				t.Fatalf("id %d of a vocabulary of %d", id, text.Vocab.Size())
			}
		}
		if got := text.Vocab.Decode(text.IDs); got != string(data) {
			t.Fatalf("Decode = %q, want %q", got, data)
		}
		if ids, err := text.Vocab.Encode(string(data)); err != nil || !slices.Equal(ids, text.IDs) {
			t.Fatalf("Encode = %v, %v; want %v", ids, err, text.IDs)
		}
	})
}

// shakespeareServer serves data as input.txt under /tiny/ and counts the requests.
func shakespeareServer(t *testing.T, data []byte) (base string, hits func() int) {
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/tiny/"+ShakespeareFile {
			http.NotFound(w, r)
			return
		}
		mu.Lock()
		n++
		mu.Unlock()
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		w.Write(data)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/tiny/", func() int {
		mu.Lock()
		defer mu.Unlock()
		return n
	}
}

func TestDownloadShakespeare(t *testing.T) {
	good, err := os.ReadFile(filepath.Join(needData(t, "tinyshakespeare"), ShakespeareFile))
	if err != nil {
		t.Fatal(err)
	}
	base, hits := shakespeareServer(t, good)
	dir := filepath.Join(t.TempDir(), "cache", ShakespeareName)
	opts := DownloadOptions{Dir: dir, BaseURLs: []string{base}, Retries: 1, Backoff: time.Millisecond}
	path, err := DownloadShakespeare(context.Background(), opts)
	if want := filepath.Join(dir, ShakespeareFile); err != nil || path != want {
		t.Fatalf("DownloadShakespeare = %q, %v; want %q", path, err, want)
	}
	if text, err := LoadText(path, "chars"); err != nil || len(text.IDs) != 1115394 {
		t.Errorf("LoadText(downloaded) = %v", err)
	}
	// Present and verified: not fetched again.
	if _, err := DownloadShakespeare(context.Background(), opts); err != nil || hits() != 1 {
		t.Errorf("second DownloadShakespeare: %v after %d requests, want 1", err, hits())
	}

	corrupt := []byte(string(good))
	corrupt[1000] ^= 1
	badBase, badHits := shakespeareServer(t, corrupt)
	badDir := t.TempDir()
	opts = DownloadOptions{Dir: badDir, BaseURLs: []string{badBase}, Retries: 1, Backoff: time.Millisecond}
	_, err = DownloadShakespeare(context.Background(), opts)
	if err == nil || !strings.Contains(err.Error(), "dataset: download tinyshakespeare: input.txt: every mirror failed: GET ") ||
		!strings.Contains(err.Error(), "checksum mismatch: sha256 ") {
		t.Errorf("DownloadShakespeare(corrupt) error = %v, want a checksum mismatch", err)
	}
	if badHits() != 1 {
		t.Errorf("%d requests for a corrupt file, want 1 (a wrong checksum is not retried)", badHits())
	}
	if entries, _ := os.ReadDir(badDir); len(entries) != 0 {
		t.Errorf("a failed download left %v", entries)
	}
}
