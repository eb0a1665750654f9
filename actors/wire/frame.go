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
	FrameForward  FrameKind = 1 // an activation (actors.Forward): one tensor
	FrameBackward FrameKind = 2 // its gradient (actors.Backward): one tensor
	FrameTurn     FrameKind = 3 // a part of the gradients' turn (actors.GradTurn), Micro the part: Grads gradients, then the buffers
	FrameWeights  FrameKind = 4 // a part of a replica's new weights (actors.Weights), Micro the part
	FrameTied     FrameKind = 5 // a tied weight's gradient (actors.TiedGrad): Shard is the tie
)

// Frame is the header of a message on the data plane: its fields and its
// tensors' types and shapes; their raw little-endian bytes follow it on
// the stream, in order. Its layout, all little-endian:
//
//	u32 n                       bytes of the header after this word
//	u8 kind, u8 flags (1: eval, 2: rows), u16 tensors
//	u64 generation
//	i64 step, micro, shard, row, total, seq, micros, first, share, replicas, grads
//	per tensor: u8 dtype, u8 rank, u64 bytes, i64 × rank (the shape)
//	u16 + bytes                 the run id
//	u16 + bytes                 the receiving actor's id in its process
//	u16 + bytes                 the sending actor's name and host, for reports
type Frame struct {
	Kind                                                                   FrameKind
	Eval, Rows                                                             bool
	Gen                                                                    uint64
	Step, Micro, Shard, Row, Total, Seq, Micros, First, Share, Reps, Grads int64
	Tensors                                                                []FrameTensor
	Run, To, From                                                          string
}

// FrameTensor is a tensor's type, shape and length in bytes in a frame.
type FrameTensor struct {
	DType DType
	Len   uint64
	Shape []int64
}

// Frame limits: a header is small; a longer one is refused before it is read.
const (
	MaxFrameHeader = 1 << 16
	maxRank        = 16
	frameFixed     = 4 + 8 + 11*8 // the words before the tensors
)

// Len returns the bytes of f's tensors, which follow its header.
func (f *Frame) Len() uint64 {
	n := uint64(0)
	for _, t := range f.Tensors {
		n += t.Len
	}
	return n
}

// AppendFrame appends f's header to b, its length word first.
func AppendFrame(b []byte, f *Frame) []byte {
	start := len(b)
	b = binary.LittleEndian.AppendUint32(b, 0)
	flags := byte(0)
	if f.Eval {
		flags |= 1
	}
	if f.Rows {
		flags |= 2
	}
	b = append(b, byte(f.Kind), flags)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(f.Tensors)))
	b = binary.LittleEndian.AppendUint64(b, f.Gen)
	for _, v := range [...]int64{f.Step, f.Micro, f.Shard, f.Row, f.Total, f.Seq, f.Micros, f.First, f.Share, f.Reps, f.Grads} {
		b = binary.LittleEndian.AppendUint64(b, uint64(v))
	}
	for _, t := range f.Tensors {
		b = append(b, byte(t.DType), byte(len(t.Shape)))
		b = binary.LittleEndian.AppendUint64(b, t.Len)
		for _, d := range t.Shape {
			b = binary.LittleEndian.AppendUint64(b, uint64(d))
		}
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
// checks that each tensor's length fits its type and shape. f's slices and
// the strings equal to its own are kept, so a stream of frames to one
// actor allocates nothing.
func ParseFrame(f *Frame, b []byte) error {
	if len(b) < frameFixed {
		return fmt.Errorf("wire: frame header of %d bytes", len(b))
	}
	f.Kind, f.Eval, f.Rows = FrameKind(b[0]), b[1]&1 != 0, b[1]&2 != 0
	count := int(binary.LittleEndian.Uint16(b[2:]))
	f.Gen = binary.LittleEndian.Uint64(b[4:])
	var vs [11]int64
	for i := range vs {
		vs[i] = int64(binary.LittleEndian.Uint64(b[12+8*i:]))
	}
	f.Step, f.Micro, f.Shard, f.Row, f.Total, f.Seq, f.Micros, f.First, f.Share, f.Reps, f.Grads = vs[0], vs[1], vs[2], vs[3], vs[4], vs[5], vs[6], vs[7], vs[8], vs[9], vs[10]
	b = b[frameFixed:]
	if f.Grads < 0 || f.Grads > int64(count) {
		return fmt.Errorf("wire: a frame of %d tensors with %d gradients", count, f.Grads)
	}
	f.Tensors = f.Tensors[:0]
	for i := range count {
		if len(b) < 10 {
			return errors.New("wire: frame header cut short")
		}
		if i < cap(f.Tensors) {
			f.Tensors = f.Tensors[:i+1]
		} else {
			f.Tensors = append(f.Tensors, FrameTensor{})
		}
		t := &f.Tensors[i]
		t.DType, t.Len, t.Shape = DType(b[0]), binary.LittleEndian.Uint64(b[2:]), t.Shape[:0]
		rank := int(b[1])
		b = b[10:]
		if rank > maxRank || len(b) < 8*rank {
			return fmt.Errorf("wire: frame tensor %d of rank %d", i, rank)
		}
		n := int64(1)
		for k := range rank {
			d := int64(binary.LittleEndian.Uint64(b[8*k:]))
			if d < 0 || d > maxElements || (d > 0 && n > maxElements/d) {
				return fmt.Errorf("wire: frame tensor %d of shape dimension %d = %d", i, k, d)
			}
			n *= d
			t.Shape = append(t.Shape, d)
		}
		b = b[8*rank:]
		size := uint64(4)
		switch t.DType {
		case DType_FLOAT32:
		case DType_FLOAT64:
			size = 8
		default:
			return fmt.Errorf("wire: frame tensor %d of unknown dtype %d", i, t.DType)
		}
		if t.Len != uint64(n)*size {
			return fmt.Errorf("wire: frame tensor %d of shape %v and %v holds %d bytes, want %d", i, t.Shape, t.DType, t.Len, uint64(n)*size)
		}
	}
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
	return nil
}

// AddTensor appends t's type, shape and length to f's tensors, reusing
// their storage.
func (f *Frame) AddTensor(t *tensor.Tensor) {
	i := len(f.Tensors)
	if i < cap(f.Tensors) {
		f.Tensors = f.Tensors[:i+1]
	} else {
		f.Tensors = append(f.Tensors, FrameTensor{})
	}
	ft := &f.Tensors[i]
	ft.DType, ft.Len = DType_FLOAT32, uint64(4*t.Size())
	if t.DType() == tensor.Float64 {
		ft.DType, ft.Len = DType_FLOAT64, uint64(8*t.Size())
	}
	ft.Shape = ft.Shape[:0]
	for k := range t.Dims() {
		ft.Shape = append(ft.Shape, int64(t.Dim(k)))
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

// Tensor returns the tensor of t's type and shape over the slot's bytes,
// which Bytes(t.Len) gave and the frame's payload filled.
func (s *Slot) Tensor(t *FrameTensor) *tensor.Tensor {
	shape := make([]int, len(t.Shape))
	for i, d := range t.Shape {
		shape[i] = int(d)
	}
	if t.DType == DType_FLOAT64 {
		return tensor.Wrap64(s.words[:t.Len/8], shape...)
	}
	var p *float32
	if t.Len > 0 {
		p = (*float32)(unsafe.Pointer(&s.words[0]))
	}
	return tensor.Wrap32(unsafe.Slice(p, t.Len/4), shape...)
}
