package dataset

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"fmt"
	"io"
	"slices"
)

//go:embed data/digits.csv.gz
var digitsGz []byte

// Digits returns the 8x8 handwritten digits set embedded in the package: 1797 rows of 64
// features, the pixel counts 0..16 of an 8x8 image in row-major order scaled to [0, 1],
// and labels 0..9 (Classes "0" to "9"). It has no test split of its own; use Split.
// Each call returns a new Set the caller owns.
//
// The data is the test set of the UCI "Optical Recognition of Handwritten Digits" data
// set (E. Alpaydin, C. Kaynak, 1998), licensed CC BY 4.0, as shipped by scikit-learn.
func Digits() (*Set, error) {
	zr, err := gzip.NewReader(bytes.NewReader(digitsGz))
	if err != nil {
		return nil, fmt.Errorf("dataset: embedded digits: %v", err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("dataset: embedded digits: %v", err)
	}
	s, err := parseCSV("embedded digits.csv", "digits", data, -1)
	if err != nil {
		return nil, err
	}
	if s.Features != 64 || !slices.Equal(s.Classes, digitClasses(10)) {
		return nil, fmt.Errorf("dataset: embedded digits: %d features and classes %v, want 64 and 0..9", s.Features, s.Classes)
	}
	s.Targets = nil
	s.Shape = []int{1, 8, 8} // 8×8 grey images, one channel
	x := s.X.Data32()
	for i, v := range x {
		if v < 0 || v > 16 {
			return nil, fmt.Errorf("dataset: embedded digits: row %d: pixel %v is outside 0..16", i/64+1, v)
		}
		x[i] = v / 16
	}
	return s, nil
}
