package checkpoint

import (
	"encoding/binary"
	"math"
	"strconv"
	"strings"
	"testing"
)

// halfRef is a half's value by the format's definition, in float64.
func halfRef(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp, frac := int(h>>10&0x1f), float64(h&0x3ff)
	switch {
	case exp == 0x1f && frac == 0:
		return math.Inf(int(sign))
	case exp == 0x1f:
		return math.NaN()
	case exp == 0:
		return sign * math.Ldexp(frac, -24)
	}
	return sign * math.Ldexp(1+frac/1024, exp-15)
}

func TestHalfToFloat32Exhaustive(t *testing.T) {
	for i := range 1 << 16 {
		h := uint16(i)
		got, want := halfToFloat32(h), halfRef(h)
		switch {
		case math.IsNaN(want):
			bits := math.Float32bits(got)
			if !math.IsNaN(float64(got)) || bits>>13&0x3ff != uint32(h&0x3ff) || bits>>31 != uint32(h>>15) {
				t.Fatalf("halfToFloat32(%#04x) = %#08x, want a NaN with its sign and payload", h, bits)
			}
		case float64(got) != want || math.Signbit(float64(got)) != math.Signbit(want):
			t.Fatalf("halfToFloat32(%#04x) = %v, want %v", h, got, want)
		}
	}
}

// halfFile is a safetensors file of one tensor "x" of dtype and the 16-bit
// values vs.
func halfFile(dtype string, vs ...uint16) []byte {
	data := make([]byte, 2*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint16(data[2*i:], v)
	}
	header := `{"x":{"dtype":"` + dtype + `","shape":[` + strconv.Itoa(len(vs)) + `],"data_offsets":[0,` + strconv.Itoa(len(data)) + `]}}`
	return fileOf(header, data...)
}

func TestDecodeWideHalves(t *testing.T) {
	for _, c := range []struct {
		dtype string
		in    []uint16
		want  []float32
	}{
		{"F16", []uint16{0x3c00, 0xc000, 0x7bff, 0x0001, 0x0400, 0x3555}, []float32{1, -2, 65504, 0x1p-24, 0x1p-14, 0.33325195}},
		{"BF16", []uint16{0x3f80, 0xc000, 0x7f7f, 0x0001, 0x3eab}, []float32{1, -2, 0x1.fep127, 0x1p-133, 0.333984375}},
	} {
		ts, _, err := DecodeWide(strings.NewReader(string(halfFile(c.dtype, c.in...))))
		if err != nil {
			t.Fatalf("DecodeWide(%s %x): %v", c.dtype, c.in, err)
		}
		got := ts["x"].Data32()
		for i := range c.want {
			if got[i] != c.want[i] {
				t.Errorf("DecodeWide(%s %#04x) = %v, want %v", c.dtype, c.in[i], got[i], c.want[i])
			}
		}
		if _, _, err := DecodeBytes(halfFile(c.dtype, c.in...)); err == nil || !strings.Contains(err.Error(), `dtype "`+c.dtype+`" is not supported`) {
			t.Errorf("DecodeBytes(%s file): error %v, want dtype %q not supported", c.dtype, err, c.dtype)
		}
	}
}
