package dataset

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/pipetrain/pipetrain/tensor"
)

// The four gzip-compressed IDX files of MNIST and Fashion-MNIST, as published.
const (
	TrainImagesFile = "train-images-idx3-ubyte.gz"
	TrainLabelsFile = "train-labels-idx1-ubyte.gz"
	TestImagesFile  = "t10k-images-idx3-ubyte.gz"
	TestLabelsFile  = "t10k-labels-idx1-ubyte.gz"
)

// IDXFiles lists the four IDX file names in the order LoadIDX reads and Download fetches
// them.
var IDXFiles = [4]string{TrainImagesFile, TrainLabelsFile, TestImagesFile, TestLabelsFile}

// FashionMNISTClasses are the Fashion-MNIST class names, index = label.
var FashionMNISTClasses = []string{
	"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
	"Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot",
}

const (
	idxImagesMagic = 2051 // 0x00000803: unsigned bytes, 3 dimensions
	idxLabelsMagic = 2049 // 0x00000801: unsigned bytes, 1 dimension
	idxNumClasses  = 10
	maxImagePixels = 1 << 24 // rows*cols above this is taken for a corrupt header
)

// pixelScale[b] is b/255 as a float32, correctly rounded.
var pixelScale = func() (t [256]float32) {
	for i := range t {
		t[i] = float32(float64(i) / 255)
	}
	return t
}()

// LoadIDX reads MNIST or Fashion-MNIST from the four gzip-compressed IDX files in dir
// (see IDXFiles). name is the set's name: "fashion-mnist" gives the Fashion-MNIST class
// names, any other name the classes "0" to "9". Pixels are scaled to [0, 1] by dividing
// by 255; X has rows*cols features (784 for 28x28 images).
//
// Every file is checked: its magic number (2051 for images, 2049 for labels), an exact
// payload length (a truncated or corrupt gzip stream, a short payload or trailing data is
// an error), image and label counts that agree, the same image size in train and test,
// and labels in 0..9. An error names the file and what is wrong.
func LoadIDX(dir, name string) (train, test *Set, err error) {
	type result struct {
		x      []float32
		labels []int
		n      int   // rows
		f      int   // features; 0 for labels
		shape  []int // an image's [1, rows, cols]
		err    error
	}
	var res [4]result
	var wg sync.WaitGroup
	for k, file := range IDXFiles {
		wg.Go(func() {
			r := &res[k]
			path := filepath.Join(dir, file)
			if k%2 == 0 {
				r.x, r.n, r.shape, r.err = readIDXImages(path, false)
				r.f = tensor.SizeOf(r.shape)
			} else {
				r.labels, r.err = readIDXLabels(path)
				r.n = len(r.labels)
			}
		})
	}
	wg.Wait()
	for _, r := range res {
		if r.err != nil {
			return nil, nil, r.err
		}
	}
	for k := 0; k < 4; k += 2 {
		if res[k].n != res[k+1].n {
			return nil, nil, fmt.Errorf("dataset: %s holds %d images but %s holds %d labels",
				filepath.Join(dir, IDXFiles[k]), res[k].n, filepath.Join(dir, IDXFiles[k+1]), res[k+1].n)
		}
	}
	if res[0].f != res[2].f {
		return nil, nil, fmt.Errorf("dataset: %s has images of %d pixels but %s of %d",
			filepath.Join(dir, IDXFiles[0]), res[0].f, filepath.Join(dir, IDXFiles[2]), res[2].f)
	}
	classes := digitClasses(idxNumClasses)
	if name == "fashion-mnist" {
		classes = slices.Clone(FashionMNISTClasses)
	}
	mk := func(r, l result) *Set {
		return &Set{
			Name:     name,
			X:        tensor.Wrap32(r.x, r.n, r.f),
			Labels:   l.labels,
			Classes:  slices.Clone(classes),
			Features: r.f,
			Shape:    slices.Clone(r.shape),
		}
	}
	return mk(res[0], res[1]), mk(res[2], res[3]), nil
}

// LoadIDXImages reads one IDX image file (idx3-ubyte, magic 2051), gzip-compressed
// or not (a file that begins with gzip's magic bytes is gunzipped), as LoadIDX reads
// a set's images: X holds the pixels scaled to [0, 1], Shape is [1, rows, cols], and
// the set has no labels. It reads a model's inputs; the checks and errors are
// LoadIDX's.
func LoadIDXImages(path string) (*Set, error) {
	x, n, shape, err := readIDXImages(path, true)
	if err != nil {
		return nil, err
	}
	f := tensor.SizeOf(shape)
	name := strings.TrimSuffix(filepath.Base(path), ".gz")
	return &Set{Name: name, X: tensor.Wrap32(x, n, f), Features: f, Shape: shape}, nil
}

// readIDXImages reads an IDX image file, gzip-compressed (or, with plain, possibly
// not), and returns the pixels scaled to [0, 1], the image count and an image's shape
// [1, rows, cols] (one channel).
func readIDXImages(path string, plain bool) (x []float32, n int, shape []int, err error) {
	var hdr [12]byte
	r, err := openIDX(path, idxImagesMagic, hdr[:], plain)
	if err != nil {
		return nil, 0, nil, err
	}
	defer r.close()
	n = int(binary.BigEndian.Uint32(hdr[0:]))
	rows := int(binary.BigEndian.Uint32(hdr[4:]))
	cols := int(binary.BigEndian.Uint32(hdr[8:]))
	if rows == 0 || cols == 0 || rows > maxImagePixels || cols > maxImagePixels || rows*cols > maxImagePixels {
		return nil, 0, nil, r.errorf("image size %dx%d is not plausible", rows, cols)
	}
	f := rows * cols
	if n > math.MaxInt/f {
		return nil, 0, nil, r.errorf("%d images of %dx%d pixels is too many", n, rows, cols)
	}
	want := n * f
	// Decompress a chunk at a time, converting as we go, into x. x is allocated in full
	// up front only when the gzip trailer agrees with the header about the length;
	// otherwise it grows as data arrives, so a corrupt header cannot make us allocate
	// far more than the file holds.
	x = make([]float32, 0, r.capHint(len(hdr), want))
	buf := make([]byte, 256<<10)
	for len(x) < want {
		k, err := io.ReadFull(r.zr, buf[:min(len(buf), want-len(x))])
		got := len(x)
		x = slices.Grow(x, k)[:got+k]
		for i, b := range buf[:k] {
			x[got+i] = pixelScale[b]
		}
		if err != nil {
			return nil, 0, nil, r.payloadError(err, len(x), want, "pixel")
		}
	}
	if err := r.finish(want, "pixel"); err != nil {
		return nil, 0, nil, err
	}
	return x, n, []int{1, rows, cols}, nil
}

// readIDXLabels reads a gzip-compressed IDX label file and checks every label is in 0..9.
func readIDXLabels(path string) ([]int, error) {
	var hdr [4]byte
	r, err := openIDX(path, idxLabelsMagic, hdr[:], false)
	if err != nil {
		return nil, err
	}
	defer r.close()
	want := int(binary.BigEndian.Uint32(hdr[:]))
	raw := make([]byte, 0, r.capHint(len(hdr), want))
	for len(raw) < want {
		if len(raw) == cap(raw) {
			raw = slices.Grow(raw, min(want-len(raw), cap(raw)+1))
		}
		k, err := io.ReadFull(r.zr, raw[len(raw):min(cap(raw), want)])
		raw = raw[:len(raw)+k]
		if err != nil {
			return nil, r.payloadError(err, len(raw), want, "label")
		}
	}
	if err := r.finish(want, "label"); err != nil {
		return nil, err
	}
	labels := make([]int, len(raw))
	for i, b := range raw {
		if b >= idxNumClasses {
			return nil, r.errorf("label %d of item %d is outside 0..%d", b, i, idxNumClasses-1)
		}
		labels[i] = int(b)
	}
	return labels, nil
}

// idxReader reads one IDX file.
type idxReader struct {
	path  string
	f     *os.File
	zr    io.Reader // the IDX bytes: gunzipped, or the file's own
	isize uint32    // their length mod 2^32, from the gzip trailer or the file's size, if known
	ok    bool      // isize is known
}

// openIDX opens a gzip-compressed IDX file (with plain, one that does not begin with
// gzip's magic bytes is read as it is), checks its magic number and reads the rest of
// the header into hdr.
func openIDX(path string, magic uint32, hdr []byte, plain bool) (*idxReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	r := &idxReader{path: path, f: f}
	br := bufio.NewReaderSize(f, 1<<20)
	st, statErr := f.Stat()
	if b, _ := br.Peek(2); plain && !bytes.Equal(b, []byte{0x1f, 0x8b}) {
		r.zr = br
		r.isize, r.ok = uint32(st.Size()), statErr == nil
	} else {
		var trailer [4]byte
		if statErr == nil && st.Size() >= 18 {
			if _, err := f.ReadAt(trailer[:], st.Size()-4); err == nil {
				r.isize, r.ok = binary.LittleEndian.Uint32(trailer[:]), true
			}
		}
		if r.zr, err = gzip.NewReader(br); err != nil {
			f.Close()
			return nil, r.errorf("not a gzip file: %v", err)
		}
	}
	var m [4]byte
	if _, err := io.ReadFull(r.zr, m[:]); err != nil {
		f.Close()
		return nil, r.errorf("reading the magic number: %v", eofAsTruncated(err))
	}
	if got := binary.BigEndian.Uint32(m[:]); got != magic {
		f.Close()
		return nil, r.errorf("magic number %d (0x%08x), want %d (0x%08x)", got, got, magic, magic)
	}
	if _, err := io.ReadFull(r.zr, hdr); err != nil {
		f.Close()
		return nil, r.errorf("reading the header: %v", eofAsTruncated(err))
	}
	return r, nil
}

func (r *idxReader) close() { r.f.Close() }

func (r *idxReader) errorf(format string, args ...any) error {
	return fmt.Errorf("dataset: %s: %s", r.path, fmt.Sprintf(format, args...))
}

// capHint returns the capacity to allocate for a payload of want items after a header
// of hdrLen bytes (plus the 4-byte magic): want if the gzip trailer's length agrees,
// else at most 16 Mi items, grown later as data arrives.
func (r *idxReader) capHint(hdrLen, want int) int {
	if r.ok && uint32(4+hdrLen+want) == r.isize {
		return want
	}
	return min(want, 16<<20)
}

// payloadError describes a failure to read the want payload items after got.
func (r *idxReader) payloadError(err error, got, want int, what string) error {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return r.errorf("truncated: want %d %s bytes, got %d", want, what, got)
	}
	return r.errorf("corrupt after %d of %d %s bytes: %v", got, want, what, err)
}

// finish checks that the gzip stream ends right after the payload of want bytes, with a
// valid checksum.
func (r *idxReader) finish(want int, what string) error {
	var extra [1]byte
	switch n, err := io.ReadFull(r.zr, extra[:]); {
	case n > 0:
		return r.errorf("trailing data after %d %s bytes", want, what)
	case err == io.EOF: // the data ended (a gzip stream with its CRC and length verified)
		return nil
	case errors.Is(err, io.ErrUnexpectedEOF):
		return r.errorf("truncated gzip stream after the %d %s bytes", want, what)
	default:
		return r.errorf("corrupt gzip stream after the %d %s bytes: %v", want, what, err)
	}
}

func eofAsTruncated(err error) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return errors.New("truncated")
	}
	return err
}
