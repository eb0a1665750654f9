package dataset

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParseCSV: the CSV reader never panics, and what it accepts is
// consistent: a row of X per label or target, labels within Classes.
// Run it with go test -fuzz=FuzzParseCSV ./dataset/ (bench/fuzz.sh).
func FuzzParseCSV(f *testing.F) {
	for _, seed := range []string{
		"a,b,label\n1,2,x\n3,4,y\n", "1;2;3\n4;5;6\n", "1\t2\t0.5\n3\t4\t1.5\n", "\uFEFFf,g\n1,0\n",
		"1,2,3\n4,5\n", "1,nan,0\n2,inf,1\n", ",,\n", "\"a\"\"\",1\n2,3\n", "1e40,2,1\n",
	} {
		f.Add([]byte(seed), -1)
		f.Add([]byte(seed), 0)
	}
	f.Fuzz(func(t *testing.T, data []byte, label int) {
		s, err := parseCSV("fuzz.csv", "fuzz", data, label)
		if err != nil {
			return
		}
		n := s.Len()
		if s.X.Dim(1) != s.Features || s.Features < 1 {
			t.Fatalf("X %v with %d features", s.X.Shape(), s.Features)
		}
		if s.Labels != nil {
			if len(s.Labels) != n {
				t.Fatalf("%d labels for %d rows", len(s.Labels), n)
			}
			for _, l := range s.Labels {
				if l < 0 || l >= len(s.Classes) {
					t.Fatalf("label %d of %d classes", l, len(s.Classes))
				}
			}
		}
		if s.Targets != nil && s.Targets.Dim(0) != n {
			t.Fatalf("%d targets for %d rows", s.Targets.Dim(0), n)
		}
	})
}

// idxFile returns an IDX file of magic and dims with payload, gzipped.
func idxFile(magic uint32, dims []uint32, payload []byte) []byte {
	var raw bytes.Buffer
	binary.Write(&raw, binary.BigEndian, magic)
	for _, d := range dims {
		binary.Write(&raw, binary.BigEndian, d)
	}
	raw.Write(payload)
	var z bytes.Buffer
	w := gzip.NewWriter(&z)
	w.Write(raw.Bytes())
	w.Close()
	return z.Bytes()
}

// FuzzReadIDX: the IDX readers never panic and never return more items
// than the header and the data agree on. The fuzzer mutates whole files,
// gzip included, and, through raw, the uncompressed contents.
func FuzzReadIDX(f *testing.F) {
	f.Add(idxFile(idxImagesMagic, []uint32{2, 2, 3}, make([]byte, 12)), false)
	f.Add(idxFile(idxLabelsMagic, []uint32{3}, []byte{1, 2, 9}), false)
	f.Add(idxFile(idxLabelsMagic, []uint32{3}, []byte{1, 2, 10}), false)
	f.Add([]byte{0, 0, 8, 3, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 2, 5, 6, 7, 8}, true)
	f.Add([]byte{0, 0, 8, 1, 0, 0, 0, 2, 4}, true)
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte, raw bool) {
		path := filepath.Join(dir, "f.gz")
		if raw { // the fuzzer's bytes as the uncompressed file, which predict also reads as it is
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			if s, err := LoadIDXImages(path); err == nil && s.X.Dim(0)*s.Features != s.X.Size() {
				t.Fatalf("LoadIDXImages: X %v for %d features", s.X.Shape(), s.Features)
			}
			var z bytes.Buffer
			w := gzip.NewWriter(&z)
			w.Write(data)
			w.Close()
			data = z.Bytes()
		}
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if x, n, shape, err := readIDXImages(path, false); err == nil {
			if len(shape) != 3 || len(x) != n*shape[1]*shape[2] {
				t.Fatalf("%d pixels for %d images of %v", len(x), n, shape)
			}
			for _, v := range x {
				if v < 0 || v > 1 {
					t.Fatalf("pixel %v outside [0, 1]", v)
				}
			}
		}
		if labels, err := readIDXLabels(path); err == nil {
			for _, l := range labels {
				if l < 0 || l >= idxNumClasses {
					t.Fatalf("label %d", l)
				}
			}
		}
	})
}

// FuzzLoadInputs: the reader of predict's CSV inputs never panics, and what
// it accepts has the width asked for, a row per sample.
func FuzzLoadInputs(f *testing.F) {
	for _, seed := range []string{"1,2,3\n4,5,6\n", "a,b,c\n1,2,3\n", "1,2,3,x\n4,5,6,y\n", "1;2;3\n", "\n\n", "1,2\n3,4,5\n"} {
		f.Add([]byte(seed), uint8(2), int8(-1))
		f.Add([]byte(seed), uint8(2), int8(3))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte, features uint8, label int8) {
		path := filepath.Join(dir, "in.csv")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := LoadInputs(path, int(features)+1, int(label))
		if err != nil {
			return
		}
		if s.Features != int(features)+1 || s.X.Dim(1) != s.Features {
			t.Fatalf("X %v for %d features", s.X.Shape(), int(features)+1)
		}
	})
}
