package dataset

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tiktoken-go/tokenizer/codec"
)

// readIDs reads token ids stored as uint16 little-endian, as
// bench/tokenizers/run.sh writes them.
func readIDs(t *testing.T, path string) []int32 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]int32, len(b)/2)
	for i := range ids {
		ids[i] = int32(binary.LittleEndian.Uint16(b[2*i:]))
	}
	return ids
}

func firstDiff(a, b []int32) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestGPT2Golden compares the "gpt2" ids of the first 32 KiB of tiny Shakespeare
// and of Go's documentation with js-tiktoken's (bench/tokenizers/run.sh -update
// wrote them; run.sh compares the whole texts).
func TestGPT2Golden(t *testing.T) {
	v, err := NewVocab(VocabGPT2, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"shakespeare", "godocs"} {
		text, err := os.ReadFile(filepath.Join("testdata", "gpt2", name+".txt"))
		if err != nil {
			t.Fatal(err)
		}
		want := readIDs(t, filepath.Join("testdata", "gpt2", name+".ids"))
		got, err := v.Encode(string(text))
		if err != nil || !slices.Equal(got, want) {
			i := firstDiff(got, want)
			t.Errorf("%s: %d ids, %v; want js-tiktoken's %d; first difference at %d: %v, want %v",
				name, len(got), err, len(want), i, got[i:min(i+5, len(got))], want[i:min(i+5, len(want))])
		}
		if s := v.Decode(want); s != string(text) {
			t.Errorf("%s: Decode of js-tiktoken's ids is not the text", name)
		}
		if n := v.ByteLen(want); n != len(text) {
			t.Errorf("%s: ByteLen = %d, want %d", name, n, len(text))
		}
	}
}

// TestGPT2Small checks corner cases of GPT-2's pattern against js-tiktoken's
// encode(s, [], []) (its encode_ordinary), whose ids these are.
func TestGPT2Small(t *testing.T) {
	v := gpt2Vocab()
	tests := []struct {
		s   string
		ids []int32
	}{
		{"Hello world", []int32{15496, 995}},
		{"<|endoftext|>", []int32{27, 91, 437, 1659, 5239, 91, 29}}, // ordinary text, not 50256
		{"a  b", []int32{64, 220, 275}},
		{"  \n\n x", []int32{220, 220, 628, 2124}},
		{"'s 'S don't they'll", []int32{338, 705, 50, 836, 470, 484, 1183}},
		{"12345 x1y2", []int32{10163, 2231, 2124, 16, 88, 17}},
		{"naïve café – “quoted” 😀", []int32{2616, 38776, 40304, 784, 564, 250, 421, 5191, 447, 251, 30325, 222}},
		{"tab\there\r\n", []int32{8658, 197, 1456, 201, 198}},
		{"   ", []int32{220, 220, 220}},
		{"a\x7fb", []int32{64, 221, 65}}, // tiktoken-go drops U+007F (see FuzzByteLevel)
		{"", []int32{}},
	}
	for _, tc := range tests {
		got, err := v.Encode(tc.s)
		if err != nil || !slices.Equal(got, tc.ids) {
			t.Errorf("Encode(%q) = %v, %v; want %v", tc.s, got, err, tc.ids)
		}
	}
}

func TestGPT2Vocab(t *testing.T) {
	v, err := VocabFrom(VocabGPT2, nil)
	if err != nil {
		t.Fatal(err)
	}
	toks := v.Tokens()
	if v.Kind() != VocabGPT2 || v.Size() != 50257 || len(toks) != 50257 {
		t.Fatalf("vocab %s of %d tokens, want gpt2 of 50257", v.Kind(), v.Size())
	}
	// GPT-2's vocab.json: 220 "Ġ", 262 "Ġthe", 50256 "<|endoftext|>".
	for id, want := range map[int]string{0: "!", 220: "Ġ", 262: "Ġthe", 198: "Ċ", 50256: "<|endoftext|>"} {
		if toks[id] != want {
			t.Errorf("token %d = %q, want %q", id, toks[id], want)
		}
	}
	if s := v.Decode([]int32{50256, 262}); s != "<|endoftext|> the" {
		t.Errorf("Decode(50256, 262) = %q", s)
	}
	w, err := VocabFrom(VocabGPT2, toks)
	if err != nil || w.Size() != v.Size() {
		t.Errorf("VocabFrom(gpt2, its tokens) = %d tokens, %v", w.Size(), err)
	}
	toks[5] = "x"
	if _, err := VocabFrom(VocabGPT2, toks); err == nil || err.Error() != `dataset: vocab "gpt2": the 50257 tokens are not GPT-2's 50257` {
		t.Errorf("VocabFrom(gpt2, other tokens) error = %v", err)
	}
}

// TestGPT2TokenizerJSON writes GPT-2's vocabulary as tokenizer.json, with the
// merges worked out from the ranks, and reads it back: merged pair by pair,
// it must give js-tiktoken's ids on the golden texts.
func TestGPT2TokenizerJSON(t *testing.T) {
	js, err := gpt2Vocab().TokenizerJSON()
	if err != nil {
		t.Fatal(err)
	}
	v, err := ReadTokenizerJSON(js)
	if err != nil {
		t.Fatal(err)
	}
	if v.Size() != 50257 || len(v.bpe.merges) != 50000 || !slices.Equal(v.Tokens(), gpt2Vocab().Tokens()) {
		t.Errorf("read back: %d tokens, %d merges; want GPT-2's 50257 tokens and 50000 merges", v.Size(), len(v.bpe.merges))
	}
	for _, name := range []string{"shakespeare", "godocs"} {
		text, err := os.ReadFile(filepath.Join("testdata", "gpt2", name+".txt"))
		if err != nil {
			t.Fatal(err)
		}
		want := readIDs(t, filepath.Join("testdata", "gpt2", name+".ids"))
		if got, _ := v.Encode(string(text)); !slices.Equal(got, want) {
			i := firstDiff(got, want)
			t.Errorf("%s: first difference with js-tiktoken at %d: %v, want %v", name, i, got[i:min(i+5, len(got))], want[i:min(i+5, len(want))])
		}
	}
}

// TestGPT2Shakespeare checks nanoGPT's data/shakespeare figures: prepare.py cuts
// the text at 90% of its characters and encodes each part with tiktoken's gpt2,
// "train has 301,966 tokens", "val has 36,059 tokens".
func TestGPT2Shakespeare(t *testing.T) {
	s, err := LoadSplits(filepath.Join(needData(t, "tinyshakespeare"), ShakespeareFile), VocabGPT2, 0, 0.1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Train) != 301966 || len(s.Val) != 0 || len(s.Test) != 36059 {
		t.Errorf("%d, %d, %d tokens; want 301966, 0, 36059", len(s.Train), len(s.Val), len(s.Test))
	}
	// The whole text at once: the cut falls between two pre-tokens, so the sum.
	text, err := LoadText(filepath.Join(needData(t, "tinyshakespeare"), ShakespeareFile), VocabGPT2)
	if err != nil || len(text.IDs) != 301966+36059 || text.Vocab.Size() != 50257 {
		t.Errorf("LoadText(gpt2): %d tokens of %d, %v; want 338025 of 50257", len(text.IDs), text.Vocab.Size(), err)
	}
}

// TestBPEMerges checks merges worked out by hand.
func TestBPEMerges(t *testing.T) {
	tests := []struct {
		text   string
		size   int
		merges []string // in order, as bytes
		encode string
		ids    []int32
	}{
		// One pre-token. Pairs: aa 4 (overlapping), ab 2, the rest 1: aa -> 256, leaving
		// 256 a b d 256 a b a c; then 256a and ab tie at 2, and (97, 98) < (256, 97); then
		// 256 257 (2); then all pairs once: (97, 99) is the smallest.
		{"aaabdaaabac", 260, []string{"aa", "ab", "aaab", "ac"}, "aaabdaaabac", []int32{258, 100, 258, 259}},
		// Pre-tokens "ab", " ab" twice, " cd": ab 3 -> 256; (32, 256) 2 -> 257; then
		// (32, 99) and (99, 100) once each: (32, 99). No merge crosses a pre-token: no "b ".
		{"ab ab ab cd", 259, []string{"ab", " ab", " c"}, "ab ab ab cd", []int32{256, 257, 257, 258, 100}},
		// Too few pairs: training stops at 256 + the 2 pairs of "abc".
		{"abc", 300, []string{"ab", "abc"}, "cab", []int32{99, 256}},
	}
	for _, tc := range tests {
		v, err := NewVocab(VocabBPE, []byte(tc.text), tc.size)
		if err != nil {
			t.Fatalf("%q: %v", tc.text, err)
		}
		var got []string
		for id := 256; id < v.Size(); id++ {
			got = append(got, v.Decode([]int32{int32(id)}))
		}
		if !slices.Equal(got, tc.merges) {
			t.Errorf("NewVocab(bpe, %q, %d) merges %q, want %q", tc.text, tc.size, got, tc.merges)
		}
		if ids, err := v.Encode(tc.encode); err != nil || !slices.Equal(ids, tc.ids) {
			t.Errorf("%q: Encode(%q) = %v, %v; want %v", tc.text, tc.encode, ids, err, tc.ids)
		}
	}
}

// TestBPEByteIDs checks the alphabet: ids 0..255 are the bytes in byte order,
// printed as GPT-2 prints them.
func TestBPEByteIDs(t *testing.T) {
	v, err := NewVocab(VocabBPE, []byte("x"), 256)
	if err != nil {
		t.Fatal(err)
	}
	toks := v.Tokens()
	for id, want := range map[int]string{' ': "Ġ", '\n': "Ċ", 'a': "a", 0: "Ā", 0xff: "ÿ", 0xad: "Ń"} {
		if toks[id] != want {
			t.Errorf("token %d = %q, want %q", id, toks[id], want)
		}
		if s := v.Decode([]int32{int32(id)}); s != string([]byte{byte(id)}) {
			t.Errorf("Decode(%d) = %q", id, s)
		}
	}
}

// TestBPEDeterministic trains twice, under different GOMAXPROCS, and wants the
// same tokenizer.json.
func TestBPEDeterministic(t *testing.T) {
	text, err := os.ReadFile(filepath.Join("testdata", "gpt2", "godocs.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var first []byte
	for _, procs := range []int{1, 4, 1} {
		prev := runtime.GOMAXPROCS(procs)
		v, err := NewVocab(VocabBPE, text, 1000)
		runtime.GOMAXPROCS(prev)
		if err != nil {
			t.Fatal(err)
		}
		js, err := v.TokenizerJSON()
		if err != nil {
			t.Fatal(err)
		}
		if v.Size() != 1000 {
			t.Errorf("GOMAXPROCS %d: %d tokens, want 1000", procs, v.Size())
		}
		if first == nil {
			first = js
		} else if !bytes.Equal(js, first) {
			t.Errorf("GOMAXPROCS %d: another tokenizer.json than the first training's", procs)
		}
	}
}

// TestTokenizerJSONRoundTrip writes a trained vocabulary and reads it back: the
// same tokens and the same ids on texts it was not trained on.
func TestTokenizerJSONRoundTrip(t *testing.T) {
	train, err := os.ReadFile(filepath.Join("testdata", "gpt2", "godocs.txt"))
	if err != nil {
		t.Fatal(err)
	}
	v, err := NewVocab(VocabBPE, train, 700)
	if err != nil {
		t.Fatal(err)
	}
	js, err := v.TokenizerJSON()
	if err != nil {
		t.Fatal(err)
	}
	w, err := ReadTokenizerJSON(js)
	if err != nil {
		t.Fatal(err)
	}
	if w.Kind() != VocabBPE || !slices.Equal(w.Tokens(), v.Tokens()) {
		t.Errorf("read back: %s of %d tokens, want bpe of %d, the same", w.Kind(), w.Size(), v.Size())
	}
	shakespeare, err := os.ReadFile(filepath.Join("testdata", "gpt2", "shakespeare.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{string(train), string(shakespeare), "ünïcödé \xff\xfe 日本語  \t\n"} {
		a, _ := v.Encode(s)
		b, _ := w.Encode(s)
		if !slices.Equal(a, b) {
			i := firstDiff(a, b)
			t.Errorf("%.20q...: read back, ids differ at %d: %v, want %v", s, i, b[i:min(i+5, len(b))], a[i:min(i+5, len(a))])
		}
	}
	again, err := w.TokenizerJSON()
	if err != nil || !bytes.Equal(again, js) {
		t.Errorf("written again: %d bytes, %v; want the same %d bytes", len(again), err, len(js))
	}
	// Both of Hugging Face's forms of the merges read the same.
	pairs := strings.Replace(string(js), `"merges": [`, `"merges": [["a", "b"],`, 1)
	if _, err := ReadTokenizerJSON([]byte(pairs)); err == nil || !strings.Contains(err.Error(), "merges") {
		t.Errorf("mixed merges forms: error %v", err)
	}
}

func TestReadTokenizerJSONErrors(t *testing.T) {
	v, err := NewVocab(VocabBPE, []byte("ab ab ab cd"), 258)
	if err != nil {
		t.Fatal(err)
	}
	js, err := v.TokenizerJSON()
	if err != nil {
		t.Fatal(err)
	}
	good := string(js)
	tests := []struct {
		name, old, new, want string
	}{
		{"not JSON", good, "{", "dataset: tokenizer.json: unexpected end of JSON input"},
		{"model", `"type": "BPE"`, `"type": "WordPiece"`, `dataset: tokenizer.json: model type "WordPiece", want "BPE"`},
		{"pre-tokenizer", `"pre_tokenizer": {
    "type": "ByteLevel"`, `"pre_tokenizer": {
    "type": "Whitespace"`, "dataset: tokenizer.json: want a ByteLevel pre_tokenizer with GPT-2's pattern and no prefix space"},
		{"prefix space", `"add_prefix_space": false`, `"add_prefix_space": true`, "dataset: tokenizer.json: want a ByteLevel pre_tokenizer with GPT-2's pattern and no prefix space"},
		{"missing id", `"Ā": 0,`, ``, `dataset: tokenizer.json: vocab: no token has id 0: the ids of 257 tokens must be 0..256`},
		{"repeated id", `"Ā": 0,`, `"Ā": 1,`, `dataset: tokenizer.json: vocab: "Ā" and "ā" both have id 1`},
		{"missing byte", `"Ā": 0,`, `"xy": 0,`, `dataset: tokenizer.json: no token for byte 0x00 ("Ā"): a byte-level BPE has all 256`},
		{"unknown merge token", `"a b"`, `"a q9"`, `dataset: tokenizer.json: merge 0 "a q9": "a", "q9" or "aq9" is not in the vocab`},
		{"one-token merge", `"a b"`, `"ab"`, `dataset: tokenizer.json: merge 0 "ab" is not two tokens`},
		{"not printable", `"ab": 256`, `"a\u0000": 256`, `dataset: tokenizer.json: token 256 "a\x00" is not in GPT-2's printable byte form`},
	}
	for _, tc := range tests {
		if !strings.Contains(good, tc.old) {
			t.Fatalf("%s: %q is not in the tokenizer.json", tc.name, tc.old)
		}
		_, err := ReadTokenizerJSON([]byte(strings.Replace(good, tc.old, tc.new, 1)))
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestTokenizerFile(t *testing.T) {
	v, err := NewVocab(VocabBPE, []byte("ab ab ab cd"), 258)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, TokenizerFile)
	if err := WriteTokenizerFile(path, v); err != nil {
		t.Fatal(err)
	}
	w, err := ReadTokenizerFile(path)
	if err != nil || !slices.Equal(w.Tokens(), v.Tokens()) {
		t.Errorf("ReadTokenizerFile: %d tokens, %v; want %d", w.Size(), err, v.Size())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the folder holds %d files, want tokenizer.json alone", len(entries))
	}
	if _, err := ReadTokenizerFile(filepath.Join(dir, "none.json")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: error %v, want one wrapping fs.ErrNotExist", err)
	}
	if err := WriteTokenizerFile(path, bytesVocab()); err == nil || err.Error() != `dataset: vocab "bytes" has no tokenizer.json (only "bpe" and "gpt2" do)` {
		t.Errorf("WriteTokenizerFile(bytes) error = %v", err)
	}
}

func TestNewVocabErrors(t *testing.T) {
	tests := []struct {
		kind string
		text string
		size int
		want string
	}{
		{"bpe", "abc", 255, `dataset: vocab "bpe": size 255 is below 256, its bytes`},
		{"bpe", "abc", 0, `dataset: vocab "bpe": size 0 is below 256, its bytes`},
		{"words", "abc", 0, `dataset: vocab "words": want "chars", "bytes", "gpt2" or "bpe"`},
		{"chars", "", 0, `dataset: vocab "chars": the text is empty`},
		{"chars", "a\xff", 0, `dataset: text file "text" is not valid UTF-8: byte 0xff at byte offset 1 (vocab "bytes" reads any file)`},
	}
	for _, tc := range tests {
		if _, err := NewVocab(tc.kind, []byte(tc.text), tc.size); err == nil || err.Error() != tc.want {
			t.Errorf("NewVocab(%s, %q, %d) error = %v, want %q", tc.kind, tc.text, tc.size, err, tc.want)
		}
	}
	if _, err := VocabFrom(VocabBPE, []string{"a"}); err == nil || !strings.Contains(err.Error(), "tokenizer.json") {
		t.Errorf("VocabFrom(bpe) error = %v, want one pointing to tokenizer.json", err)
	}
}

func TestByteLen(t *testing.T) {
	for _, kind := range []string{VocabChars, VocabBytes, VocabGPT2, VocabBPE} {
		s := "héllo wörld ✓ héllo"
		v, err := NewVocab(kind, []byte(s), 270)
		if err != nil {
			t.Fatal(err)
		}
		ids, err := v.Encode(s)
		if err != nil {
			t.Fatal(err)
		}
		if n := v.ByteLen(ids); n != len(s) {
			t.Errorf("%s: ByteLen = %d, want %d", kind, n, len(s))
		}
	}
}

// TestNewSplits checks the cuts in characters and that a "bpe" vocabulary learns
// from the training part alone.
func TestNewSplits(t *testing.T) {
	// 10 characters, 14 bytes: the training part "éaéaéa" (6 characters at test
	// fraction 0.4 of 10), then "zzzé" as the test part.
	text := []byte("éaéaéazzzé")
	for _, kind := range []string{VocabGPT2, VocabBPE} {
		s, err := NewSplits("t", text, kind, 300, 0.4, 0)
		if err != nil {
			t.Fatal(err)
		}
		v := s.Vocab
		if got := v.Decode(s.Train) + "|" + v.Decode(s.Val) + "|" + v.Decode(s.Test); got != "éaéaéa||zzzé" {
			t.Errorf("%s: parts %q, want %q", kind, got, "éaéaéa||zzzé")
		}
		again, err := v.EncodeSplits("t", text, 0.4, 0)
		if err != nil || !slices.Equal(again.Train, s.Train) || !slices.Equal(again.Test, s.Test) {
			t.Errorf("%s: EncodeSplits gave other ids (%v)", kind, err)
		}
	}
	s, err := NewSplits("t", text, VocabBPE, 300, 0.4, 0)
	if err != nil {
		t.Fatal(err)
	}
	if ids, _ := s.Vocab.Encode("zz"); !slices.Equal(ids, []int32{'z', 'z'}) {
		t.Errorf(`the test part's "zz" encodes as %v: a merge learnt from it`, ids)
	}
	// Not UTF-8: cut in bytes.
	s, err = NewSplits("t", []byte("ab\xffcd\xfe"), VocabGPT2, 0, 0.5, 0)
	if err != nil || s.Vocab.Decode(s.Train) != "ab\xff" || s.Vocab.Decode(s.Test) != "cd\xfe" {
		t.Errorf("bytes cut: %q | %q, %v", s.Vocab.Decode(s.Train), s.Vocab.Decode(s.Test), err)
	}
	// chars and bytes cut their ids, as Text.Split does.
	s, err = NewSplits("t", text, VocabChars, 0, 0.4, 0)
	if err != nil || len(s.Train) != 6 || len(s.Test) != 4 {
		t.Errorf("chars: %d and %d tokens, %v; want 6 and 4", len(s.Train), len(s.Test), err)
	}
	tests := []struct {
		kind string
		data string
		tf   float64
		want string
	}{
		{VocabBPE, "éa", 1e-20, `dataset: t: data.test_fraction = 1e-20 of 2 characters leaves the test split empty`},
		{VocabGPT2, "a\xff", 1e-20, `dataset: t: data.test_fraction = 1e-20 of 2 bytes leaves the test split empty`},
		{VocabBPE, "", 0.4, `dataset: text file "t" is empty`},
		{VocabBPE, "abc", 1, `dataset: data.test_fraction = 1: want a value in [0, 1)`},
	}
	for _, tc := range tests {
		if _, err := NewSplits("t", []byte(tc.data), tc.kind, 300, tc.tf, 0); err == nil || err.Error() != tc.want {
			t.Errorf("NewSplits(%q, %s, %v) error = %v, want %q", tc.data, tc.kind, tc.tf, err, tc.want)
		}
	}
	chars, err := NewVocab(VocabChars, []byte("abc"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := chars.EncodeSplits("t", []byte("abcd"), 0.5, 0); err == nil || err.Error() != `dataset: text file "t": character 'd' (U+0064) at 3 is not in the vocabulary` {
		t.Errorf("EncodeSplits of a character not in the vocabulary: error %v", err)
	}
}

// FuzzByteLevel checks that "gpt2" and a trained "bpe" give back any bytes they
// encode, and that on UTF-8 text "gpt2" agrees with tiktoken-go, whose
// pre-tokenizer is a regular expression engine's rather than hand-written.
func FuzzByteLevel(f *testing.F) {
	for _, s := range []string{"Hello world", "a  b\n\n  c", "'s'S'll 'LL", "\xff\xfe\xc3", "日本語 テキスト 123 ４５", "\u00a0\u2003x \u3000 y\u0085z",
		"x\u2028\u2029 ", "😀😀 e\u0301", "   ", "\t\r\n \v\f", "a\x00b", "<|endoftext|>"} {
		f.Add(s)
	}
	train, err := os.ReadFile(filepath.Join("testdata", "gpt2", "shakespeare.txt"))
	if err != nil {
		f.Fatal(err)
	}
	bpe, err := NewVocab(VocabBPE, train, 500)
	if err != nil {
		f.Fatal(err)
	}
	gpt2 := gpt2Vocab()
	lib := codec.NewR50kBase()
	f.Fuzz(func(t *testing.T, s string) {
		for _, v := range []Vocab{gpt2, bpe} {
			ids, err := v.Encode(s)
			if err != nil {
				t.Fatalf("%s: Encode(%q): %v", v.Kind(), s, err)
			}
			if got := v.Decode(ids); got != s {
				t.Errorf("%s: Decode(Encode(%q)) = %q", v.Kind(), s, got)
			}
			if n := v.ByteLen(ids); n != len(s) {
				t.Errorf("%s: ByteLen(Encode(%q)) = %d, want %d", v.Kind(), s, n, len(s))
			}
		}
		// tiktoken-go's regular expression drops U+007F, the one character of the
		// BMP and planes 1-2 on which it differs: js-tiktoken keeps it (TestGPT2Small).
		if !utf8.ValidString(s) || strings.ContainsRune(s, 0x7f) {
			return
		}
		want, _, err := lib.Encode(s)
		if err != nil {
			t.Skip(err)
		}
		got, _ := gpt2.Encode(s)
		w := make([]int32, len(want))
		for i, id := range want {
			w[i] = int32(id)
		}
		if !slices.Equal(got, w) {
			t.Errorf("gpt2: Encode(%q) = %v, tiktoken-go %v", s, got, w)
		}
	})
}

// TestTokenizerJSONAddedTokens reads a tokenizer.json with added tokens, as
// GPT-2's has <|endoftext|>: they keep their ids, decode to their text, are
// never produced by Encode, and are written back in id order.
func TestTokenizerJSONAddedTokens(t *testing.T) {
	v, err := NewVocab(VocabBPE, []byte("ab ab ab cd"), 258)
	if err != nil {
		t.Fatal(err)
	}
	js, err := v.TokenizerJSON()
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(js), `"Ġab": 257`, `"Ġab": 257, "<|endoftext|>": 258, "<pad>": 259`, 1)
	s = strings.Replace(s, `"added_tokens": []`, `"added_tokens": [
		{"id": 259, "content": "<pad>", "special": true},
		{"id": 258, "content": "<|endoftext|>", "special": true}]`, 1)
	w, err := ReadTokenizerJSON([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	if w.Size() != 260 || w.Tokens()[258] != "<|endoftext|>" || w.Decode([]int32{258, 259}) != "<|endoftext|><pad>" {
		t.Errorf("%d tokens, 258 %q, Decode(258, 259) = %q", w.Size(), w.Tokens()[258], w.Decode([]int32{258, 259}))
	}
	if ids, _ := w.Encode("<|endoftext|>"); slices.Contains(ids, 258) || w.Decode(ids) != "<|endoftext|>" {
		t.Errorf("Encode(<|endoftext|>) = %v: an added token is ordinary text", ids)
	}
	out, err := w.TokenizerJSON()
	if err != nil {
		t.Fatal(err)
	}
	if i, j := bytes.Index(out, []byte(`"content": "<|endoftext|>"`)), bytes.Index(out, []byte(`"content": "<pad>"`)); i < 0 || j < i {
		t.Errorf("written back, the added tokens are not both there in id order:\n%s", out[:min(len(out), 600)])
	}
	again, err := ReadTokenizerJSON(out)
	if err != nil || !slices.Equal(again.Tokens(), w.Tokens()) {
		t.Errorf("read back again: %d tokens, %v", again.Size(), err)
	}
}
