package checkpoint

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/pipetrain/pipetrain/tensor"
)

const (
	// MaxHeaderSize is the largest JSON header Decode accepts, in bytes. It is the
	// limit of the reference implementation (100 MB).
	MaxHeaderSize = 100_000_000

	metadataKey = "__metadata__"
	lenSize     = 8       // the little-endian uint64 header length
	chunkSize   = 1 << 18 // bytes converted per write or read; a multiple of 8
)

// dtypeInfo describes one safetensors dtype this package reads and writes.
type dtypeInfo struct {
	name string
	size int // bytes per element
	dt   tensor.DType
}

var (
	dtypeF32 = dtypeInfo{"F32", 4, tensor.Float32}
	dtypeF64 = dtypeInfo{"F64", 8, tensor.Float64}
	// halves, which DecodeWide reads into float32 (every half is one exactly)
	dtypeF16  = dtypeInfo{"F16", 2, tensor.Float32}
	dtypeBF16 = dtypeInfo{"BF16", 2, tensor.Float32}
)

// otherDtypes are valid safetensors dtypes that a pipetrain tensor cannot hold, so
// that an error can tell "unsupported" from "garbage".
var otherDtypes = []string{
	"BOOL", "U8", "I8", "F8_E5M2", "F8_E4M3", "F8_E8M0", "F4", "F6_E2M3", "F6_E3M2",
	"I16", "U16", "F16", "BF16", "I32", "U32", "I64", "U64", "C64",
}

// Encode writes tensors and the optional string metadata to w in the safetensors
// format: an 8-byte little-endian header length N, N bytes of JSON padded with
// spaces to a multiple of 8, then the tensors' little-endian bytes, back to back.
//
// The layout follows the reference implementation (huggingface/safetensors), so a
// file it writes is the file Encode writes for the same tensors: tensors are laid
// out by descending element size (F64 before F32), then by name in byte order; the
// JSON is compact, "__metadata__" comes first, and its keys are sorted (the
// reference's own order for them is a hash map's). Metadata is omitted when empty.
//
// Encode fails, before writing anything, on a nil tensor, a tensor named
// "__metadata__", a name or metadata string that is not valid UTF-8, or a header
// larger than MaxHeaderSize.
func Encode(w io.Writer, tensors map[string]*tensor.Tensor, meta map[string]string) error {
	entries := make([]encEntry, 0, len(tensors))
	for name, t := range tensors {
		if t == nil {
			return fmt.Errorf("safetensors: tensor %q is nil", name)
		}
		if name == metadataKey {
			return fmt.Errorf("safetensors: a tensor may not be named %q", metadataKey)
		}
		if !utf8.ValidString(name) {
			return fmt.Errorf("safetensors: tensor name %q is not valid UTF-8", name)
		}
		info := dtypeF32
		if t.DType() == tensor.Float64 {
			info = dtypeF64
		} else if t.DType() != tensor.Float32 {
			return fmt.Errorf("safetensors: tensor %q has unsupported dtype %v", name, t.DType())
		}
		shape := t.Shape()
		if n, ok := elements(shape); !ok || n != t.Size() {
			return fmt.Errorf("safetensors: tensor %q has shape %v but holds %d elements", name, shape, t.Size())
		}
		entries = append(entries, encEntry{name: name, t: t, info: info, shape: shape})
	}
	for k, v := range meta {
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return fmt.Errorf("safetensors: metadata %q: %q is not valid UTF-8", k, v)
		}
	}
	slices.SortFunc(entries, func(a, b encEntry) int {
		return cmp.Or(cmp.Compare(b.info.size, a.info.size), strings.Compare(a.name, b.name))
	})

	header := encodeHeader(entries, meta)
	if len(header) > MaxHeaderSize {
		return fmt.Errorf("safetensors: header is %d bytes, more than the %d-byte limit", len(header), MaxHeaderSize)
	}
	buf := make([]byte, max(lenSize+len(header), chunkSize))
	binary.LittleEndian.PutUint64(buf, uint64(len(header)))
	copy(buf[lenSize:], header)
	if _, err := w.Write(buf[:lenSize+len(header)]); err != nil {
		return fmt.Errorf("safetensors: %w", err)
	}
	buf = buf[:chunkSize]
	for _, e := range entries {
		if err := writeData(w, e.t, buf); err != nil {
			return fmt.Errorf("safetensors: writing %q: %w", e.name, err)
		}
	}
	return nil
}

type encEntry struct {
	name  string
	t     *tensor.Tensor
	info  dtypeInfo
	shape []int
}

// encodeHeader returns the padded JSON header for entries, in their order.
func encodeHeader(entries []encEntry, meta map[string]string) []byte {
	b := []byte{'{'}
	if len(meta) > 0 {
		b = appendJSONString(b, metadataKey)
		b = append(b, ":{"...)
		for i, k := range slices.Sorted(mapKeys(meta)) {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, k)
			b = append(b, ':')
			b = appendJSONString(b, meta[k])
		}
		b = append(b, '}')
	}
	var off uint64
	for i, e := range entries {
		if i > 0 || len(meta) > 0 {
			b = append(b, ',')
		}
		n := uint64(e.t.Size()) * uint64(e.info.size)
		b = appendJSONString(b, e.name)
		b = append(b, `:{"dtype":"`...)
		b = append(b, e.info.name...)
		b = append(b, `","shape":[`...)
		for j, d := range e.shape {
			if j > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, int64(d), 10)
		}
		b = append(b, `],"data_offsets":[`...)
		b = strconv.AppendUint(b, off, 10)
		b = append(b, ',')
		b = strconv.AppendUint(b, off+n, 10)
		b = append(b, "]}"...)
		off += n
	}
	b = append(b, '}')
	for len(b)%8 != 0 {
		b = append(b, ' ')
	}
	return b
}

func mapKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// appendJSONString appends s as a JSON string the way serde_json writes it: only
// '"', '\\' and control characters are escaped, with short escapes where JSON has
// them and lower-case \u00XX otherwise. s must be valid UTF-8.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\b':
			b = append(b, `\b`...)
		case '\f':
			b = append(b, `\f`...)
		case '\n':
			b = append(b, `\n`...)
		case '\r':
			b = append(b, `\r`...)
		case '\t':
			b = append(b, `\t`...)
		default:
			if c < 0x20 {
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			} else {
				b = append(b, c)
			}
		}
	}
	return append(b, '"')
}

// writeData writes t's elements little-endian, converting through buf.
func writeData(w io.Writer, t *tensor.Tensor, buf []byte) error {
	if t.DType() == tensor.Float32 {
		return writeLE(w, t.Data32(), buf, 4, func(b []byte, v float32) { binary.LittleEndian.PutUint32(b, math.Float32bits(v)) })
	}
	return writeLE(w, t.Data64(), buf, 8, func(b []byte, v float64) { binary.LittleEndian.PutUint64(b, math.Float64bits(v)) })
}

// writeLE writes data, size bytes an element put by put, through buf.
func writeLE[T float32 | float64](w io.Writer, data []T, buf []byte, size int, put func([]byte, T)) error {
	for len(data) > 0 {
		n := min(len(data), len(buf)/size)
		for i, v := range data[:n] {
			put(buf[size*i:], v)
		}
		if _, err := w.Write(buf[:size*n]); err != nil {
			return err
		}
		data = data[n:]
	}
	return nil
}

// Decode reads one safetensors file from r to its end and returns its tensors and
// its "__metadata__" (nil when the file has none). Only F32 and F64 tensors are
// supported. The tensors own fresh storage; values are kept bit for bit.
//
// Decode validates strictly and never panics on malformed input: the header length
// must be at most MaxHeaderSize and lie within the input; the header must be valid
// UTF-8 holding one JSON object (then only whitespace), without duplicate keys;
// each tensor entry must have exactly "dtype", "shape" and "data_offsets", with a
// supported dtype, non-negative integer dimensions and two offsets; the offsets,
// taken in order, must tile the data section from 0 without gap or overlap, each
// spanning exactly shape×element-size bytes; and the input must end exactly where
// the last tensor does. Errors name the tensor and what is wrong.
//
// When r is a *bytes.Reader, *bytes.Buffer, *strings.Reader or a regular *os.File,
// the offsets are checked against its size before any tensor is allocated;
// otherwise memory grows only with the bytes actually read, so a header that
// promises more data than arrives cannot make Decode allocate it.
func Decode(r io.Reader) (map[string]*tensor.Tensor, map[string]string, error) {
	ts, meta, err := decode(r, readerSize(r), false)
	if err != nil {
		return nil, nil, fmt.Errorf("safetensors: %w", err)
	}
	return ts, meta, nil
}

// DecodeWide is Decode for files written elsewhere (Hugging Face's hub): it
// also reads F16 and BF16 tensors, widened to float32 tensors exactly, as
// every half is a float32. Checkpoints hold F32 and F64 only, so Decode
// refuses halves.
func DecodeWide(r io.Reader) (map[string]*tensor.Tensor, map[string]string, error) {
	ts, meta, err := decode(r, readerSize(r), true)
	if err != nil {
		return nil, nil, fmt.Errorf("safetensors: %w", err)
	}
	return ts, meta, nil
}

// DecodeBytes decodes a whole safetensors file held in data, like Decode.
func DecodeBytes(data []byte) (map[string]*tensor.Tensor, map[string]string, error) {
	return Decode(bytes.NewReader(data))
}

// readerSize returns the number of bytes left in r, or -1 if it cannot tell.
func readerSize(r io.Reader) int64 {
	switch v := r.(type) {
	case *bytes.Reader:
		return int64(v.Len())
	case *bytes.Buffer:
		return int64(v.Len())
	case *strings.Reader:
		return int64(v.Len())
	case *os.File:
		st, err := v.Stat()
		if err != nil || !st.Mode().IsRegular() {
			return -1
		}
		pos, err := v.Seek(0, io.SeekCurrent)
		if err != nil || pos > st.Size() {
			return -1
		}
		return st.Size() - pos
	}
	return -1
}

// headerEntry is one tensor as the header describes it.
type headerEntry struct {
	name       string
	info       dtypeInfo
	shape      []int
	n          int // elements
	begin, end uint64
}

// decode reads a safetensors file from r. size is the number of bytes r holds, or
// -1 if unknown. Errors carry no package prefix so that callers can add their own.
func decode(r io.Reader, size int64, wide bool) (map[string]*tensor.Tensor, map[string]string, error) {
	var lenBuf [lenSize]byte
	if size >= 0 && size < lenSize {
		return nil, nil, fmt.Errorf("file is %d bytes, too short for the %d-byte header length", size, lenSize)
	}
	if n, err := io.ReadFull(r, lenBuf[:]); err != nil {
		return nil, nil, readErr(err, "file ends after %d bytes, inside the %d-byte header length", n, lenSize)
	}
	hlen := binary.LittleEndian.Uint64(lenBuf[:])
	switch {
	case hlen == 0:
		return nil, nil, errors.New("header length is 0; the header must hold a JSON object")
	case hlen > MaxHeaderSize:
		return nil, nil, fmt.Errorf("header length %d exceeds the %d-byte limit", hlen, MaxHeaderSize)
	case size >= 0 && hlen > uint64(size-lenSize):
		return nil, nil, fmt.Errorf("header length %d runs past the end of the file (%d bytes)", hlen, size)
	}
	var header []byte
	if size >= 0 {
		header = make([]byte, hlen)
		if n, err := io.ReadFull(r, header); err != nil {
			return nil, nil, readErr(err, "file ends after %d of the %d header bytes", n, hlen)
		}
	} else {
		var err error
		header, err = io.ReadAll(io.LimitReader(r, int64(hlen)))
		if err != nil {
			return nil, nil, fmt.Errorf("reading the header: %w", err)
		}
		if uint64(len(header)) != hlen {
			return nil, nil, fmt.Errorf("file ends after %d of the %d header bytes", len(header), hlen)
		}
	}

	entries, meta, err := parseHeader(header, wide)
	if err != nil {
		return nil, nil, err
	}
	dataLen, err := checkOffsets(entries)
	if err != nil {
		return nil, nil, err
	}
	if size >= 0 {
		have := uint64(size) - lenSize - hlen
		switch {
		case have < dataLen:
			return nil, nil, fmt.Errorf("data section is %d bytes, but the header describes %d (file truncated?)", have, dataLen)
		case have > dataLen:
			return nil, nil, fmt.Errorf("%d trailing bytes after the %d-byte data section", have-dataLen, dataLen)
		}
	}

	tensors := make(map[string]*tensor.Tensor, len(entries))
	buf := make([]byte, chunkSize)
	for _, e := range entries {
		t, err := readTensor(r, e, size >= 0, buf)
		if err != nil {
			return nil, nil, err
		}
		tensors[e.name] = t
	}
	if n, err := io.ReadFull(r, buf[:1]); n > 0 {
		return nil, nil, fmt.Errorf("trailing bytes after the %d-byte data section", dataLen)
	} else if err != io.EOF {
		return nil, nil, fmt.Errorf("reading past the data section: %w", err)
	}
	return tensors, meta, nil
}

// readErr turns a short read into the message given, and wraps any other error.
func readErr(err error, format string, args ...any) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf(format, args...)
	}
	return fmt.Errorf("read: %w", err)
}

// readTensor reads e's bytes from r. With exact set, r is known to hold them and
// the storage is allocated up front; otherwise it grows as data arrives.
func readTensor(r io.Reader, e headerEntry, exact bool, buf []byte) (*tensor.Tensor, error) {
	total := e.end - e.begin
	var done uint64
	// next reads e's next chunk into buf and returns its length, 0 at the end
	next := func() (int, error) {
		k := int(min(uint64(len(buf)), total-done))
		if n, err := io.ReadFull(r, buf[:k]); err != nil {
			return 0, readErr(err, "data of %q ends after %d of its %d bytes (file truncated?)", e.name, done+uint64(n), total)
		}
		done += uint64(k)
		return k, nil
	}
	initial := e.n
	if !exact {
		initial = min(e.n, chunkSize/e.info.size)
	}
	switch e.info {
	case dtypeF16:
		data, err := readLE(next, buf, initial, 2, func(b []byte) float32 { return halfToFloat32(binary.LittleEndian.Uint16(b)) })
		if err != nil {
			return nil, err
		}
		return tensor.Wrap32(data, e.shape...), nil
	case dtypeBF16:
		data, err := readLE(next, buf, initial, 2, func(b []byte) float32 { return math.Float32frombits(uint32(binary.LittleEndian.Uint16(b)) << 16) })
		if err != nil {
			return nil, err
		}
		return tensor.Wrap32(data, e.shape...), nil
	}
	if e.info.dt == tensor.Float32 {
		data, err := readLE(next, buf, initial, 4, func(b []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b)) })
		if err != nil {
			return nil, err
		}
		return tensor.Wrap32(data, e.shape...), nil
	}
	data, err := readLE(next, buf, initial, 8, func(b []byte) float64 { return math.Float64frombits(binary.LittleEndian.Uint64(b)) })
	if err != nil {
		return nil, err
	}
	return tensor.Wrap64(data, e.shape...), nil
}

// halfToFloat32 widens an IEEE 754 half (binary16) exactly: its sign,
// exponent and fraction moved into float32's, subnormals normalized, and
// infinities and NaNs (their payload too) kept.
func halfToFloat32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // infinity or NaN
		return math.Float32frombits(sign | 0xff<<23 | frac<<13)
	case exp == 0 && frac == 0: // ±0
		return math.Float32frombits(sign)
	case exp == 0: // subnormal: frac·2⁻²⁴, normalized
		e := uint32(127 - 15 + 1)
		for frac&0x400 == 0 {
			frac <<= 1
			e--
		}
		return math.Float32frombits(sign | e<<23 | (frac&0x3ff)<<13)
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | frac<<13)
}

// readLE reads elements chunk by chunk (next, into buf), size bytes an
// element read by get, into a slice of capacity initial.
func readLE[T float32 | float64](next func() (int, error), buf []byte, initial, size int, get func([]byte) T) ([]T, error) {
	data := make([]T, 0, initial)
	for {
		k, err := next()
		if err != nil || k == 0 {
			return data, err
		}
		for i := 0; i < k; i += size {
			data = append(data, get(buf[i:]))
		}
	}
}

// parseHeader parses and checks the JSON header, apart from the offsets' layout.
// The entries come back sorted by offset.
func parseHeader(header []byte, wide bool) ([]headerEntry, map[string]string, error) {
	if !utf8.Valid(header) {
		return nil, nil, errors.New("header is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(header))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return nil, nil, fmt.Errorf("header is not valid JSON: %v", err)
	}
	rest := header[dec.InputOffset():]
	if i := bytes.IndexFunc(rest, func(r rune) bool { return !isJSONSpace(r) }); i >= 0 {
		return nil, nil, fmt.Errorf("header has unexpected bytes after its JSON object, at offset %d", int(dec.InputOffset())+i)
	}
	var (
		entries []headerEntry
		meta    map[string]string
	)
	err := walkObject(raw, "header", func(key string, val json.RawMessage) error {
		if key == metadataKey {
			m, err := parseMetadata(val)
			meta = m
			return err
		}
		e, err := parseEntry(key, val, wide)
		entries = append(entries, e)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	slices.SortStableFunc(entries, func(a, b headerEntry) int {
		return cmp.Or(cmp.Compare(a.begin, b.begin), cmp.Compare(a.end, b.end))
	})
	return entries, meta, nil
}

func isJSONSpace(r rune) bool { return r == ' ' || r == '\t' || r == '\n' || r == '\r' }

// walkObject calls fn for each member of the JSON object raw, in order, and fails
// on anything but an object or on a key seen twice. what names raw in errors.
func walkObject(raw json.RawMessage, what string, fn func(key string, val json.RawMessage) error) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return fmt.Errorf("%s is not a JSON object", what)
	}
	seen := make(map[string]bool)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("%s: %v", what, err)
		}
		key, _ := tok.(string)
		if seen[key] {
			return fmt.Errorf("%s has the key %q twice", what, key)
		}
		seen[key] = true
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return fmt.Errorf("%s: %v", what, err)
		}
		if err := fn(key, val); err != nil {
			return err
		}
	}
	return nil
}

func parseMetadata(raw json.RawMessage) (map[string]string, error) {
	meta := make(map[string]string)
	err := walkObject(raw, `"__metadata__"`, func(key string, val json.RawMessage) error {
		var s string
		if len(val) == 0 || val[0] != '"' || json.Unmarshal(val, &s) != nil {
			return fmt.Errorf(`"__metadata__" value of %q is %s, not a string`, key, abbrev(val))
		}
		meta[key] = s
		return nil
	})
	return meta, err
}

func parseEntry(name string, raw json.RawMessage, wide bool) (headerEntry, error) {
	e := headerEntry{name: name}
	what := fmt.Sprintf("tensor %q", name)
	var dtype string
	var shape, offsets []uint64
	var haveShape, haveOffsets bool
	err := walkObject(raw, what, func(key string, val json.RawMessage) error {
		var err error
		switch key {
		case "dtype":
			if len(val) == 0 || val[0] != '"' || json.Unmarshal(val, &dtype) != nil {
				return fmt.Errorf("%s: dtype is %s, not a string", what, abbrev(val))
			}
		case "shape":
			shape, err = parseUints(val)
			if err != nil {
				return fmt.Errorf("%s: shape %v", what, err)
			}
			haveShape = true
		case "data_offsets":
			offsets, err = parseUints(val)
			if err != nil {
				return fmt.Errorf("%s: data_offsets %v", what, err)
			}
			if len(offsets) != 2 {
				return fmt.Errorf("%s: data_offsets has %d numbers, want 2 ([begin, end])", what, len(offsets))
			}
			haveOffsets = true
		default:
			return fmt.Errorf("%s: unknown field %q", what, key)
		}
		return nil
	})
	if err != nil {
		return e, err
	}
	switch {
	case dtype == "":
		return e, fmt.Errorf(`%s: missing "dtype"`, what)
	case !haveShape:
		return e, fmt.Errorf(`%s: missing "shape"`, what)
	case !haveOffsets:
		return e, fmt.Errorf(`%s: missing "data_offsets"`, what)
	}
	switch dtype {
	case dtypeF32.name:
		e.info = dtypeF32
	case dtypeF64.name:
		e.info = dtypeF64
	case dtypeF16.name, dtypeBF16.name:
		if !wide {
			return e, fmt.Errorf("%s: dtype %q is not supported (want F32 or F64)", what, dtype)
		}
		e.info = dtypeF16
		if dtype == dtypeBF16.name {
			e.info = dtypeBF16
		}
	default:
		if slices.Contains(otherDtypes, dtype) {
			return e, fmt.Errorf("%s: dtype %q is not supported (want F32 or F64)", what, dtype)
		}
		return e, fmt.Errorf("%s: unknown dtype %q", what, dtype)
	}
	e.shape = make([]int, len(shape))
	for i, d := range shape {
		if d > math.MaxInt {
			return e, fmt.Errorf("%s: shape %v is too large", what, shape)
		}
		e.shape[i] = int(d)
	}
	n, ok := elements(e.shape)
	if !ok || uint64(n) > math.MaxInt64/uint64(e.info.size) {
		return e, fmt.Errorf("%s: shape %v is too large", what, shape)
	}
	e.n = n
	e.begin, e.end = offsets[0], offsets[1]
	return e, nil
}

// parseUints parses a JSON array of non-negative integers written as plain digits.
func parseUints(raw json.RawMessage) ([]uint64, error) {
	var elems []json.RawMessage
	if len(raw) == 0 || raw[0] != '[' || json.Unmarshal(raw, &elems) != nil {
		return nil, fmt.Errorf("is %s, not an array", abbrev(raw))
	}
	out := make([]uint64, len(elems))
	for i, el := range elems {
		v, err := strconv.ParseUint(string(bytes.TrimSpace(el)), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %s is not a non-negative integer", abbrev(raw), abbrev(el))
		}
		out[i] = v
	}
	return out, nil
}

// elements returns the number of elements of shape; ok is false on overflow.
func elements(shape []int) (n int, ok bool) {
	n = 1
	for _, d := range shape {
		if d < 0 {
			return 0, false
		}
		if d != 0 && n > math.MaxInt/d {
			return 0, false
		}
		n *= d
	}
	return n, true
}

// checkOffsets checks that the entries, sorted by offset, tile [0, end) exactly,
// each with the size its shape and dtype need, and returns end.
func checkOffsets(entries []headerEntry) (uint64, error) {
	var pos uint64
	prev := ""
	for _, e := range entries {
		want := uint64(e.n) * uint64(e.info.size)
		switch {
		case e.end < e.begin:
			return 0, fmt.Errorf("data offsets of %q [%d, %d] end before they begin", e.name, e.begin, e.end)
		case e.begin < pos:
			return 0, fmt.Errorf("data offsets of %q [%d, %d] overlap tensor %q, which ends at %d", e.name, e.begin, e.end, prev, pos)
		case e.begin > pos && prev == "":
			return 0, fmt.Errorf("data offsets of %q [%d, %d] leave a gap: the first tensor must begin at 0", e.name, e.begin, e.end)
		case e.begin > pos:
			return 0, fmt.Errorf("data offsets of %q [%d, %d] leave a gap after tensor %q, which ends at %d", e.name, e.begin, e.end, prev, pos)
		case e.end-e.begin != want:
			return 0, fmt.Errorf("data offsets of %q [%d, %d] span %d bytes, but %s shape %v needs %d", e.name, e.begin, e.end, e.end-e.begin, e.info.name, e.shape, want)
		}
		pos, prev = e.end, e.name
	}
	return pos, nil
}

// abbrev quotes a JSON fragment for an error message, cut short if long.
func abbrev(b []byte) string {
	const limit = 40
	if len(b) > limit {
		return string(b[:limit]) + "..."
	}
	return string(b)
}
