package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unsafe"

	"github.com/pipetrain/pipetrain/tensor"
)

// FrameKind is what a tensor frame carries.
type FrameKind uint8

const (
	FrameForward  FrameKind = 1 // an activation (actors.Forward)
	FrameBackward FrameKind = 2 // its gradient (actors.Backward)
)

// Frame is the header of a tensor on the data plane: the message's fields
// and the tensor's type and shape; Len raw little-endian bytes follow it on
// the stream. Its layout, all little-endian:
//
//	u32 n                       bytes of the header after this word
//	u8 kind, u8 dtype, u8 flags (1: eval), u8 rank
//	u64 generation
//	i64 step, micro, shard, row, total, seq, micros, first, share, replicas
//	u64 len                     bytes of the tensor that follow the header
//	i64 × rank                  the shape
//	u16 + bytes                 the run id
//	u16 + bytes                 the receiving actor's id in its process
//	u16 + bytes                 the sending actor's name and host, for reports
type Frame struct {
	Kind                                                            FrameKind
	DType                                                           DType
	Eval                                                            bool
	Gen                                                             uint64
	Step, Micro, Shard, Row, Total, Seq, Micros, First, Share, Reps int64
	Len                                                             uint64
	Shape                                                           []int64
	Run, To, From                                                   string
}

// Frame limits: a header is small; a longer one is refused before it is read.
const (
	MaxFrameHeader = 1 << 16
	maxRank        = 16
	frameFixed     = 4 + 8 + 10*8 + 8 // the words before the shape
)

// AppendFrame appends f's header to b, its length word first.
func AppendFrame(b []byte, f *Frame) []byte {
	start := len(b)
	b = binary.LittleEndian.AppendUint32(b, 0)
	flags := byte(0)
	if f.Eval {
		flags = 1
	}
	b = append(b, byte(f.Kind), byte(f.DType), flags, byte(len(f.Shape)))
	b = binary.LittleEndian.AppendUint64(b, f.Gen)
	for _, v := range [...]int64{f.Step, f.Micro, f.Shard, f.Row, f.Total, f.Seq, f.Micros, f.First, f.Share, f.Reps} {
		b = binary.LittleEndian.AppendUint64(b, uint64(v))
	}
	b = binary.LittleEndian.AppendUint64(b, f.Len)
	for _, d := range f.Shape {
		b = binary.LittleEndian.AppendUint64(b, uint64(d))
	}
	for _, s := range [...]string{f.Run, f.To, f.From} {
		s = s[:min(len(s), 1<<15)]
		b = binary.LittleEndian.AppendUint16(b, uint16(len(s)))
		b = append(b, s...)
	}
	binary.LittleEndian.PutUint32(b[start:], uint32(len(b)-start-4))
	return b
}

// ParseFrame reads into f a header's bytes after its length word, and
// checks that the tensor's length fits its type and shape. Strings equal
// to f's are kept, so a stream of frames to one actor allocates none.
func ParseFrame(f *Frame, b []byte) error {
	if len(b) < frameFixed {
		return fmt.Errorf("wire: frame header of %d bytes", len(b))
	}
	f.Kind, f.DType, f.Eval = FrameKind(b[0]), DType(b[1]), b[2]&1 != 0
	rank := int(b[3])
	f.Gen = binary.LittleEndian.Uint64(b[4:])
	var vs [10]int64
	for i := range vs {
		vs[i] = int64(binary.LittleEndian.Uint64(b[12+8*i:]))
	}
	f.Step, f.Micro, f.Shard, f.Row, f.Total, f.Seq, f.Micros, f.First, f.Share, f.Reps = vs[0], vs[1], vs[2], vs[3], vs[4], vs[5], vs[6], vs[7], vs[8], vs[9]
	f.Len = binary.LittleEndian.Uint64(b[92:])
	b = b[frameFixed:]
	if rank > maxRank || len(b) < 8*rank {
		return fmt.Errorf("wire: frame of rank %d", rank)
	}
	f.Shape = f.Shape[:0]
	n := int64(1)
	for i := range rank {
		d := int64(binary.LittleEndian.Uint64(b[8*i:]))
		if d < 0 || d > maxElements || (d > 0 && n > maxElements/d) {
			return fmt.Errorf("wire: frame of shape dimension %d = %d", i, d)
		}
		n *= d
		f.Shape = append(f.Shape, d)
	}
	b = b[8*rank:]
	for _, s := range [...]*string{&f.Run, &f.To, &f.From} {
		if len(b) < 2 || len(b) < 2+int(binary.LittleEndian.Uint16(b)) {
			return errors.New("wire: frame header cut short")
		}
		k := int(binary.LittleEndian.Uint16(b))
		if string(b[2:2+k]) != *s {
			*s = string(b[2 : 2+k])
		}
		b = b[2+k:]
	}
	size := uint64(4)
	switch f.DType {
	case DType_FLOAT32:
	case DType_FLOAT64:
		size = 8
	default:
		return fmt.Errorf("wire: frame of unknown dtype %d", f.DType)
	}
	if f.Len != uint64(n)*size {
		return fmt.Errorf("wire: frame of shape %v and %v holds %d bytes, want %d", f.Shape, f.DType, f.Len, uint64(n)*size)
	}
	return nil
}

// SetTensor sets f's type, shape and length from t.
func (f *Frame) SetTensor(t *tensor.Tensor) {
	f.DType, f.Len = DType_FLOAT32, uint64(4*t.Size())
	if t.DType() == tensor.Float64 {
		f.DType, f.Len = DType_FLOAT64, uint64(8*t.Size())
	}
	f.Shape = f.Shape[:0]
	for i := range t.Dims() {
		f.Shape = append(f.Shape, int64(t.Dim(i)))
	}
}

// Bytes returns t's elements as the little-endian bytes a frame carries,
// without a copy, or false on a big-endian machine.
func Bytes(t *tensor.Tensor) ([]byte, bool) {
	if !littleEndian {
		return nil, false
	}
	if t.Size() == 0 {
		return nil, true
	}
	if t.DType() == tensor.Float64 {
		d := t.Data64()
		return unsafe.Slice((*byte)(unsafe.Pointer(&d[0])), 8*len(d)), true
	}
	d := t.Data32()
	return unsafe.Slice((*byte)(unsafe.Pointer(&d[0])), 4*len(d)), true
}

// Slot is memory a frame's tensor is read into, aligned for either dtype
// and kept from step to step.
type Slot struct {
	words []float64
}

// Bytes returns the slot's first n bytes, growing it if it is smaller.
func (s *Slot) Bytes(n uint64) []byte {
	w := (n + 7) / 8
	if uint64(len(s.words)) < w {
		s.words = make([]float64, w)
	}
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s.words[0])), n)
}

// Tensor returns the tensor of f's type and shape over the slot's bytes,
// which Bytes(f.Len) gave and the frame's payload filled.
func (s *Slot) Tensor(f *Frame) *tensor.Tensor {
	shape := make([]int, len(f.Shape))
	for i, d := range f.Shape {
		shape[i] = int(d)
	}
	if f.DType == DType_FLOAT64 {
		return tensor.Wrap64(s.words[:f.Len/8], shape...)
	}
	var p *float32
	if f.Len > 0 {
		p = (*float32)(unsafe.Pointer(&s.words[0]))
	}
	return tensor.Wrap32(unsafe.Slice(p, f.Len/4), shape...)
}
