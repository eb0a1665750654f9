package dataset

import (
	"bytes"
	"cmp"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/pipetrain/pipetrain/tensor"
)

// LoadCSV reads a delimited text file with one example per line: numeric feature
// columns and one label column, labelColumn (0-based; negative counts from the end, so
// -1 is the last column).
//
// The delimiter is ',', ';' or a tab, whichever occurs most often outside quotes in the
// first line. The first line is a header if one of its feature fields is not a number;
// header fields may be quoted. Blank lines and lines of spaces are skipped.
//
// If every label is a number, Targets holds the labels as numbers, and Labels indexes
// the distinct values in ascending numeric order, Classes holding their shortest decimal
// forms (so "5" and "5.0" are one class). Otherwise Labels indexes the distinct label
// strings in sorted order, Classes holding the strings, and Targets is nil.
//
// A ragged row, a feature that is not a finite number, an empty label, an empty file or
// a label column out of range is an error naming the file and the 1-based line.
func LoadCSV(path string, labelColumn int) (*Set, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	return parseCSV(path, fileSetName(path), data, labelColumn)
}

// parseCSV parses data as LoadCSV describes; file names the data in errors.
func parseCSV(file, name string, data []byte, labelColumn int) (*Set, error) {
	r, err := newCSVReader(file, data)
	if err != nil {
		return nil, err
	}

	var (
		ncols, label int
		x            []float32
		raw          []string // label field of each row
		rows         int
	)
	for {
		rec, line, err := readRecord(r, file)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if ncols == 0 {
			ncols = len(rec)
			label = labelColumn
			if label < 0 {
				label += ncols
			}
			if label < 0 || label >= ncols {
				return nil, fmt.Errorf("dataset: %s: line %d: label column %d is out of range for %d columns", file, line, labelColumn, ncols)
			}
			if ncols < 2 {
				return nil, fmt.Errorf("dataset: %s: line %d: one column leaves no feature columns", file, line)
			}
			if isHeader(rec, label) {
				continue
			}
		}
		if len(rec) != ncols {
			return nil, fmt.Errorf("dataset: %s: line %d: %d fields, want %d", file, line, len(rec), ncols)
		}
		for j, s := range rec {
			if j == label {
				s = strings.TrimSpace(s)
				if s == "" {
					return nil, fmt.Errorf("dataset: %s: line %d: column %d: empty label", file, line, j+1)
				}
				raw = append(raw, s)
				continue
			}
			v, err := parseNumber(s)
			if err != nil {
				l, _ := r.FieldPos(j)
				return nil, fmt.Errorf("dataset: %s: line %d: column %d: %v", file, l, j+1, err)
			}
			x = append(x, v)
		}
		rows++
	}
	if rows == 0 {
		return nil, fmt.Errorf("dataset: %s: no data rows", file)
	}
	f := ncols - 1
	s := &Set{Name: name, X: tensor.Wrap32(x, rows, f), Features: f}
	s.Labels, s.Classes, s.Targets = encodeLabels(raw)
	return s, nil
}

// newCSVReader returns a reader of the records of data, a delimited text file
// named file, with its delimiter sniffed and any byte-order mark dropped.
func newCSVReader(file string, data []byte) (*csv.Reader, error) {
	data = bytes.TrimPrefix(data, []byte("\uFEFF"))
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("dataset: %s: empty file", file)
	}
	r := csv.NewReader(bytes.NewReader(data))
	r.Comma = sniffDelimiter(data)
	r.FieldsPerRecord = -1 // the callers check, with a better message
	r.TrimLeadingSpace = true
	r.ReuseRecord = true
	return r, nil
}

// readRecord returns the next record of r that is not a line of spaces, and
// its line; io.EOF after the last.
func readRecord(r *csv.Reader, file string) (rec []string, line int, err error) {
	for {
		rec, err = r.Read()
		if err == io.EOF {
			return nil, 0, err
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return nil, 0, fmt.Errorf("dataset: %s: line %d: %v", file, pe.Line, pe.Err)
			}
			return nil, 0, fmt.Errorf("dataset: %s: %v", file, err)
		}
		if len(rec) != 1 || strings.TrimSpace(rec[0]) != "" {
			line, _ = r.FieldPos(0)
			return rec, line, nil
		}
	}
}

// LoadInputs reads a model's inputs from a delimited text file, one sample a
// row, as LoadCSV reads a training file (the delimiter, an optional header,
// blank lines, finite float32 numbers): each row holds the features, in
// training order, or each row holds them and a label at labelColumn
// (negative counts from the end), which is dropped; the first row says
// which. X is [N, features], the values as they are, and nothing else of
// the set is filled in. A row's number in an error is its line, as a
// spreadsheet numbers rows (a header is row 1):
//
//	dataset: inputs.csv: row 7: 63 values, the model takes 64
func LoadInputs(path string, features, labelColumn int) (*Set, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	r, err := newCSVReader(path, data)
	if err != nil {
		return nil, err
	}
	var (
		x     []float32
		width int
		label = -1 // the label's column, if the rows have one
		first = true
	)
	for {
		rec, line, err := readRecord(r, path)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if first {
			first, width = false, len(rec)
			if width == features+1 {
				if label = labelColumn; label < 0 {
					label += width
				}
				if label < 0 || label >= width {
					return nil, fmt.Errorf("dataset: %s: row %d: label column %d is out of range for %d columns", path, line, labelColumn, width)
				}
			}
			if (width == features || width == features+1) && isHeader(rec, label) {
				continue
			}
		}
		switch {
		case width != features && width != features+1:
			return nil, fmt.Errorf("dataset: %s: row %d: %d values, the model takes %d", path, line, len(rec), features)
		case len(rec) != width && label >= 0:
			return nil, fmt.Errorf("dataset: %s: row %d: %d values, want %d as the first row's (%d features and the label in column %d)", path, line, len(rec), width, features, label+1)
		case len(rec) != width:
			return nil, fmt.Errorf("dataset: %s: row %d: %d values, the model takes %d", path, line, len(rec), features)
		}
		for j, s := range rec {
			if j == label {
				continue
			}
			v, err := parseNumber(s)
			if err != nil {
				l, _ := r.FieldPos(j)
				return nil, fmt.Errorf("dataset: %s: row %d: column %d: %v", path, l, j+1, err)
			}
			x = append(x, v)
		}
	}
	if len(x) == 0 {
		return nil, fmt.Errorf("dataset: %s: no data rows", path)
	}
	return &Set{Name: fileSetName(path), X: tensor.Wrap32(x, len(x)/features, features), Features: features}, nil
}

// parseNumber parses a feature field as a finite float32.
func parseNumber(s string) (float32, error) {
	t := strings.TrimSpace(s)
	v, err := strconv.ParseFloat(t, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	f := float32(v)
	if err != nil || math.IsNaN(v) || math.IsInf(float64(f), 0) {
		return 0, fmt.Errorf("%q is not a finite float32 number", s)
	}
	return f, nil
}

// isHeader reports whether a first record is a header: one of its feature fields is not
// a number.
func isHeader(rec []string, label int) bool {
	for j, s := range rec {
		if j == label {
			continue
		}
		if _, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err != nil && !errors.Is(err, strconv.ErrRange) {
			return true
		}
	}
	return false
}

// encodeLabels turns the label fields into class indices, as LoadCSV describes.
func encodeLabels(raw []string) (labels []int, classes []string, targets *tensor.Tensor) {
	nums := make([]float64, len(raw))
	numeric := true
	for i, s := range raw {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			numeric = false
			break
		}
		nums[i] = v
	}
	if numeric {
		var distinct []float64
		distinct, labels = encode(nums)
		t := make([]float32, len(nums))
		for i, v := range nums {
			t[i] = float32(v)
		}
		classes = make([]string, len(distinct))
		for k, v := range distinct {
			classes[k] = strconv.FormatFloat(v, 'g', -1, 64)
		}
		return labels, classes, tensor.Wrap32(t, len(t), 1)
	}
	classes, labels = encode(raw)
	return labels, classes, nil
}

// encode returns the distinct values of xs in sorted order and the index
// of each x among them.
func encode[T cmp.Ordered](xs []T) (distinct []T, codes []int) {
	distinct = slices.Clone(xs)
	slices.Sort(distinct)
	distinct = slices.Compact(distinct)
	codes = make([]int, len(xs))
	for i, x := range xs {
		codes[i], _ = slices.BinarySearch(distinct, x)
	}
	return distinct, codes
}

// sniffDelimiter returns whichever of ',', ';' and '\t' occurs most often outside quotes
// in the first non-blank line, preferring ',' on a tie.
func sniffDelimiter(data []byte) rune {
	counts := map[byte]int{}
	quoted, seen := false, false
	for _, c := range data {
		if c == '\n' && !quoted {
			if seen {
				break
			}
			continue
		}
		switch {
		case c == '"':
			quoted = !quoted
		case !quoted && (c == ',' || c == ';' || c == '\t'):
			counts[c]++
		}
		if c != '\r' && c != ' ' {
			seen = true
		}
	}
	best := byte(',')
	for _, c := range []byte{';', '\t'} {
		if counts[c] > counts[best] {
			best = c
		}
	}
	return rune(best)
}
