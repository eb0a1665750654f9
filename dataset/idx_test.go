package dataset

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// The shared MNIST and Fashion-MNIST sets, decoded at most once per test binary.
var (
	mnistOnce, fashionOnce     sync.Once
	mnistTrain, mnistTest      *Set
	fashionTrain, fashionTest  *Set
	mnistErr, fashionErr       error
	mnistTime, fashionLoadTime time.Duration
)

func loadMNIST(t *testing.T) (train, test *Set) {
	t.Helper()
	dir := needData(t, "mnist")
	mnistOnce.Do(func() {
		start := time.Now()
		mnistTrain, mnistTest, mnistErr = LoadIDX(dir, "mnist")
		mnistTime = time.Since(start)
	})
	if mnistErr != nil {
		t.Fatalf("LoadIDX(%s, mnist): %v", dir, mnistErr)
	}
	return mnistTrain, mnistTest
}

func loadFashion(t *testing.T) (train, test *Set) {
	t.Helper()
	dir := needData(t, "fashion-mnist")
	fashionOnce.Do(func() {
		start := time.Now()
		fashionTrain, fashionTest, fashionErr = LoadIDX(dir, "fashion-mnist")
		fashionLoadTime = time.Since(start)
	})
	if fashionErr != nil {
		t.Fatalf("LoadIDX(%s, fashion-mnist): %v", dir, fashionErr)
	}
	return fashionTrain, fashionTest
}

func TestLoadIDXMNIST(t *testing.T) {
	train, test := loadMNIST(t)
	t.Logf("LoadIDX(mnist) took %v", mnistTime)
	tests := []struct {
		split      string
		s          *Set
		rows       int
		counts     []int
		firstLabel int
	}{
		{"train", train, 60000, []int{5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949}, 5},
		{"test", test, 10000, []int{980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009}, 7},
	}
	for _, tc := range tests {
		if got, want := tc.s.X.Shape(), []int{tc.rows, 784}; !slices.Equal(got, want) || tc.s.Features != 784 {
			t.Errorf("mnist %s X shape = %v, %d features, want %v", tc.split, got, tc.s.Features, want)
		}
		if got := labelCounts(tc.s); !slices.Equal(got, tc.counts) {
			t.Errorf("mnist %s label counts = %v, want %v", tc.split, got, tc.counts)
		}
		if tc.s.Labels[0] != tc.firstLabel {
			t.Errorf("mnist %s label 0 = %d, want %d", tc.split, tc.s.Labels[0], tc.firstLabel)
		}
		if !slices.Equal(tc.s.Classes, digitClasses(10)) || tc.s.Name != "mnist" || tc.s.Targets != nil {
			t.Errorf("mnist %s: name %q, classes %v, targets %v", tc.split, tc.s.Name, tc.s.Classes, tc.s.Targets)
		}
		x := tc.s.X.Data32()
		if lo, hi := slices.Min(x), slices.Max(x); lo != 0 || hi != 1 {
			t.Errorf("mnist %s pixels in [%v, %v], want [0, 1]", tc.split, lo, hi)
		}
	}
	// Image 0 of the training set (a 5): row 5 of the 28x28 image starts, at column 12,
	// with the bytes 3 18 18 18 126 136.
	row := train.X.Data32()[5*28+12 : 5*28+18]
	want := []float32{3, 18, 18, 18, 126, 136}
	for i := range want {
		want[i] = float32(float64(want[i]) / 255)
	}
	if !slices.Equal(row, want) {
		t.Errorf("mnist train image 0, row 5, columns 12..17 = %v, want %v", row, want)
	}
}

func TestLoadIDXFashionMNIST(t *testing.T) {
	train, test := loadFashion(t)
	t.Logf("LoadIDX(fashion-mnist) took %v", fashionLoadTime)
	for _, tc := range []struct {
		split string
		s     *Set
		rows  int
	}{{"train", train, 60000}, {"test", test, 10000}} {
		if got, want := tc.s.X.Shape(), []int{tc.rows, 784}; !slices.Equal(got, want) {
			t.Errorf("fashion-mnist %s X shape = %v, want %v", tc.split, got, want)
		}
		want := slices.Repeat([]int{tc.rows / 10}, 10)
		if got := labelCounts(tc.s); !slices.Equal(got, want) {
			t.Errorf("fashion-mnist %s label counts = %v, want %v", tc.split, got, want)
		}
		if !slices.Equal(tc.s.Classes, FashionMNISTClasses) {
			t.Errorf("fashion-mnist %s classes = %q, want %q", tc.split, tc.s.Classes, FashionMNISTClasses)
		}
	}
}

// idxBytes returns an IDX file: magic, then the dims, then payload.
func idxBytes(magic uint32, dims []uint32, payload []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, magic)
	for _, d := range dims {
		b = binary.BigEndian.AppendUint32(b, d)
	}
	return append(b, payload...)
}

func gz(t *testing.T, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// smallIDX returns the four files of a valid small IDX set: 100 training and 10 test
// images of 4x4 random pixels (incompressible, so a cut gzip stream is cut mid-payload),
// with labels i%10.
func smallIDX(t *testing.T) map[string][]byte {
	rng := rand.New(rand.NewPCG(1, 2))
	img := func(n int) []byte {
		p := make([]byte, n*16)
		for i := range p {
			p[i] = byte(rng.Uint32())
		}
		p[0], p[1] = 255, 51
		return idxBytes(idxImagesMagic, []uint32{uint32(n), 4, 4}, p)
	}
	lab := func(n int) []byte {
		l := make([]byte, n)
		for i := range l {
			l[i] = byte(i % 10)
		}
		return idxBytes(idxLabelsMagic, []uint32{uint32(n)}, l)
	}
	return map[string][]byte{
		TrainImagesFile: gz(t, img(100)),
		TrainLabelsFile: gz(t, lab(100)),
		TestImagesFile:  gz(t, img(10)),
		TestLabelsFile:  gz(t, lab(10)),
	}
}

func writeIDXDir(t *testing.T, files map[string][]byte) string {
	t.Helper()
	dir := t.TempDir()
	for name, b := range files {
		if b == nil {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestLoadIDXSmall(t *testing.T) {
	dir := writeIDXDir(t, smallIDX(t))
	train, test, err := LoadIDX(dir, "tiny")
	if err != nil {
		t.Fatalf("LoadIDX(small): %v", err)
	}
	if got := train.X.Shape(); !slices.Equal(got, []int{100, 16}) {
		t.Errorf("train X shape = %v, want [100 16]", got)
	}
	if got := test.X.Shape(); !slices.Equal(got, []int{10, 16}) {
		t.Errorf("test X shape = %v, want [10 16]", got)
	}
	if got := train.SampleShape(); !slices.Equal(got, []int{1, 4, 4}) {
		t.Errorf("sample shape = %v, want [1 4 4] (one channel of rows×cols)", got)
	}
	if got, want := train.X.Data32()[:2], []float32{1, 0.2}; !slices.Equal(got, want) {
		t.Errorf("pixels 255, 51 = %v, want %v", got, want)
	}
	if !slices.Equal(test.Labels, identity(10)) {
		t.Errorf("test labels = %v, want %v", test.Labels, identity(10))
	}
}

func TestLoadIDXBadData(t *testing.T) {
	good := smallIDX(t)
	raw := func(magic uint32, dims []uint32, payload []byte) []byte {
		return gz(t, idxBytes(magic, dims, payload))
	}
	pix := func(n int) []byte { return make([]byte, n) }
	tests := []struct {
		name string
		file string // the file replaced, and named in the error
		data []byte // nil: the file is missing
		want string // the error after "dataset: <dir>/<file>: "
	}{
		{"images magic", TrainImagesFile, raw(2049, []uint32{100, 4, 4}, pix(1600)),
			"magic number 2049 (0x00000801), want 2051 (0x00000803)"},
		{"labels magic", TestLabelsFile, raw(2051, []uint32{10}, pix(10)),
			"magic number 2051 (0x00000803), want 2049 (0x00000801)"},
		{"short payload", TrainImagesFile, raw(2051, []uint32{100, 4, 4}, pix(1200)),
			"truncated: want 1600 pixel bytes, got 1200"},
		{"short labels", TrainLabelsFile, raw(2049, []uint32{100}, pix(99)),
			"truncated: want 100 label bytes, got 99"},
		{"trailing data", TestImagesFile, raw(2051, []uint32{10, 4, 4}, pix(161)),
			"trailing data after 160 pixel bytes"},
		{"truncated gzip", TrainImagesFile, good[TrainImagesFile][:800],
			"truncated: want 1600 pixel bytes, got "},
		{"truncated gzip trailer", TrainLabelsFile, good[TrainLabelsFile][:len(good[TrainLabelsFile])-3],
			"truncated gzip stream after the 100 label bytes"},
		{"bad crc", TestLabelsFile, func() []byte {
			b := slices.Clone(good[TestLabelsFile])
			b[len(b)-8] ^= 0xff
			return b
		}(), "corrupt gzip stream after the 10 label bytes: gzip: invalid checksum"},
		{"not gzip", TestImagesFile, idxBytes(2051, []uint32{10, 4, 4}, pix(160)), "not a gzip file: gzip: invalid header"},
		{"empty file", TrainLabelsFile, []byte{}, "not a gzip file: EOF"},
		{"header cut", TrainImagesFile, gz(t, []byte{0, 0, 8, 3, 0, 0}), "reading the header: truncated"},
		{"zero rows", TrainImagesFile, raw(2051, []uint32{100, 0, 4}, nil), "image size 0x4 is not plausible"},
		{"huge count", TrainImagesFile, raw(2051, []uint32{1<<32 - 1, 28, 28}, pix(1000)),
			"truncated: want 3367254359280 pixel bytes, got 1000"},
		{"label out of range", TrainLabelsFile, raw(2049, []uint32{100}, append(pix(99), 10)),
			"label 10 of item 99 is outside 0..9"},
		{"missing", TestLabelsFile, nil, "no such file or directory"},
	}
	for _, tc := range tests {
		files := cloneFiles(good)
		files[tc.file] = tc.data
		dir := writeIDXDir(t, files)
		_, _, err := LoadIDX(dir, "tiny")
		path := filepath.Join(dir, tc.file)
		want := "dataset: " + path + ": " + tc.want
		if tc.data == nil {
			want = "dataset: open " + path + ": " + tc.want
			if !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%s: LoadIDX error %v does not wrap fs.ErrNotExist", tc.name, err)
			}
		}
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: LoadIDX(%s) error = %v, want %q", tc.name, tc.file, err, want)
		}
	}

	// Errors about two files name both.
	pairs := []struct {
		name string
		file string
		data []byte
		want string
	}{
		{"count mismatch", TrainLabelsFile, raw(2049, []uint32{99}, pix(99)),
			"dataset: {dir}/train-images-idx3-ubyte.gz holds 100 images but {dir}/train-labels-idx1-ubyte.gz holds 99 labels"},
		{"test count mismatch", TestImagesFile, raw(2051, []uint32{11, 4, 4}, pix(176)),
			"dataset: {dir}/t10k-images-idx3-ubyte.gz holds 11 images but {dir}/t10k-labels-idx1-ubyte.gz holds 10 labels"},
		{"image size mismatch", TestImagesFile, raw(2051, []uint32{10, 3, 3}, pix(90)),
			"dataset: {dir}/train-images-idx3-ubyte.gz has images of 16 pixels but {dir}/t10k-images-idx3-ubyte.gz of 9"},
	}
	for _, tc := range pairs {
		files := cloneFiles(good)
		files[tc.file] = tc.data
		dir := writeIDXDir(t, files)
		_, _, err := LoadIDX(dir, "tiny")
		want := strings.ReplaceAll(tc.want, "{dir}", dir)
		if err == nil || err.Error() != want {
			t.Errorf("%s: LoadIDX error = %v, want %q", tc.name, err, want)
		}
	}
}

func cloneFiles(m map[string][]byte) map[string][]byte {
	c := make(map[string][]byte, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// TestLoadIDXTruncatedReal cuts the real MNIST test labels file short.
func TestLoadIDXTruncatedReal(t *testing.T) {
	src := needData(t, "mnist")
	files := map[string][]byte{}
	for _, name := range IDXFiles[2:] {
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		files[name] = b
	}
	// A valid small training half, so only the test files are real.
	good := smallIDX(t)
	files[TrainImagesFile], files[TrainLabelsFile] = good[TrainImagesFile], good[TrainLabelsFile]
	files[TestLabelsFile] = files[TestLabelsFile][:2000]
	dir := writeIDXDir(t, files)
	_, _, err := LoadIDX(dir, "mnist")
	want := "dataset: " + filepath.Join(dir, TestLabelsFile) + ": truncated: want 10000 label bytes, got "
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("LoadIDX with t10k labels cut to 2000 bytes: error = %v, want %q...", err, want)
	}
}

func BenchmarkLoadIDXMNIST(b *testing.B) {
	dir := needData(b, "mnist")
	for b.Loop() {
		if _, _, err := LoadIDX(dir, "mnist"); err != nil {
			b.Fatal(err)
		}
	}
}

// TestLoadIDXImages: one image file, gzip-compressed or not, reads as
// LoadIDX reads a set's images; a bad one is an error naming it.
func TestLoadIDXImages(t *testing.T) {
	pix := []byte{255, 51, 0, 1, 2, 3}
	file := idxBytes(idxImagesMagic, []uint32{1, 2, 3}, pix)
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		data []byte
		want string // the error after "dataset: <path>: "; "" for none
	}{
		{"images.idx3-ubyte", file, ""},
		{"images.idx3-ubyte.gz", gz(t, file), ""},
		{"short.idx3-ubyte", file[:len(file)-1], "truncated: want 6 pixel bytes, got 5"},
		{"long.idx3-ubyte", append(slices.Clone(file), 0), "trailing data after 6 pixel bytes"},
		{"labels.idx1-ubyte", idxBytes(idxLabelsMagic, []uint32{1}, []byte{3}), "magic number 2049 (0x00000801), want 2051 (0x00000803)"},
		{"cut.gz", gz(t, file)[:20], "reading the magic number: truncated"},
		{"empty", nil, "reading the magic number: truncated"},
	} {
		path := filepath.Join(dir, tc.name)
		if err := os.WriteFile(path, tc.data, 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := LoadIDXImages(path)
		if tc.want != "" {
			if want := "dataset: " + path + ": " + tc.want; err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Errorf("%s: error %v, want %q", tc.name, err, want)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		want := make([]float32, len(pix))
		for i, p := range pix {
			want[i] = pixelScale[p]
		}
		if !slices.Equal(s.X.Data32(), want) || !slices.Equal(s.SampleShape(), []int{1, 2, 3}) || s.Labels != nil {
			t.Errorf("%s: X %v, shape %v, labels %v; want %v, [1 2 3], none", tc.name, s.X.Data32(), s.SampleShape(), s.Labels, want)
		}
	}
}
