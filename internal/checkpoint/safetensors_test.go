package checkpoint

import (
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/pipetrain/pipetrain/tensor"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// goldenA is the file for one F32 tensor "a" of shape [2] holding [1, 2], written
// out byte by byte from the format's description, not by Encode.
func goldenA() []byte {
	b := []byte{0x38, 0, 0, 0, 0, 0, 0, 0}                                     // N = 56, a little-endian uint64
	b = append(b, `{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`...) // 54 bytes
	b = append(b, ' ', ' ')                                                    // padding to 56, a multiple of 8
	b = append(b, 0x00, 0x00, 0x80, 0x3f)                                      // float32 1 = 0x3f800000, little-endian
	b = append(b, 0x00, 0x00, 0x00, 0x40)                                      // float32 2 = 0x40000000
	return b
}

func TestGoldenHandWritten(t *testing.T) {
	golden := goldenA()
	if len(golden) != 8+56+8 {
		t.Fatalf("hand-written file is %d bytes, want 72", len(golden))
	}
	ts, meta, err := DecodeBytes(golden)
	if err != nil {
		t.Fatalf("DecodeBytes(golden): %v", err)
	}
	if meta != nil {
		t.Errorf("metadata = %v, want nil", meta)
	}
	a := ts["a"]
	if len(ts) != 1 || a == nil {
		t.Fatalf("tensors = %v, want just \"a\"", ts)
	}
	if a.DType() != tensor.Float32 || !slices.Equal(a.Shape(), []int{2}) || !slices.Equal(a.Data32(), []float32{1, 2}) {
		t.Errorf("a = %v, want float32[2] [1 2]", a)
	}
	var buf bytes.Buffer
	if err := Encode(&buf, ts, nil); err != nil {
		t.Fatalf("Encode: %v", err)
	}
	if !bytes.Equal(buf.Bytes(), golden) {
		t.Errorf("Encode wrote\n%q\nwant\n%q", buf.Bytes(), golden)
	}
}

// fileOf builds a file from a header and data, padding nothing.
func fileOf(header string, data ...byte) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	return append(append(b, header...), data...)
}

func f32le(vs ...float32) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}

// TestReferenceVectors checks files whose bytes the reference implementation's
// own tests expect (huggingface/safetensors, safetensors/src/tensor.rs:
// test_serialization, test_empty, test_serialization_forced_alignement).
func TestReferenceVectors(t *testing.T) {
	seq := []float32{0, 1, 2, 3, 4, 5}
	tests := []struct {
		name    string
		tensors map[string]*tensor.Tensor
		meta    map[string]string
		file    []byte
	}{
		{"unpadded", map[string]*tensor.Tensor{"attn.0": tensor.FromFloat32s(seq, 1, 2, 3)}, nil,
			fileOf(`{"attn.0":{"dtype":"F32","shape":[1,2,3],"data_offsets":[0,24]}}`, f32le(seq...)...)},
		{"padded", map[string]*tensor.Tensor{"attn0": tensor.FromFloat32s(seq, 1, 1, 2, 3)}, nil,
			fileOf(`{"attn0":{"dtype":"F32","shape":[1,1,2,3],"data_offsets":[0,24]}}       `, f32le(seq...)...)},
		{"empty", map[string]*tensor.Tensor{}, nil, fileOf(`{}      `)},
		{"empty with metadata", nil, map[string]string{"framework": "pt"},
			fileOf(`{"__metadata__":{"framework":"pt"}}     `)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := Encode(&buf, tt.tensors, tt.meta); err != nil {
				t.Fatalf("Encode: %v", err)
			}
			if !bytes.Equal(buf.Bytes(), tt.file) {
				t.Errorf("Encode wrote\n%q\nwant\n%q", buf.Bytes(), tt.file)
			}
			ts, meta, err := DecodeBytes(tt.file)
			if err != nil {
				t.Fatalf("DecodeBytes: %v", err)
			}
			if err := sameTensors(ts, tt.tensors); err != nil {
				t.Error(err)
			}
			if !mapsEqual(meta, tt.meta) {
				t.Errorf("metadata = %v, want %v", meta, tt.meta)
			}
		})
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// sameTensors reports how got differs from want: names, dtypes, shapes, and
// element bits.
func sameTensors(got, want map[string]*tensor.Tensor) error {
	if len(got) != len(want) {
		return fmt.Errorf("got %d tensors %v, want %d", len(got), slices.Sorted(keys(got)), len(want))
	}
	for name, w := range want {
		g, ok := got[name]
		if !ok {
			return fmt.Errorf("tensor %q missing", name)
		}
		if err := sameTensor(g, w); err != nil {
			return fmt.Errorf("tensor %q: %v", name, err)
		}
	}
	return nil
}

func sameTensor(g, w *tensor.Tensor) error {
	if g.DType() != w.DType() || !slices.Equal(g.Shape(), w.Shape()) {
		return fmt.Errorf("got %v%v, want %v%v", g.DType(), g.Shape(), w.DType(), w.Shape())
	}
	if g.DType() == tensor.Float32 {
		gd, wd := g.Data32(), w.Data32()
		for i := range wd {
			if math.Float32bits(gd[i]) != math.Float32bits(wd[i]) {
				return fmt.Errorf("element %d is %#08x, want %#08x", i, math.Float32bits(gd[i]), math.Float32bits(wd[i]))
			}
		}
		return nil
	}
	gd, wd := g.Data64(), w.Data64()
	for i := range wd {
		if math.Float64bits(gd[i]) != math.Float64bits(wd[i]) {
			return fmt.Errorf("element %d is %#016x, want %#016x", i, math.Float64bits(gd[i]), math.Float64bits(wd[i]))
		}
	}
	return nil
}

func keys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// oddTensors returns tensors of both dtypes holding NaNs with payloads,
// signalling NaNs, -0, infinities and subnormals, plus a 0-D and empty tensors.
func oddTensors() map[string]*tensor.Tensor {
	f32 := []float32{
		math.Float32frombits(0x7fc00000), // quiet NaN
		math.Float32frombits(0x7fa00001), // signalling NaN with a payload
		math.Float32frombits(0xffc12345), // negative NaN with a payload
		math.Float32frombits(0x80000000), // -0
		math.Float32frombits(0x00000001), // smallest subnormal
		float32(math.Inf(1)), float32(math.Inf(-1)), math.MaxFloat32, -1.5,
	}
	f64 := []float64{
		math.Float64frombits(0x7ff0000000000001), // signalling NaN
		math.Float64frombits(0xfff8dead0000beef), // negative quiet NaN with a payload
		math.Copysign(0, -1),
		math.Float64frombits(1), math.Inf(1), math.Inf(-1), math.MaxFloat64, 0.1,
	}
	rng := rand.New(rand.NewPCG(1, 2))
	random32 := make([]float32, 2*3*4)
	for i := range random32 {
		random32[i] = math.Float32frombits(rng.Uint32()) // every bit pattern, NaNs included
	}
	random64 := make([]float64, 5*7)
	for i := range random64 {
		random64[i] = math.Float64frombits(rng.Uint64())
	}
	return map[string]*tensor.Tensor{
		"odd32":         tensor.Wrap32(f32, 9),
		"odd64":         tensor.Wrap64(f64, 2, 4),
		"random32":      tensor.Wrap32(random32, 2, 3, 4),
		"random64":      tensor.Wrap64(random64, 5, 7),
		"scalar32":      tensor.Wrap32([]float32{math.Float32frombits(0x7f800001)}),
		"scalar64":      tensor.Wrap64([]float64{math.Copysign(0, -1)}),
		"empty32":       tensor.Zeros(tensor.Float32, 0),
		"empty64":       tensor.Zeros(tensor.Float64, 3, 0, 2),
		"layers.0.w":    tensor.Full(tensor.Float32, 0.5, 3, 2),
		"quote\"\\\n":   tensor.Full(tensor.Float64, 2, 1),
		"ünïcode\u2028": tensor.Full(tensor.Float32, 3, 1, 1),
	}
}

func TestRoundTripBitExact(t *testing.T) {
	want := oddTensors()
	meta := map[string]string{"format": "pt", "": "empty key", "ctl\x01\t": "<&>\"\\ é"}
	var buf bytes.Buffer
	if err := Encode(&buf, want, meta); err != nil {
		t.Fatalf("Encode: %v", err)
	}
	file := buf.Bytes()
	readers := map[string]func() io.Reader{
		"bytes.Reader":       func() io.Reader { return bytes.NewReader(file) },
		"unsized reader":     func() io.Reader { return struct{ io.Reader }{bytes.NewReader(file)} },
		"one byte at a time": func() io.Reader { return iotest.OneByteReader(bytes.NewReader(file)) },
		"data then error":    func() io.Reader { return iotest.DataErrReader(bytes.NewReader(file)) },
	}
	for name, r := range readers {
		t.Run(name, func(t *testing.T) {
			got, gotMeta, err := Decode(r())
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if err := sameTensors(got, want); err != nil {
				t.Error(err)
			}
			if !mapsEqual(gotMeta, meta) {
				t.Errorf("metadata = %q, want %q", gotMeta, meta)
			}
		})
	}
	// Decoding then encoding gives back the same bytes.
	got, gotMeta, err := DecodeBytes(file)
	if err != nil {
		t.Fatal(err)
	}
	var again bytes.Buffer
	if err := Encode(&again, got, gotMeta); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again.Bytes(), file) {
		t.Errorf("re-encoding changed the file")
	}
}

// TestEncodeLayout checks the header: F64 before F32, then names in byte order,
// metadata first with sorted keys, serde_json's escaping, and 8-byte padding.
func TestEncodeLayout(t *testing.T) {
	ts := map[string]*tensor.Tensor{
		"b":     tensor.Zeros(tensor.Float32, 1),
		"a":     tensor.Zeros(tensor.Float32, 2),
		"z":     tensor.Zeros(tensor.Float64, 1),
		"B":     tensor.Zeros(tensor.Float32),
		"<\x1f": tensor.Zeros(tensor.Float64, 0),
	}
	var buf bytes.Buffer
	if err := Encode(&buf, ts, map[string]string{"y": "2", "x": "\u2028\b\f"}); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	n := binary.LittleEndian.Uint64(b)
	header := string(b[8 : 8+n])
	want := `{"__metadata__":{"x":"` + "\u2028" + `\b\f","y":"2"},` +
		`"<\u001f":{"dtype":"F64","shape":[0],"data_offsets":[0,0]},` +
		`"z":{"dtype":"F64","shape":[1],"data_offsets":[0,8]},` +
		`"B":{"dtype":"F32","shape":[],"data_offsets":[8,12]},` +
		`"a":{"dtype":"F32","shape":[2],"data_offsets":[12,20]},` +
		`"b":{"dtype":"F32","shape":[1],"data_offsets":[20,24]}}`
	if strings.TrimRight(header, " ") != want {
		t.Errorf("header\n%s\nwant\n%s", header, want)
	}
	if n%8 != 0 || len(header)-len(want) >= 8 {
		t.Errorf("header length %d: want the JSON (%d bytes) padded to a multiple of 8", n, len(want))
	}
	if got := uint64(len(b)) - 8 - n; got != 24 {
		t.Errorf("data section is %d bytes, want 24", got)
	}
}

// TestGoldenFile guards the byte layout of a file with every feature against
// accidental change. Run go test -update to rewrite testdata/odd.safetensors
// after an intended change.
func TestGoldenFile(t *testing.T) {
	var buf bytes.Buffer
	if err := Encode(&buf, oddTensors(), map[string]string{"producer": "pipetrain"}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "odd.safetensors")
	if *update {
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	golden, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(buf.Bytes(), golden) {
		t.Errorf("Encode no longer writes %s (%d bytes, want %d); run go test -update if the change is intended",
			path, buf.Len(), len(golden))
	}
	ts, _, err := DecodeBytes(golden)
	if err != nil {
		t.Fatal(err)
	}
	if err := sameTensors(ts, oddTensors()); err != nil {
		t.Error(err)
	}
}

func TestEncodeErrors(t *testing.T) {
	var zero tensor.Tensor // shape [] but no element
	tests := []struct {
		name    string
		tensors map[string]*tensor.Tensor
		meta    map[string]string
		want    string
	}{
		{"nil tensor", map[string]*tensor.Tensor{"w": nil}, nil, `tensor "w" is nil`},
		{"reserved name", map[string]*tensor.Tensor{"__metadata__": tensor.Zeros(tensor.Float32)}, nil, `may not be named "__metadata__"`},
		{"invalid UTF-8 name", map[string]*tensor.Tensor{"\xff": tensor.Zeros(tensor.Float32)}, nil, "not valid UTF-8"},
		{"invalid UTF-8 metadata", nil, map[string]string{"k": "\xc3"}, "not valid UTF-8"},
		{"zero Tensor value", map[string]*tensor.Tensor{"z": &zero}, nil, `tensor "z" has shape [] but holds 0 elements`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := Encode(&buf, tt.tensors, tt.meta)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Encode: err = %v, want it to contain %q", err, tt.want)
			}
			if buf.Len() != 0 {
				t.Errorf("Encode wrote %d bytes before failing", buf.Len())
			}
		})
	}
}

type failWriter struct{ left int }

func (w *failWriter) Write(p []byte) (int, error) {
	if len(p) > w.left {
		n := w.left
		w.left = 0
		return n, fmt.Errorf("disk full")
	}
	w.left -= len(p)
	return len(p), nil
}

func TestEncodeWriteError(t *testing.T) {
	ts := map[string]*tensor.Tensor{"w": tensor.Zeros(tensor.Float64, 100000)}
	for _, left := range []int{0, 100, 500000} {
		err := Encode(&failWriter{left}, ts, nil)
		if err == nil || !strings.Contains(err.Error(), "disk full") {
			t.Errorf("Encode with a writer failing after %d bytes: err = %v, want disk full", left, err)
		}
	}
}

const entryA = `"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}`

var decodeErrorTests = []struct {
	name string
	file []byte
	want string // in the error, whether Decode knows the input's size or not
	// wantUnsized replaces want when Decode cannot know the size up front.
	wantUnsized string
}{
	{"empty input", nil, "too short for the 8-byte header length", "inside the 8-byte header length"},
	{"short length", []byte{1, 0, 0}, "too short", "file ends after 3 bytes"},
	{"zero header length", fileOf(""), "header length is 0", ""},
	{"header over 100 MB", binary.LittleEndian.AppendUint64(nil, 100_000_001), "exceeds the 100000000-byte limit", ""},
	{"header length 2^64-1", binary.LittleEndian.AppendUint64(nil, math.MaxUint64), "exceeds", ""},
	{"header past the end", append(binary.LittleEndian.AppendUint64(nil, 64), "{}"...), "runs past the end of the file (10 bytes)", "file ends after 2 of the 64 header bytes"},
	{"not UTF-8", fileOf("{\"\xff\":1}"), "not valid UTF-8", ""},
	{"not JSON", fileOf("hello"), "header is not valid JSON", ""},
	{"truncated JSON", fileOf(`{"a":{"dtype"`), "header is not valid JSON", ""},
	{"array", fileOf(`[]`), "header is not a JSON object", ""},
	{"null", fileOf(`null`), "header is not a JSON object", ""},
	{"junk after object", fileOf(`{} x`), "unexpected bytes after its JSON object, at offset 3", ""},
	{"second object", fileOf(`{}{}`), "unexpected bytes after its JSON object", ""},
	{"duplicate tensor", fileOf(`{`+entryA+`,`+entryA+`}`, f32le(1, 2)...), `header has the key "a" twice`, ""},
	{"duplicate field", fileOf(`{"a":{"dtype":"F32","dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, f32le(1, 2)...), `tensor "a" has the key "dtype" twice`, ""},
	{"entry not an object", fileOf(`{"a":[1]}`), `tensor "a" is not a JSON object`, ""},
	{"unsupported dtype", fileOf(`{"a":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]}}`, 0, 0, 0, 0), `tensor "a": dtype "BF16" is not supported (want F32 or F64)`, ""},
	{"unknown dtype", fileOf(`{"a":{"dtype":"F31","shape":[2],"data_offsets":[0,8]}}`), `tensor "a": unknown dtype "F31"`, ""},
	{"dtype not a string", fileOf(`{"a":{"dtype":32,"shape":[2],"data_offsets":[0,8]}}`), `tensor "a": dtype is 32, not a string`, ""},
	{"dtype null", fileOf(`{"a":{"dtype":null,"shape":[2],"data_offsets":[0,8]}}`), `dtype is null, not a string`, ""},
	{"missing dtype", fileOf(`{"a":{"shape":[2],"data_offsets":[0,8]}}`), `tensor "a": missing "dtype"`, ""},
	{"missing shape", fileOf(`{"a":{"dtype":"F32","data_offsets":[0,8]}}`), `tensor "a": missing "shape"`, ""},
	{"missing offsets", fileOf(`{"a":{"dtype":"F32","shape":[2]}}`), `tensor "a": missing "data_offsets"`, ""},
	{"unknown field", fileOf(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"strides":[1]}}`), `tensor "a": unknown field "strides"`, ""},
	{"negative dim", fileOf(`{"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}}`), `tensor "a": shape [-2]: -2 is not a non-negative integer`, ""},
	{"fractional dim", fileOf(`{"a":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]}}`), `2.0 is not a non-negative integer`, ""},
	{"exponent dim", fileOf(`{"a":{"dtype":"F32","shape":[2e0],"data_offsets":[0,8]}}`), `2e0 is not a non-negative integer`, ""},
	{"null dim", fileOf(`{"a":{"dtype":"F32","shape":[null],"data_offsets":[0,8]}}`), `null is not a non-negative integer`, ""},
	{"string dim", fileOf(`{"a":{"dtype":"F32","shape":["2"],"data_offsets":[0,8]}}`), `"2" is not a non-negative integer`, ""},
	{"shape not an array", fileOf(`{"a":{"dtype":"F32","shape":2,"data_offsets":[0,8]}}`), `tensor "a": shape is 2, not an array`, ""},
	{"shape null", fileOf(`{"a":{"dtype":"F32","shape":null,"data_offsets":[0,8]}}`), `tensor "a": shape is null, not an array`, ""},
	{"huge dim", fileOf(`{"a":{"dtype":"F32","shape":[18446744073709551616],"data_offsets":[0,8]}}`), `is not a non-negative integer`, ""},
	{"shape overflows", fileOf(`{"a":{"dtype":"F64","shape":[4294967296,4294967296],"data_offsets":[0,8]}}`), `tensor "a": shape [4294967296 4294967296] is too large`, ""},
	{"bytes overflow", fileOf(`{"a":{"dtype":"F64","shape":[2305843009213693952],"data_offsets":[0,8]}}`), `is too large`, ""},
	{"one offset", fileOf(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[8]}}`), `data_offsets has 1 numbers, want 2`, ""},
	{"three offsets", fileOf(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4,8]}}`), `data_offsets has 3 numbers, want 2`, ""},
	{"negative offset", fileOf(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[-8,0]}}`), `tensor "a": data_offsets [-8,0]: -8 is not`, ""},
	{"end before begin", fileOf(`{"a":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}}`), `data offsets of "a" [8, 0] end before they begin`, ""},
	{"gap at start", fileOf(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}`, make([]byte, 12)...), `data offsets of "a" [4, 12] leave a gap: the first tensor must begin at 0`, ""},
	{"gap between", fileOf(`{`+entryA+`,"b":{"dtype":"F32","shape":[1],"data_offsets":[12,16]}}`, make([]byte, 16)...), `data offsets of "b" [12, 16] leave a gap after tensor "a", which ends at 8`, ""},
	{"overlap", fileOf(`{`+entryA+`,"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, make([]byte, 8)...), `overlap tensor`, ""},
	{"size mismatch", fileOf(`{"a":{"dtype":"F64","shape":[2],"data_offsets":[0,8]}}`, make([]byte, 8)...), `data offsets of "a" [0, 8] span 8 bytes, but F64 shape [2] needs 16`, ""},
	{"metadata not an object", fileOf(`{"__metadata__":["x"]}`), `"__metadata__" is not a JSON object`, ""},
	{"metadata null", fileOf(`{"__metadata__":null}`), `"__metadata__" is not a JSON object`, ""},
	{"metadata number", fileOf(`{"__metadata__":{"epoch":3}}`), `"__metadata__" value of "epoch" is 3, not a string`, ""},
	{"data truncated", fileOf(`{`+entryA+`}`, f32le(1)...), `data section is 4 bytes, but the header describes 8 (file truncated?)`, `data of "a" ends after 4 of its 8 bytes (file truncated?)`},
	{"no data", fileOf(`{` + entryA + `}`), `data section is 0 bytes, but the header describes 8`, `data of "a" ends after 0 of its 8 bytes`},
	{"trailing bytes", fileOf(`{`+entryA+`}`, f32le(1, 2, 3)...), `4 trailing bytes after the 8-byte data section`, `trailing bytes after the 8-byte data section`},
	{"trailing byte, no tensors", fileOf(`{}`, 0), `1 trailing bytes after the 0-byte data section`, `trailing bytes after the 0-byte data section`},
}

func TestDecodeErrors(t *testing.T) {
	for _, tt := range decodeErrorTests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := DecodeBytes(tt.file)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "safetensors: ") {
				t.Errorf("DecodeBytes(%q):\nerr = %v\nwant safetensors: ...%s...", tt.file, err, tt.want)
			}
			want := tt.want
			if tt.wantUnsized != "" {
				want = tt.wantUnsized
			}
			_, _, err = Decode(struct{ io.Reader }{bytes.NewReader(tt.file)})
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("Decode(unsized %q):\nerr = %v\nwant ...%s...", tt.file, err, want)
			}
		})
	}
}

// TestDecodeAccepts checks files that are valid though Encode would not write
// them so.
func TestDecodeAccepts(t *testing.T) {
	tests := []struct {
		name string
		file []byte
		want map[string]*tensor.Tensor
	}{
		{"whitespace around the JSON", fileOf(" \n{ \"a\" : {\"shape\":[ 2 ],\"data_offsets\":[0,8],\"dtype\":\"F32\"} }\t\r\n ", f32le(1, 2)...),
			map[string]*tensor.Tensor{"a": tensor.FromFloat32s([]float32{1, 2}, 2)}},
		{"offsets not in name order", fileOf(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, f32le(1, 2)...),
			map[string]*tensor.Tensor{"a": tensor.FromFloat32s([]float32{2}, 1), "b": tensor.FromFloat32s([]float32{1}, 1)}},
		{"empty tensors sharing an offset", fileOf(`{"e":{"dtype":"F64","shape":[0,5],"data_offsets":[4,4]},"a":{"dtype":"F32","shape":[],"data_offsets":[0,4]},"f":{"dtype":"F32","shape":[0],"data_offsets":[4,4]}}`, f32le(7)...),
			map[string]*tensor.Tensor{"a": tensor.FromFloat32s([]float32{7}), "e": tensor.Zeros(tensor.Float64, 0, 5), "f": tensor.Zeros(tensor.Float32, 0)}},
		{"escaped names", fileOf(`{"\u0061\/":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, f32le(3)...),
			map[string]*tensor.Tensor{"a/": tensor.FromFloat32s([]float32{3}, 1)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _, err := DecodeBytes(tt.file)
			if err != nil {
				t.Fatalf("DecodeBytes: %v", err)
			}
			if err := sameTensors(got, tt.want); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestDecodeLargeHeaderClaim checks that a header claiming far more data than the
// input holds is refused without allocating for it, whether Decode knows the size
// of its input or not.
func TestDecodeLargeHeaderClaim(t *testing.T) {
	file := fileOf(`{"a":{"dtype":"F64","shape":[1000000000],"data_offsets":[0,8000000000]}}`, 1, 2, 3)
	readers := map[string]io.Reader{
		"sized":   bytes.NewReader(file),
		"unsized": struct{ io.Reader }{bytes.NewReader(file)},
	}
	for name, r := range readers {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, _, err := Decode(r)
		runtime.ReadMemStats(&after)
		if err == nil {
			t.Fatalf("%s: Decode accepted a truncated file", name)
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
			t.Errorf("%s: Decode allocated %d bytes for a 3-byte data section", name, grew)
		}
	}
}

// FuzzDecode checks that Decode never panics, that both of its reading paths agree,
// and that whatever it accepts survives Encode and Decode again bit for bit.
// Run it with go test -fuzz=FuzzDecode.
func FuzzDecode(f *testing.F) {
	f.Add(goldenA())
	var buf bytes.Buffer
	if err := Encode(&buf, oddTensors(), map[string]string{"k": "v"}); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	for _, tt := range decodeErrorTests {
		f.Add(tt.file)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ts, meta, err := DecodeBytes(data)
		ts2, meta2, err2 := Decode(struct{ io.Reader }{bytes.NewReader(data)})
		if (err == nil) != (err2 == nil) {
			t.Fatalf("sized decode err = %v, unsized err = %v", err, err2)
		}
		if err != nil {
			return
		}
		if err := sameTensors(ts2, ts); err != nil {
			t.Fatalf("unsized decode differs: %v", err)
		}
		if !mapsEqual(meta, meta2) {
			t.Fatalf("unsized metadata %q, sized %q", meta2, meta)
		}
		var out bytes.Buffer
		if err := Encode(&out, ts, meta); err != nil {
			t.Fatalf("Encode of decoded tensors: %v", err)
		}
		ts3, meta3, err := DecodeBytes(out.Bytes())
		if err != nil {
			t.Fatalf("Decode of re-encoded file: %v", err)
		}
		if err := sameTensors(ts3, ts); err != nil {
			t.Fatalf("re-encoded file differs: %v", err)
		}
		if len(meta) > 0 && !mapsEqual(meta3, meta) {
			t.Fatalf("re-encoded metadata %q, want %q", meta3, meta)
		}
	})
}
