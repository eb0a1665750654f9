package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/pipetrain/pipetrain/dataset"
	"github.com/pipetrain/pipetrain/model"
	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/tensor"
)

const predictUsage = "usage: train predict --checkpoint DIR --input FILE [--output FILE]"

// predictRows is how many samples predict runs through the model at once.
const predictRows = 256

// runPredict writes what a checkpoint's model predicts for each sample of
// --input as CSV, to stdout or, all or nothing, to --output.
func runPredict(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("predict", flag.ContinueOnError)
	dir := fs.String("checkpoint", "", "a checkpoint folder (step-…), or a checkpoint_dir: its newest")
	input := fs.String("input", "", "the samples: CSV rows, an IDX image file (.gz or not) or a PNG image")
	output := fs.String("output", "", "the CSV file to write (default: stdout)")
	if err := parseFlags(fs, args, predictUsage); err != nil {
		return err
	}
	switch {
	case *dir == "":
		return badInputf("predict: --checkpoint DIR is required")
	case *input == "":
		return badInputf("predict: --input FILE is required")
	}
	if *output != "" {
		if st, err := os.Stat(filepath.Dir(*output)); err != nil || !st.IsDir() {
			return badInputf("predict: --output %s: its folder does not exist", *output)
		}
	}
	m, err := loadModel(*dir)
	if err != nil {
		return err
	}
	if m.IsText() {
		return badInputf("predict: --checkpoint %s holds a language model: train sample writes text with it", m.Checkpoint.Dir)
	}
	raw, err := readInputs(m, *input)
	if err != nil {
		return err
	}
	outs, classes, err := predictAll(ctx, m, raw)
	if err != nil {
		return err
	}
	write := func(w io.Writer) error { return writePredictions(w, m, outs, classes) }
	if *output == "" {
		return write(stdout)
	}
	if err := writeFileAtomic(*output, write); err != nil {
		return fmt.Errorf("predict: --output %s: %v", *output, err)
	}
	return nil
}

// readInputs returns the raw inputs of file, [N, features], as the data set
// held them: CSV rows as they are, images as pixels p in 0..255 became, p/255
// times the description's Divide. The format is the file's extension's
// (.png; .csv, .tsv, .txt), else what its first bytes say.
func readInputs(m *model.Model, file string) (*tensor.Tensor, error) {
	kind, err := inputKind(file)
	if err != nil {
		return nil, err
	}
	if kind == "csv" {
		label := -1 // the digits' embedded file, and the config's default
		if m.Data != nil {
			label = m.Data.LabelColumn
		}
		s, err := dataset.LoadInputs(file, m.Features(), label)
		if err != nil {
			return nil, badInputf("%s", strings.TrimPrefix(err.Error(), "dataset: "))
		}
		return s.X, nil
	}
	if len(m.Sample) != 3 || m.Sample[0] != 1 {
		return nil, badInputf("%s: the model takes samples of shape %v, not grey images: give its inputs as CSV rows", file, m.Sample)
	}
	var img greyImages
	if kind == "png" {
		img, err = readPNG(file)
	} else {
		img, err = readIDX(file)
	}
	if err != nil {
		return nil, err
	}
	raw, err := img.raw(&m.Description)
	if err != nil {
		return nil, badInputf("%s: %v", file, err)
	}
	return raw, nil
}

// inputKind tells the format of an input file: "csv", "png" or "idx".
func inputKind(file string) (string, error) {
	switch strings.ToLower(filepath.Ext(file)) {
	case ".png":
		return "png", nil
	case ".csv", ".tsv", ".txt":
		return "csv", nil
	}
	f, err := os.Open(file)
	if err != nil {
		return "", badInputf("--input: %v", err)
	}
	defer f.Close()
	head := make([]byte, 8)
	n, _ := io.ReadFull(f, head)
	switch head = head[:n]; {
	case bytes.HasPrefix(head, []byte("\x89PNG\r\n\x1a\n")):
		return "png", nil
	case bytes.HasPrefix(head, []byte{0x1f, 0x8b}), bytes.HasPrefix(head, []byte{0, 0, 8, 3}): // gzip; IDX unsigned bytes, 3 dims
		return "idx", nil
	}
	return "csv", nil
}

// readIDX reads an IDX image file as grey images.
func readIDX(file string) (greyImages, error) {
	s, err := dataset.LoadIDXImages(file)
	if err != nil {
		return greyImages{}, badInputf("%s", strings.TrimPrefix(err.Error(), "dataset: "))
	}
	x := s.X.Data32()
	g := make([]float64, len(x))
	for i, v := range x {
		g[i] = float64(v) // p/255 rounded to float32, as training's features
	}
	return greyImages{n: s.Len(), h: s.Shape[1], w: s.Shape[2], grey: g}, nil
}

// predictAll runs the model on raw's rows, predictRows at a time on every
// core, and returns each batch's predictions (probabilities, or values for
// regression) and, for a classifier, each row's class.
func predictAll(ctx context.Context, m *model.Model, raw *tensor.Tensor) ([]*tensor.Tensor, []int, error) {
	n := raw.Dim(0)
	batches := (n + predictRows - 1) / predictRows
	outs := make([]*tensor.Tensor, batches)
	classes := make([]int, n)
	errs := make([]error, batches)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(batches, runtime.GOMAXPROCS(0)) {
		wg.Go(func() {
			for b := int(next.Add(1) - 1); b < batches && ctx.Err() == nil; b = int(next.Add(1) - 1) {
				lo, hi := b*predictRows, min((b+1)*predictRows, n)
				x, err := m.Prepare(nn.Rows(raw, lo, hi))
				if err != nil {
					errs[b] = err
					return
				}
				out, err := m.Outputs(x)
				if err != nil {
					errs[b] = err
					return
				}
				if !m.Regression() {
					copy(classes[lo:hi], nn.Predict(out)) // the outputs' argmax, as Classify and eval
				}
				outs[b] = m.FromOutputs(out)
			}
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		return nil, nil, &exitError{exitInterrupted, fmt.Errorf("predict: %w", ctx.Err())}
	}
	for _, err := range errs {
		if err != nil {
			return nil, nil, fmt.Errorf("predict: %v", err)
		}
	}
	return outs, classes, nil
}

// writePredictions writes the header and a row a sample: index (from 0),
// class and each class's probability for a classifier; index and the
// model's outputs for regression.
func writePredictions(w io.Writer, m *model.Model, outs []*tensor.Tensor, classes []int) error {
	bw := bufio.NewWriter(w)
	shapes, err := nn.OutShapes(m.Layers, m.Sample)
	if err != nil {
		return err // model.Load checked them
	}
	k := tensor.SizeOf(shapes[len(shapes)-1])
	header := []string{"index", "class"}
	switch {
	case m.Regression() && k == 1:
		header = []string{"index", "value"}
	case m.Regression():
		header = header[:1]
		for j := range k {
			header = append(header, "value"+strconv.Itoa(j))
		}
	default:
		for j := range k {
			header = append(header, "p"+strconv.Itoa(j))
		}
	}
	bw.WriteString(strings.Join(header, ",") + "\n")
	var line []byte
	row := 0
	for _, out := range outs {
		v := out.Float32s()
		for i := range out.Dim(0) {
			line = strconv.AppendInt(line[:0], int64(row), 10)
			if !m.Regression() {
				line = append(line, ',')
				line = appendCSVField(line, m.Classes[classes[row]])
			}
			for _, p := range v[i*k : (i+1)*k] {
				line = append(line, ',')
				line = strconv.AppendFloat(line, float64(p), 'g', -1, 32)
			}
			line = append(line, '\n')
			if _, err := bw.Write(line); err != nil {
				return err
			}
			row++
		}
	}
	return bw.Flush()
}

// appendCSVField appends s, quoted if CSV needs it ("T-shirt/top" does not;
// a class named "a, b" does).
func appendCSVField(b []byte, s string) []byte {
	if !strings.ContainsAny(s, ",\"\r\n") && strings.TrimSpace(s) == s {
		return append(b, s...)
	}
	return append(append(append(b, '"'), strings.ReplaceAll(s, `"`, `""`)...), '"')
}
