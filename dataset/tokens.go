package dataset

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"

	"github.com/pipetrain/pipetrain/tensor"
)

// The element types of a token file, as meta.json names them.
const (
	TokensUint16 = "uint16"
	TokensUint32 = "uint32"
)

// maxVocabIDs bounds a token file's vocabulary: ids travel as float32, exact below 2^24.
const maxVocabIDs = 1 << 24

// TokenDType returns the element type a vocabulary of size tokens is written in, as
// nanoGPT writes it: uint16 while every id fits, uint32 above 65,536 tokens.
func TokenDType(size int) string {
	if size <= 1<<16 {
		return TokensUint16
	}
	return TokensUint32
}

// dtypeWidth returns the bytes an id of dtype takes.
func dtypeWidth(dtype string) (int, error) {
	switch dtype {
	case TokensUint16:
		return 2, nil
	case TokensUint32:
		return 4, nil
	}
	return 0, fmt.Errorf("dataset: token dtype %q: want %q or %q", dtype, TokensUint16, TokensUint32)
}

// Tokens is a sequence of token ids that training and evaluation windows are cut
// from: IDs in memory, or a TokenFile mapped from disk.
type Tokens interface {
	// Len returns the number of ids.
	Len() int
	// Window writes ids[o : o+len(x)] into x, as float32, and the ids one later,
	// ids[o+1 : o+len(x)+1], into labels, which is as long as x.
	Window(o int, x []float32, labels []int)
}

// IDs is a token sequence held in memory.
type IDs []int32

// Len returns len(ids).
func (ids IDs) Len() int { return len(ids) }

// Window copies a window and its targets (see Tokens).
func (ids IDs) Window(o int, x []float32, labels []int) {
	for i, id := range ids[o : o+len(x)] {
		x[i] = float32(id)
	}
	for i, id := range ids[o+1 : o+len(x)+1] {
		labels[i] = int(id)
	}
}

// TokenMeta is a token folder's meta.json: how its train.bin and val.bin are
// written and what their ids mean.
type TokenMeta struct {
	DType     string   `json:"dtype"`            // "uint16" or "uint32", little-endian
	VocabSize int      `json:"vocab_size"`       // every id is below it
	Vocab     string   `json:"vocab"`            // the vocabulary kind
	Tokens    []string `json:"tokens,omitempty"` // chars, bytes: each id's text
}

// ReadTokenMeta reads and checks a meta.json: a known dtype wide enough for the
// vocabulary, and as many tokens as vocab_size when it lists them. A missing file
// gives an error that wraps fs.ErrNotExist.
func ReadTokenMeta(path string) (TokenMeta, error) {
	var m TokenMeta
	b, err := os.ReadFile(path)
	if err != nil {
		return m, fmt.Errorf("dataset: %w", err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("dataset: %s: %v", path, err)
	}
	w, err := dtypeWidth(m.DType)
	switch {
	case err != nil:
		return m, fmt.Errorf("dataset: %s: dtype %q: want %q or %q", path, m.DType, TokensUint16, TokensUint32)
	case m.VocabSize < 1 || m.VocabSize > maxVocabIDs:
		return m, fmt.Errorf("dataset: %s: vocab_size %d: want 1 to %d", path, m.VocabSize, maxVocabIDs)
	case w == 2 && m.VocabSize > 1<<16:
		return m, fmt.Errorf("dataset: %s: vocab_size %d does not fit dtype %q (at most 65536 tokens)", path, m.VocabSize, m.DType)
	case m.Tokens != nil && len(m.Tokens) != m.VocabSize:
		return m, fmt.Errorf("dataset: %s: %d tokens for vocab_size %d", path, len(m.Tokens), m.VocabSize)
	}
	return m, nil
}

// TokenFile is a file of little-endian token ids (nanoGPT's train.bin and val.bin),
// memory-mapped read-only. Window drops the pages it read from the process's
// resident set, so a process reading windows all over a large file keeps at most a
// few MiB of it resident, whatever its size. The file must not change while it is
// open. A TokenFile is safe for concurrent use.
type TokenFile struct {
	path    string
	mapping []byte // the whole file, mapped (nil when empty)
	data    []byte // the ids' bytes: the mapping, or part of it
	off     int    // where data begins in the mapping
	width   int    // bytes an id
	owner   bool   // unmaps the mapping on Close
}

// scanChunk is how many bytes OpenTokens checks at a time, read with pread so that
// checking a file leaves none of its pages resident in the process.
const scanChunk = 1 << 20

// OpenTokens maps the token file path of dtype ("uint16" or "uint32") and checks
// that it holds whole ids all below vocab. An error names the file and, for an id out
// of range, its offset in tokens and in bytes; a missing file gives an error that
// wraps fs.ErrNotExist.
func OpenTokens(path, dtype string, vocab int) (*TokenFile, error) {
	w, err := dtypeWidth(dtype)
	if err != nil {
		return nil, err
	}
	fd, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	defer fd.Close()
	st, err := fd.Stat()
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	size := st.Size()
	if size%int64(w) != 0 {
		return nil, fmt.Errorf("dataset: %s: %d bytes is not a whole number of %s ids (%d bytes each)", path, size, dtype, w)
	}
	if int64(int(size)) != size {
		return nil, fmt.Errorf("dataset: %s: %d bytes is too large to map", path, size)
	}
	if err := scanTokens(fd, path, w, vocab); err != nil {
		return nil, err
	}
	f := &TokenFile{path: path, width: w, owner: true}
	if size == 0 {
		return f, nil // nothing to map
	}
	if f.mapping, err = unix.Mmap(int(fd.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED); err != nil {
		return nil, fmt.Errorf("dataset: %s: mmap: %w", path, err)
	}
	f.data = f.mapping
	_ = unix.Madvise(f.mapping, unix.MADV_RANDOM) // a hint: windows are read at random offsets, no read-ahead
	return f, nil
}

// scanTokens checks that every id of the file is below vocab, reading it in chunks.
func scanTokens(r io.ReaderAt, path string, w, vocab int) error {
	buf := make([]byte, scanChunk)
	for off := int64(0); ; {
		n, err := r.ReadAt(buf, off)
		n -= n % w
		for i := 0; i < n; i += w {
			var id uint32
			if w == 2 {
				id = uint32(binary.LittleEndian.Uint16(buf[i:]))
			} else {
				id = binary.LittleEndian.Uint32(buf[i:])
			}
			if uint64(id) >= uint64(vocab) {
				b := off + int64(i)
				return fmt.Errorf("dataset: %s: token %d at token offset %d (byte offset %d) is not below the vocabulary size %d",
					path, id, b/int64(w), b, vocab)
			}
		}
		off += int64(n)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("dataset: %s: %w", path, err)
		}
	}
}

// Path returns the file's path.
func (f *TokenFile) Path() string { return f.path }

// Len returns the number of ids.
func (f *TokenFile) Len() int { return len(f.data) / f.width }

// At returns id i.
func (f *TokenFile) At(i int) int32 {
	if f.width == 2 {
		return int32(binary.LittleEndian.Uint16(f.data[2*i:]))
	}
	return int32(binary.LittleEndian.Uint32(f.data[4*i:]))
}

// Slice returns ids [lo, hi) of f, sharing its mapping: valid until f is closed.
func (f *TokenFile) Slice(lo, hi int) *TokenFile {
	return &TokenFile{path: f.path, mapping: f.mapping, data: f.data[lo*f.width : hi*f.width : hi*f.width],
		off: f.off + lo*f.width, width: f.width}
}

// Window copies a window and its targets (see Tokens), then drops the pages it
// read from the process's resident set (see Release).
func (f *TokenFile) Window(o int, x []float32, labels []int) {
	n := len(x)
	b := f.data[o*f.width : (o+n+1)*f.width]
	if f.width == 2 {
		for i := range n {
			x[i] = float32(binary.LittleEndian.Uint16(b[2*i:]))
			labels[i] = int(binary.LittleEndian.Uint16(b[2*i+2:]))
		}
	} else {
		for i := range n {
			x[i] = float32(binary.LittleEndian.Uint32(b[4*i:]))
			labels[i] = int(binary.LittleEndian.Uint32(b[4*i+4:]))
		}
	}
	f.releaseSpan(o*f.width, (o+n+1)*f.width)
}

// The span releaseSpan widens a range to: a fault maps the page cache's whole
// folio, up to 2 MiB (aligned on its size in the file), or the 64 KiB around the
// page (aligned in memory) that are cached.
const (
	folioAlign  = 2 << 20
	faultAround = 64 << 10
)

// releaseSpan drops bytes [lo, hi) of f's ids, and whatever a fault in them may have
// mapped beside them, from the process's resident set.
func (f *TokenFile) releaseSpan(lo, hi int) {
	lo = max(0, f.off+lo-faultAround) &^ (folioAlign - 1)
	hi = min(len(f.mapping), (f.off+hi+faultAround+folioAlign-1)&^(folioAlign-1))
	if lo < hi {
		_ = unix.Madvise(f.mapping[lo:hi], unix.MADV_DONTNEED) // a read-only file mapping: nothing is lost
	}
}

// Release drops every page of f's mapping (of the whole file, for a Slice) from the
// process's resident set. They stay in the page cache: reading them again costs a
// minor fault, not a disk read. Window does it for what it reads, which a fault
// maps more of than the page it needs (the 64 KiB around it, or a whole large folio
// of the page cache).
func (f *TokenFile) Release() {
	if len(f.mapping) > 0 {
		_ = unix.Madvise(f.mapping, unix.MADV_DONTNEED)
	}
}

// Close unmaps the file; f and every Slice of it must not be used after.
func (f *TokenFile) Close() error {
	if !f.owner || f.mapping == nil {
		return nil
	}
	err := unix.Munmap(f.mapping)
	f.mapping, f.data = nil, nil
	if err != nil {
		return fmt.Errorf("dataset: %s: munmap: %w", f.path, err)
	}
	return nil
}

// WriteTokens writes ids as little-endian dtype values, nanoGPT's train.bin layout.
// An id that does not fit dtype is an error.
func WriteTokens(w io.Writer, ids []int32, dtype string) error {
	width, err := dtypeWidth(dtype)
	if err != nil {
		return err
	}
	const chunk = 1 << 16
	buf := make([]byte, 0, chunk*width)
	for lo := 0; lo < len(ids); lo += chunk {
		buf = buf[:0]
		for i, id := range ids[lo:min(len(ids), lo+chunk)] {
			if id < 0 || width == 2 && id > 0xffff {
				return fmt.Errorf("dataset: id %d at token %d does not fit %s", id, lo+i, dtype)
			}
			if width == 2 {
				buf = binary.LittleEndian.AppendUint16(buf, uint16(id))
			} else {
				buf = binary.LittleEndian.AppendUint32(buf, uint32(id))
			}
		}
		if _, err := w.Write(buf); err != nil {
			return err
		}
	}
	return nil
}

// TokenWindows cuts src into non-overlapping windows of block tokens for
// evaluation, as TextWindows does, but at most most of them (0: no bound): when
// src holds more, it takes most windows spread evenly over it, window i being the
// (i·n/most)-th of the n that TextWindows would give. A bounded evaluation of a large
// file thus costs the same whatever its size, and a small file's is TextWindows'.
func TokenWindows(src Tokens, block, most int) (x *tensor.Tensor, labels []int) {
	if block < 1 {
		panic(fmt.Errorf("dataset.TokenWindows: block %d is not positive", block))
	}
	n := 0
	if src.Len() > 0 {
		n = (src.Len() - 1) / block
	}
	take := n
	if most > 0 && n > most {
		take = most
	}
	xb := make([]float32, take*block)
	labels = make([]int, take*block)
	for i := range take {
		j := i
		if take < n {
			j = int(int64(i) * int64(n) / int64(take))
		}
		src.Window(j*block, xb[i*block:(i+1)*block], labels[i*block:(i+1)*block])
	}
	return tensor.Wrap32(xb, take, block), labels
}
