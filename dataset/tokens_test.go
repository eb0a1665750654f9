package dataset

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// randomIDs returns n seeded ids below vocab.
func randomIDs(n, vocab int, seed uint64) []int32 {
	rng := rand.New(rand.NewPCG(seed, 1))
	ids := make([]int32, n)
	for i := range ids {
		ids[i] = int32(rng.IntN(vocab))
	}
	return ids
}

// writeTokenFile writes ids as dtype into dir/name and returns its path.
func writeTokenFile(t *testing.T, dir, name string, ids []int32, dtype string) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteTokens(&b, ids, dtype); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func openTokens(t *testing.T, path, dtype string, vocab int) *TokenFile {
	t.Helper()
	f, err := OpenTokens(path, dtype, vocab)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.Close(); err != nil {
			t.Error(err)
		}
	})
	return f
}

func TestTokenFileReadsWhatWasWritten(t *testing.T) {
	for _, tc := range []struct {
		dtype  string
		vocab  int
		n      int
		wantSz int // bytes an id
	}{
		{TokensUint16, 65, 1000, 2},
		{TokensUint16, 1 << 16, 5000, 2},
		{TokensUint32, 1<<16 + 1, 5000, 4},
		{TokensUint32, 200000, 300000, 4}, // several scan chunks
	} {
		t.Run(fmt.Sprintf("%s/%d", tc.dtype, tc.vocab), func(t *testing.T) {
			if got := TokenDType(tc.vocab); got != tc.dtype {
				t.Errorf("TokenDType(%d) = %q, want %q", tc.vocab, got, tc.dtype)
			}
			ids := randomIDs(tc.n, tc.vocab, uint64(tc.vocab))
			ids[0], ids[tc.n-1] = 0, int32(tc.vocab-1) // the extremes
			path := writeTokenFile(t, t.TempDir(), "train.bin", ids, tc.dtype)
			if st, _ := os.Stat(path); st.Size() != int64(tc.n*tc.wantSz) {
				t.Fatalf("%d ids of %s take %d bytes, want %d", tc.n, tc.dtype, st.Size(), tc.n*tc.wantSz)
			}
			f := openTokens(t, path, tc.dtype, tc.vocab)
			if f.Len() != tc.n {
				t.Fatalf("Len() = %d, want %d", f.Len(), tc.n)
			}
			for i, id := range ids {
				if got := f.At(i); got != id {
					t.Fatalf("At(%d) = %d, want %d", i, got, id)
				}
			}
			// windows, of the file and of a slice of it, equal those of the ids
			sub := f.Slice(10, tc.n-10)
			for _, o := range []int{0, 1, 7, tc.n/2 - 3, tc.n - 40} {
				for _, src := range []struct {
					name string
					tok  Tokens
					ids  IDs
					o    int
				}{{"file", f, IDs(ids), o}, {"slice", sub, IDs(ids[10 : tc.n-10]), max(0, o-20)}} {
					gx, gl := make([]float32, 16), make([]int, 16)
					wx, wl := make([]float32, 16), make([]int, 16)
					src.tok.Window(src.o, gx, gl)
					src.ids.Window(src.o, wx, wl)
					if !slices.Equal(gx, wx) || !slices.Equal(gl, wl) {
						t.Errorf("%s: Window(%d) = %v, %v, want %v, %v", src.name, src.o, gx, gl, wx, wl)
					}
				}
			}
			f.Release() // drops pages; the ids read the same after
			if got := f.At(tc.n - 1); got != ids[tc.n-1] {
				t.Errorf("after Release At(%d) = %d, want %d", tc.n-1, got, ids[tc.n-1])
			}
		})
	}
}

func TestWriteTokensRefusesWhatDoesNotFit(t *testing.T) {
	for _, tc := range []struct {
		ids   []int32
		dtype string
		want  string
	}{
		{[]int32{1, 65536}, TokensUint16, "id 65536 at token 1 does not fit uint16"},
		{[]int32{-1}, TokensUint32, "id -1 at token 0 does not fit uint32"},
		{[]int32{1}, "int8", `token dtype "int8"`},
	} {
		err := WriteTokens(&bytes.Buffer{}, tc.ids, tc.dtype)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("WriteTokens(%v, %q) = %v, want an error holding %q", tc.ids, tc.dtype, err, tc.want)
		}
	}
}

func TestOpenTokensBadFiles(t *testing.T) {
	dir := t.TempDir()
	raw := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	high := []int32{1, 2, 3, 4, 5, 64, 6}
	bigHigh := randomIDs(scanChunk, 10, 3) // the bad id past the first scan chunk
	bigHigh = append(bigHigh, 10)
	for _, tc := range []struct {
		name, path, dtype string
		vocab             int
		want              string
	}{
		{"odd", raw("odd.bin", []byte{1, 0, 2}), TokensUint16, 10, "odd.bin: 3 bytes is not a whole number of uint16 ids (2 bytes each)"},
		{"not4", raw("six.bin", []byte{1, 0, 0, 0, 2, 0}), TokensUint32, 10, "six.bin: 6 bytes is not a whole number of uint32 ids (4 bytes each)"},
		{"high16", writeTokenFile(t, dir, "high16.bin", high, TokensUint16), TokensUint16, 64,
			"high16.bin: token 64 at token offset 5 (byte offset 10) is not below the vocabulary size 64"},
		{"high32", writeTokenFile(t, dir, "high32.bin", high, TokensUint32), TokensUint32, 64,
			"high32.bin: token 64 at token offset 5 (byte offset 20) is not below the vocabulary size 64"},
		{"late", writeTokenFile(t, dir, "late.bin", bigHigh, TokensUint16), TokensUint16, 10,
			fmt.Sprintf("token 10 at token offset %d (byte offset %d)", scanChunk, 2*scanChunk)},
		{"dtype", raw("x.bin", nil), "float32", 10, `token dtype "float32"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := OpenTokens(tc.path, tc.dtype, tc.vocab)
			if err == nil {
				f.Close()
				t.Fatalf("OpenTokens(%s, %s, %d) gave no error, want %q", tc.path, tc.dtype, tc.vocab, tc.want)
			}
			if !strings.HasPrefix(err.Error(), "dataset: ") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want dataset: ...%s...", err, tc.want)
			}
		})
	}
	_, err := OpenTokens(filepath.Join(dir, "missing.bin"), TokensUint16, 10)
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "missing.bin") {
		t.Errorf("missing file: error %v, want one wrapping fs.ErrNotExist naming the file", err)
	}
	f := openTokens(t, raw("empty.bin", nil), TokensUint16, 10)
	if f.Len() != 0 {
		t.Errorf("an empty file's Len() = %d, want 0", f.Len())
	}
}

// TestTokenSamplerEqualsTextSampler: batches drawn from a mapped file are the
// in-memory sampler's over the same ids, step for step, so a run on train.bin
// trains as a run on the text does, and resumes as it does.
func TestTokenSamplerEqualsTextSampler(t *testing.T) {
	for _, dtype := range []string{TokensUint16, TokensUint32} {
		ids := randomIDs(20000, 300, 5)
		f := openTokens(t, writeTokenFile(t, t.TempDir(), "train.bin", ids, dtype), dtype, 300)
		mem := NewTextSampler(ids, 32, 8, 42)
		mapped := NewTokenSampler(f, 32, 8, 42)
		if mapped.StepsPerEpoch() != mem.StepsPerEpoch() {
			t.Errorf("%s: StepsPerEpoch() = %d, want %d", dtype, mapped.StepsPerEpoch(), mem.StepsPerEpoch())
		}
		for _, step := range []int{0, 1, 2, 77, 1000} {
			gx, gl := mapped.Batch(step)
			wx, wl := mem.Batch(step)
			if !slices.Equal(gx.Data32(), wx.Data32()) || !slices.Equal(gl, wl) {
				t.Errorf("%s: batch %d differs from the in-memory sampler's", dtype, step)
			}
		}
	}
}

// TestTokenWindows: unbounded, or bounded above the windows there are, they are
// TextWindows'; bounded below, max windows spread in order over the file, each
// one of TextWindows'.
func TestTokenWindows(t *testing.T) {
	ids := randomIDs(1001, 50, 9)
	const block = 10 // 100 windows
	wx, wl := TextWindows(ids, block)
	for _, bound := range []int{0, 100, 500} {
		gx, gl := TokenWindows(IDs(ids), block, bound)
		if !slices.Equal(gx.Shape(), wx.Shape()) || !slices.Equal(gx.Data32(), wx.Data32()) || !slices.Equal(gl, wl) {
			t.Errorf("TokenWindows(max %d) differs from TextWindows", bound)
		}
	}
	for _, bound := range []int{1, 3, 7, 99} {
		gx, gl := TokenWindows(IDs(ids), block, bound)
		if !slices.Equal(gx.Shape(), []int{bound, block}) {
			t.Fatalf("max %d: shape %v, want [%d %d]", bound, gx.Shape(), bound, block)
		}
		x := gx.Data32()
		prev := -1
		for i := range bound {
			j := -1
			for k := prev + 1; k < 100 && j < 0; k++ {
				if slices.Equal(x[i*block:(i+1)*block], wx.Data32()[k*block:(k+1)*block]) &&
					slices.Equal(gl[i*block:(i+1)*block], wl[k*block:(k+1)*block]) {
					j = k
				}
			}
			if j < 0 {
				t.Fatalf("max %d: window %d is not a later window of TextWindows'", bound, i)
			}
			prev = j
		}
		if bound > 1 && prev < 100*(bound-1)/bound {
			t.Errorf("max %d: the last window taken is %d of 100: not spread over the file", bound, prev)
		}
	}
}

func TestReadTokenMeta(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, json, want string
	}{
		{"ok", `{"dtype":"uint16","vocab_size":3,"vocab":"chars","tokens":["a","b","c"]}`, ""},
		{"dtype", `{"dtype":"int32","vocab_size":3,"vocab":"chars"}`, `dtype "int32": want "uint16" or "uint32"`},
		{"size", `{"dtype":"uint16","vocab_size":0,"vocab":"chars"}`, "vocab_size 0: want 1 to"},
		{"narrow", `{"dtype":"uint16","vocab_size":70000,"vocab":"bpe"}`, `vocab_size 70000 does not fit dtype "uint16"`},
		{"tokens", `{"dtype":"uint16","vocab_size":4,"vocab":"chars","tokens":["a"]}`, "1 tokens for vocab_size 4"},
		{"json", `{"dtype":`, "meta.json: unexpected end of JSON input"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.name, "meta.json")
			os.MkdirAll(filepath.Dir(path), 0o755)
			if err := os.WriteFile(path, []byte(tc.json), 0o644); err != nil {
				t.Fatal(err)
			}
			m, err := ReadTokenMeta(path)
			if tc.want == "" {
				if err != nil || m.VocabSize != 3 || len(m.Tokens) != 3 {
					t.Errorf("ReadTokenMeta(%s) = %+v, %v", tc.json, m, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
				t.Errorf("ReadTokenMeta(%s): error %v, want one naming %s and holding %q", tc.json, err, path, tc.want)
			}
		})
	}
}

// encodeText is a text with multi-byte characters, blank lines and lines that
// begin or end with spaces: cuts must avoid all of those neighbourhoods.
func encodeText() string {
	rng := rand.New(rand.NewPCG(11, 12))
	words := []string{"ROMEO:", "thou", "art", "Ünïcødé", "日本", "  indented", "trailing  ", "\t", "", "'s", "naïve"}
	var b strings.Builder
	for range 3000 {
		for k := range 1 + rng.IntN(6) {
			if k > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(words[rng.IntN(len(words))])
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// TestEncodeParallelEqualsOnePiece: the ids of a text encoded in pieces on several
// goroutines are those of one encoding of the whole, under both vocabularies,
// whatever the piece size and the workers.
func TestEncodeParallelEqualsOnePiece(t *testing.T) {
	text := encodeText()
	chars, err := NewText("t", []byte(text), VocabChars)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []Vocab{chars.Vocab, bytesVocab()} {
		want, err := v.Encode(text)
		if err != nil {
			t.Fatal(err)
		}
		for _, piece := range []int{1, 100, 4096, 1 << 20} {
			for _, workers := range []int{1, 2, 3} {
				calls, last := 0, 0
				got, err := encodeParallel(v, []byte(text), workers, piece, func(done int) { calls++; last = done })
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, want) {
					t.Errorf("%s, pieces of %d, %d workers: the ids differ from a one-piece encoding", v.Kind(), piece, workers)
				}
				if last != len(text) || calls != len(cutText([]byte(text), piece)) {
					t.Errorf("%s, pieces of %d: progress called %d times ending at %d, want %d times ending at %d",
						v.Kind(), piece, calls, last, len(cutText([]byte(text), piece)), len(text))
				}
			}
		}
	}
}

// TestCutText: the pieces join to the text, and each cut is after a newline
// between two characters that are not white space.
func TestCutText(t *testing.T) {
	text := []byte(encodeText())
	for _, size := range []int{1, 100, 4096} {
		pieces := cutText(text, size)
		if len(pieces) < 2 || !bytes.Equal(bytes.Join(pieces, nil), text) {
			t.Fatalf("size %d: %d pieces that join to the text: %v", size, len(pieces), bytes.Equal(bytes.Join(pieces, nil), text))
		}
		for i, p := range pieces[:len(pieces)-1] {
			before, _ := utf8.DecodeLastRune(p[:len(p)-1])
			after, _ := utf8.DecodeRune(pieces[i+1])
			if p[len(p)-1] != '\n' || unicode.IsSpace(before) || unicode.IsSpace(after) || len(p) < size {
				t.Errorf("size %d: piece %d (%d bytes) ends %q and the next begins %q", size, i, len(p), p[max(0, len(p)-5):], pieces[i+1][:min(5, len(pieces[i+1]))])
			}
		}
	}
	if got := cutText([]byte("a\n\nb"), 1); len(got) != 1 {
		t.Errorf("a text with no safe cut gave %d pieces, want 1", len(got))
	}
}

// TestEncodeParallelError: a character outside the vocabulary gives the error of
// the whole text's encoding, its place counted from the text's start.
func TestEncodeParallelError(t *testing.T) {
	text := encodeText()
	v, err := VocabFrom(VocabChars, []string{"\n", " ", "a"})
	if err != nil {
		t.Fatal(err)
	}
	_, want := v.Encode(text)
	_, got := encodeParallel(v, []byte(text), 2, 100, nil)
	if want == nil || got == nil || got.Error() != want.Error() {
		t.Errorf("error %v, want %v", got, want)
	}
}

// mappedRss returns the kB of path's mapping resident in this process, from
// /proc/self/smaps; ok is false where there is none to read.
func mappedRss(t *testing.T, path string) (kb int, ok bool) {
	t.Helper()
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return 0, false
	}
	in := false
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) >= 5 && len(f[1]) == 4 && strings.Contains(f[0], "-"): // a mapping's header
			in = len(f) >= 6 && f[len(f)-1] == path
		case in && len(f) == 3 && f[0] == "Rss:":
			var n int
			fmt.Sscan(f[1], &n)
			kb += n
		}
	}
	return kb, true
}

// TestTokenFileStaysSmall: drawing thousands of windows all over a 32 MB file,
// and evaluation windows spread over it, leaves almost none of it resident
// in the process, so a run's memory does not grow with its train.bin.
func TestTokenFileStaysSmall(t *testing.T) {
	const n = 16 << 20
	path := writeTokenFile(t, t.TempDir(), "train.bin", randomIDs(n, 1000, 13), TokensUint16)
	f := openTokens(t, path, TokensUint16, 1000)
	if _, ok := mappedRss(t, path); !ok {
		t.Skip("no /proc/self/smaps here")
	}
	s := NewTokenSampler(f, 64, 64, 1)
	x, labels := make([]float32, 64*64), make([]int, 64*64)
	for step := range 200 {
		s.BatchInto(step, x, labels)
	}
	TokenWindows(f, 64, 4096)
	kb, _ := mappedRss(t, path)
	// without the release, the 12,800 windows touch every 64 KiB of the file
	// (a fault maps 64 KiB around the page, or up to a whole large folio)
	if kb > 0 {
		t.Errorf("%d kB of the %d kB file resident after the windows, want none", kb, 2*n>>10)
	}
	sum := int32(0)
	for i := 0; i < n; i += 2048 { // reading through the mapping, as a check that the measure sees it
		sum += f.At(i)
	}
	sink = sum
	if kb, _ := mappedRss(t, path); kb < 2*n>>10/2 {
		t.Errorf("%d kB resident after reading every page, want most of the file's %d kB", kb, 2*n>>10)
	}
}

var sink int32

// BenchmarkTokenSampler: a batch of 16 windows of 64 tokens drawn from a 64 MB
// file mapped (each window's pages released after it) and from the same ids in
// memory.
func BenchmarkTokenSampler(b *testing.B) {
	ids := randomIDs(32<<20, 1000, 17)
	var buf bytes.Buffer
	if err := WriteTokens(&buf, ids, TokensUint16); err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "train.bin")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	f, err := OpenTokens(path, TokensUint16, 1000)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	x, labels := make([]float32, 16*64), make([]int, 16*64)
	for _, s := range []struct {
		name string
		src  Tokens
	}{{"mapped", f}, {"memory", IDs(ids)}} {
		b.Run(s.name, func(b *testing.B) {
			smp := NewTokenSampler(s.src, 64, 16, 1)
			for i := 0; b.Loop(); i++ {
				smp.BatchInto(i, x, labels)
			}
		})
	}
}
