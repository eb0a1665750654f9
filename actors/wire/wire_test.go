package wire

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/tensor"
)

// roundTrip sends t through FromTensor, the protobuf encoding and ToTensor.
func roundTrip(t *testing.T, x *tensor.Tensor) *tensor.Tensor {
	t.Helper()
	b, err := proto.Marshal(FromTensor(x))
	if err != nil {
		t.Fatal(err)
	}
	var w Tensor
	if err := proto.Unmarshal(b, &w); err != nil {
		t.Fatal(err)
	}
	y, err := w.ToTensor()
	if err != nil {
		t.Fatal(err)
	}
	return y
}

// TestTensorRoundTrip: shape, type and every bit cross unchanged, NaN
// payloads and negative zeros included, for scalars and empty tensors too.
func TestTensorRoundTrip(t *testing.T) {
	for _, copyBytes := range []bool{true, false} { // the fast copy and the byte-by-byte path
		t.Run(fmt.Sprintf("copy=%v", copyBytes), func(t *testing.T) {
			defer func(le bool) { littleEndian = le }(littleEndian)
			littleEndian = littleEndian && copyBytes
			tensorRoundTrip(t)
		})
	}
}

func tensorRoundTrip(t *testing.T) {
	special := []float64{0, math.Copysign(0, -1), 1.5, -2.25, math.Inf(1), math.Inf(-1), math.NaN(), 1e-40, 3.4e38, 1e300}
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		for _, shape := range [][]int{{}, {0}, {2, 0, 3}, {10}, {2, 5}, {1, 2, 5}} {
			n := 1
			for _, d := range shape {
				n *= d
			}
			vals := make([]float64, n)
			for i := range vals {
				vals[i] = special[i%len(special)]
			}
			x := tensor.FromFloat64s(dt, vals, shape...)
			if dt == tensor.Float32 && n > 0 {
				x.Data32()[0] = math.Float32frombits(0x7fc01234) // a NaN with a payload
			}
			y := roundTrip(t, x)
			if y.DType() != dt || !slices.Equal(y.Shape(), x.Shape()) {
				t.Fatalf("%v %v: came back %v %v", dt, shape, y.DType(), y.Shape())
			}
			if dt == tensor.Float32 {
				if !slices.EqualFunc(x.Data32(), y.Data32(), func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }) {
					t.Errorf("%v %v: bits changed: %v, %v", dt, shape, x.Data32(), y.Data32())
				}
			} else if !slices.EqualFunc(x.Data64(), y.Data64(), func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }) {
				t.Errorf("%v %v: bits changed: %v, %v", dt, shape, x.Data64(), y.Data64())
			}
		}
	}
	// little-endian on the wire, whatever the host
	if b := FromTensor(tensor.FromFloat64s(tensor.Float32, []float64{1}, 1)).Data; !slices.Equal(b, []byte{0, 0, 0x80, 0x3f}) {
		t.Errorf("1.0 as float32 on the wire: % x, want 00 00 80 3f", b)
	}
}

// TestTensorCorrupt: a message whose shape, type and bytes disagree is an
// error naming what is wrong, never a panic or a huge allocation.
func TestTensorCorrupt(t *testing.T) {
	for _, c := range []struct {
		w    *Tensor
		want string
	}{
		{nil, "wire: no tensor"},
		{&Tensor{Shape: []int64{2, 2}, Data: make([]byte, 15)}, "holds 15 bytes, want 16"},
		{&Tensor{Shape: []int64{2}, Dtype: DType_FLOAT64, Data: make([]byte, 8)}, "holds 8 bytes, want 16"},
		{&Tensor{Shape: []int64{-1}, Data: nil}, "dimension 0 is -1"},
		{&Tensor{Shape: []int64{1 << 40, 1 << 40}}, "dimension 0 is 1099511627776"},
		{&Tensor{Shape: []int64{1 << 20, 1 << 20, 1 << 20}}, "dimension 1 is 1048576"},
		{&Tensor{Shape: []int64{1 << 10, 1 << 10, 0, 1 << 40}}, "dimension 3 is 1099511627776"},
		{&Tensor{Shape: []int64{1}, Dtype: 7, Data: make([]byte, 4)}, "unknown dtype 7"},
	} {
		_, err := c.w.ToTensor()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ToTensor(%v): error %v, want one containing %q", c.w, err, c.want)
		}
	}
}

// TestErrorRoundTrip: a non-finite value keeps its meaning across the wire;
// other errors keep their text.
func TestErrorRoundTrip(t *testing.T) {
	for _, err := range []error{
		&nn.NonFiniteError{Layer: 3, Kind: "linear", Step: 17, Where: "backward"},
		&nn.NonFiniteError{Step: 9, Where: "loss"},
		errors.New("actors: stage 2 panicked: index out of range"),
	} {
		b, merr := proto.Marshal(FromError(err))
		if merr != nil {
			t.Fatal(merr)
		}
		var w Error
		if uerr := proto.Unmarshal(b, &w); uerr != nil {
			t.Fatal(uerr)
		}
		got := w.Err()
		if got.Error() != err.Error() {
			t.Errorf("%v came back as %v", err, got)
		}
		var want, nf *nn.NonFiniteError
		if errors.As(err, &want) {
			if !errors.As(got, &nf) || *nf != *want {
				t.Errorf("%v came back as %#v, want an *nn.NonFiniteError equal to it", err, got)
			}
		}
	}
	if (*Error)(nil).Err() == nil {
		t.Error("a nil wire Error gave no error")
	}
}

// TestTensorLarge: a 16 MiB activation (batch 4096 through 1024 units)
// crosses the encoding whole.
func TestTensorLarge(t *testing.T) {
	x := tensor.Zeros(tensor.Float32, 4096, 1024)
	for i, d := range x.Data32() {
		x.Data32()[i] = d + float32(i%1000)*0.5
	}
	y := roundTrip(t, x)
	if !slices.Equal(x.Data32(), y.Data32()) {
		t.Error("a 16 MiB tensor changed on the way")
	}
}

// BenchmarkTensor16MiB times a 16 MiB activation through the encoding both
// ways. Most of its time is the kernel handing out the fresh pages of the two
// new buffers (copying the bytes whole on a little-endian host was no faster).
func BenchmarkTensor16MiB(b *testing.B) {
	x := tensor.Zeros(tensor.Float32, 4096, 1024)
	b.SetBytes(4 * 4096 * 1024)
	for b.Loop() {
		if _, err := FromTensor(x).ToTensor(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestToTensorShares: aligned bytes become the tensor's storage, without a
// copy; bytes at an odd address are copied, with the same values.
func TestToTensorShares(t *testing.T) {
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		x := tensor.FromFloat64s(dt, []float64{1.5, -2, 3.25, 4}, 2, 2)
		w := FromTensor(x)
		buf := make([]byte, len(w.Data)+1)
		odd := &Tensor{Shape: w.Shape, Dtype: w.Dtype, Data: buf[1:]}
		copy(odd.Data, w.Data)
		for _, c := range []struct {
			name  string
			w     *Tensor
			share bool
		}{{"aligned", w, littleEndian}, {"odd address", odd, false}} {
			y, err := c.w.ToTensor()
			if err != nil {
				t.Fatal(err)
			}
			if got := y.Float64s(); !slices.Equal(got, []float64{1.5, -2, 3.25, 4}) {
				t.Errorf("%v %s: values %v", dt, c.name, got)
			}
			c.w.Data[len(c.w.Data)-1] ^= 0x80 // flip the last value's sign
			if shared := y.Float64s()[3] == -4; shared != c.share {
				t.Errorf("%v %s: tensor shares the bytes: %v, want %v", dt, c.name, shared, c.share)
			}
		}
	}
}
