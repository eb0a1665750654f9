package main

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pipetrain/pipetrain/dataset"
	"github.com/pipetrain/pipetrain/model"
	"github.com/pipetrain/pipetrain/tensor"
)

// predictions parses predict's CSV output: the header and the rows.
func predictions(t *testing.T, text string) ([]string, [][]string) {
	t.Helper()
	recs, err := csv.NewReader(strings.NewReader(text)).ReadAll()
	if err != nil || len(recs) == 0 {
		t.Fatalf("predict wrote %q: %v", text, err)
	}
	return recs[0], recs[1:]
}

// evalAccuracy runs eval on the checkpoints under dir and returns its accuracy.
func evalAccuracy(t *testing.T, dir string) float64 {
	t.Helper()
	r := runSub("eval", "--checkpoint", filepath.Join(dir, "checkpoints"), "--set", "log.dir="+filepath.Join(dir, "eval-logs"))
	if r.code != 0 {
		t.Fatalf("eval: exit %d:\n%s", r.code, r.stderr)
	}
	var res struct{ Accuracy float64 }
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatal(err)
	}
	return res.Accuracy
}

// checkAgreement checks predict's rows against the test split: each row's
// class is Classify's on the split's features and its probabilities
// Predict's, to the bit (so the features were training's), and the fraction
// right is eval's accuracy.
func checkAgreement(t *testing.T, m *model.Model, test *dataset.Set, rows [][]string, acc float64) {
	t.Helper()
	want, err := m.Classify(test.X)
	if err != nil {
		t.Fatal(err)
	}
	probs, err := m.Predict(test.X)
	if err != nil {
		t.Fatal(err)
	}
	k := probs.Dim(1)
	if len(rows) != test.Len() {
		t.Fatalf("predict wrote %d rows for %d samples", len(rows), test.Len())
	}
	right := 0
	for i, row := range rows {
		if row[0] != strconv.Itoa(i) || row[1] != m.Classes[want[i]] {
			t.Errorf("row %d: index %s, class %s; want %d, %s as Classify", i, row[0], row[1], i, m.Classes[want[i]])
		}
		if row[1] == test.Classes[test.Labels[i]] {
			right++
		}
		for j, p := range probs.Float32s()[i*k : (i+1)*k] {
			if w := strconv.FormatFloat(float64(p), 'g', -1, 32); row[2+j] != w {
				t.Errorf("row %d: p%d = %s, want %s as Predict", i, j, row[2+j], w)
			}
		}
	}
	if got := float64(right) / float64(len(rows)); got != acc {
		t.Errorf("predict is right on %d of %d rows, %v; eval's accuracy is %v", right, len(rows), got, acc)
	}
}

// TestPredictAgreesWithEval trains the shipped configs/mlp.toml, then
// predicts the test split's raw rows (pixel counts 0..16), with and without
// a header and the label column, to a file and to stdout.
func TestPredictAgreesWithEval(t *testing.T) {
	dir := t.TempDir()
	trainIn(t, dir, shippedConfig(t, "mlp.toml"))
	acc := evalAccuracy(t, dir)
	m, err := model.Load(filepath.Join(dir, "checkpoints"))
	if err != nil {
		t.Fatal(err)
	}
	digits, err := dataset.Digits()
	if err != nil {
		t.Fatal(err)
	}
	_, test, err := dataset.Split(digits, m.Data.TestFraction, m.Data.Seed)
	if err != nil {
		t.Fatal(err)
	}
	labelled := digitsCSV(t, t.TempDir(), test)
	lines := strings.Split(strings.TrimSuffix(readText(t, labelled), "\n"), "\n")
	bare := make([]string, len(lines)-1) // no header, no label
	for i, l := range lines[1:] {
		bare[i] = l[:strings.LastIndexByte(l, ',')]
	}
	plain := writeText(t, filepath.Join(t.TempDir(), "rows.txt"), strings.Join(bare, "\n")+"\n")
	var first string
	for _, input := range []string{labelled, plain} {
		out := filepath.Join(t.TempDir(), "predictions.csv")
		r := runSub("predict", "--checkpoint", filepath.Join(dir, "checkpoints"), "--input", input, "--output", out)
		if r.code != 0 || r.stdout != "" {
			t.Fatalf("predict %s: exit %d, stdout %q, stderr:\n%s", input, r.code, r.stdout, r.stderr)
		}
		text := readText(t, out)
		header, rows := predictions(t, text)
		if strings.Join(header, ",") != "index,class,p0,p1,p2,p3,p4,p5,p6,p7,p8,p9" {
			t.Errorf("header %v", header)
		}
		checkAgreement(t, m, test, rows, acc)
		if first == "" {
			first = text
		} else if text != first {
			t.Errorf("predict on %s wrote other predictions than on %s", input, labelled)
		}
	}
	if r := runSub("predict", "--checkpoint", filepath.Join(dir, "checkpoints"), "--input", plain); r.code != 0 || r.stdout != first {
		t.Errorf("predict to stdout: exit %d, and its output differs from the file's: %q", r.code, r.stderr)
	}
}

func readText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// idxFile returns an IDX image file (magic 2051) of n h×w images.
func idxFile(n, h, w int, pixels []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, 2051)
	for _, d := range []int{n, h, w} {
		b = binary.BigEndian.AppendUint32(b, uint32(d))
	}
	return append(b, pixels...)
}

// TestPredictIDX trains on a small MNIST-like IDX set, then predicts its
// test images file: each image's features are training's to the bit, so
// the classes agree with eval's accuracy exactly, gzip-compressed or not.
func TestPredictIDX(t *testing.T) {
	const h, w = 6, 5
	rng := rand.New(rand.NewPCG(8, 9))
	set := func(n int) (images, labels []byte) {
		images, labels = make([]byte, n*h*w), make([]byte, n)
		for i := range n {
			labels[i] = byte(rng.IntN(10))
			for j := range h * w {
				p := rng.IntN(120)
				if j%10 == int(labels[i]) { // the class lights its own pixels
					p += 120
				}
				images[i*h*w+j] = byte(p)
			}
		}
		return images, labels
	}
	data := t.TempDir()
	for _, f := range []struct {
		images, labels string
		n              int
	}{{dataset.TrainImagesFile, dataset.TrainLabelsFile, 400}, {dataset.TestImagesFile, dataset.TestLabelsFile, 100}} {
		images, labels := set(f.n)
		writeText(t, filepath.Join(data, f.images), string(gzipped(t, idxFile(f.n, h, w, images))))
		writeText(t, filepath.Join(data, f.labels), string(gzipped(t, append(binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, 2049), uint32(f.n)), labels...))))
		if f.n == 100 {
			writeText(t, filepath.Join(data, "t10k-images.idx3-ubyte"), string(idxFile(f.n, h, w, images)))
		}
	}
	dir := t.TempDir()
	trainIn(t, dir, strings.Replace(baseConfig, `name = "digits"`, `name = "mnist"`+"\npath = \""+data+"\"", 1))
	acc := evalAccuracy(t, dir)
	m, err := model.Load(filepath.Join(dir, "checkpoints"))
	if err != nil {
		t.Fatal(err)
	}
	_, test, err := dataset.LoadIDX(data, "mnist")
	if err != nil {
		t.Fatal(err)
	}
	for _, input := range []string{filepath.Join(data, dataset.TestImagesFile), filepath.Join(data, "t10k-images.idx3-ubyte")} {
		r := runSub("predict", "--checkpoint", filepath.Join(dir, "checkpoints"), "--input", input)
		if r.code != 0 {
			t.Fatalf("predict %s: exit %d:\n%s", input, r.code, r.stderr)
		}
		_, rows := predictions(t, r.stdout)
		checkAgreement(t, m, test, rows, acc)
	}
}

func gzipped(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// digitImage renders 8×8 pixel counts (0..16) as a grey image of 8·scale
// pixels a side, each count a scale×scale block of level round(count·255/16).
func digitImage(counts []float32, scale int) *image.Gray {
	img := image.NewGray(image.Rect(0, 0, 8*scale, 8*scale))
	for y := range 8 * scale {
		for x := range 8 * scale {
			img.SetGray(x, y, color.Gray{uint8(math.Round(float64(counts[y/scale*8+x/scale]) * 255 / 16))})
		}
	}
	return img
}

func writePNG(t *testing.T, path string, img image.Image) string {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return writeText(t, path, b.String())
}

// TestPredictPNG renders test digits as PNG images, 8×8 and 32×32, grey and
// colour: each predicts the class Classify gives the digit's raw row.
func TestPredictPNG(t *testing.T) {
	dir := t.TempDir()
	trainIn(t, dir, baseConfig)
	ck := filepath.Join(dir, "checkpoints")
	m, err := model.Load(ck)
	if err != nil {
		t.Fatal(err)
	}
	digits, _ := dataset.Digits()
	_, test, _ := dataset.Split(digits, m.Data.TestFraction, m.Data.Seed)
	pngs := t.TempDir()
	for i := range 12 {
		counts := slices.Clone(test.X.Data32()[i*64 : (i+1)*64])
		for j := range counts {
			counts[j] *= 16
		}
		x, err := m.Prepare(tensor.FromFloat32s(counts, 1, 64))
		if err != nil {
			t.Fatal(err)
		}
		want, _ := m.Classify(x)
		big := digitImage(counts, 4)
		colour := image.NewNRGBA(big.Bounds()) // grey pixels in an RGB file
		for y := range 32 {
			for x := range 32 {
				colour.Set(x, y, big.At(x, y))
			}
		}
		for _, img := range []struct {
			name string
			img  image.Image
		}{{"8x8", digitImage(counts, 1)}, {"32x32", big}, {"32x32-rgb", colour}} {
			path := writePNG(t, filepath.Join(pngs, fmt.Sprintf("%d-%s.png", i, img.name)), img.img)
			r := runSub("predict", "--checkpoint", ck, "--input", path)
			if r.code != 0 {
				t.Fatalf("predict %s: exit %d:\n%s", path, r.code, r.stderr)
			}
			header, rows := predictions(t, r.stdout)
			if len(header) != 12 || len(rows) != 1 || rows[0][1] != m.Classes[want[0]] {
				t.Errorf("test row %d as a %s PNG: predicted %v, want class %s as Classify on the raw row", i, img.name, rows, m.Classes[want[0]])
			}
		}
	}
}

func TestPredictBadInput(t *testing.T) {
	dir := t.TempDir()
	trainIn(t, dir, baseConfig, "--set", "train.epochs=1")
	ck := filepath.Join(dir, "checkpoints")
	old := rewriteCheckpoint(t, ck, nil)
	in := t.TempDir()
	row := strings.TrimSuffix(strings.Repeat("1,", 64), ",")
	wide := writeText(t, filepath.Join(in, "inputs.csv"), strings.Repeat(row+"\n", 6)+row[2:]+"\n")
	var good bytes.Buffer
	png.Encode(&good, image.NewGray(image.Rect(0, 0, 8, 8)))
	truncated := writeText(t, filepath.Join(in, "cut.png"), good.String()[:good.Len()/2])
	text := writeText(t, filepath.Join(in, "text.png"), "not an image\n")
	csvModel := rewriteCheckpoint(t, ck, func(d *model.Description) {
		d.Sample = []int{64}
		d.Input = model.Input{Data: "csv", Divide: 1, Mean: make([]float64, 64), Std: make([]float64, 64)}
		d.Data = nil
	})
	digit := writePNG(t, filepath.Join(in, "digit.png"), image.NewGray(image.Rect(0, 0, 8, 8)))
	out := filepath.Join(in, "out.csv")
	for _, tc := range []struct {
		name string
		args []string
		want string // in the last stderr line
	}{
		{"no checkpoint flag", []string{"--input", wide}, "--checkpoint DIR is required"},
		{"no input flag", []string{"--checkpoint", ck}, "--input FILE is required"},
		{"missing checkpoint", []string{"--checkpoint", filepath.Join(dir, "nowhere"), "--input", wide}, "nowhere: no checkpoint there"},
		{"checkpoint without description", []string{"--checkpoint", old, "--input", wide}, "holds no model description"},
		{"unknown flag", []string{"--checkpoint", ck, "--input", wide, "--bogus"}, "predict: flag provided but not defined: -bogus"},
		{"csv of the wrong width", []string{"--checkpoint", ck, "--input", wide, "--output", out}, wide + ": row 7: 63 values, the model takes 64"},
		{"missing input", []string{"--checkpoint", ck, "--input", filepath.Join(in, "none.csv")}, "none.csv: no such file"},
		{"truncated png", []string{"--checkpoint", ck, "--input", truncated, "--output", out}, truncated + ": reading the PNG image"},
		{"png that is not an image", []string{"--checkpoint", ck, "--input", text}, text + ": reading the PNG image: png: invalid format: not a PNG file"},
		{"image for a csv model", []string{"--checkpoint", csvModel, "--input", digit}, "not grey images"},
		{"output folder missing", []string{"--checkpoint", ck, "--input", digit, "--output", filepath.Join(in, "no", "out.csv")}, "its folder does not exist"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkBadInput(t, runSub(append([]string{"predict"}, tc.args...)...), tc.want)
			if _, err := os.Stat(out); err == nil {
				t.Errorf("a failed predict left %s behind", out)
			}
			if tmp, _ := filepath.Glob(filepath.Join(in, ".tmp-*")); len(tmp) > 0 {
				t.Errorf("a failed predict left %v behind", tmp)
			}
		})
	}
}
