package dataset

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestLoadCSVIris(t *testing.T) {
	path := filepath.Join("testdata", "iris.csv") // small: kept with the tests
	s, err := LoadCSV(path, -1)
	if err != nil {
		t.Fatalf("LoadCSV(%s, -1): %v", path, err)
	}
	if got, want := s.X.Shape(), []int{150, 4}; !slices.Equal(got, want) {
		t.Errorf("iris X shape = %v, want %v", got, want)
	}
	if want := []string{"setosa", "versicolor", "virginica"}; !slices.Equal(s.Classes, want) {
		t.Errorf("iris classes = %v, want %v", s.Classes, want)
	}
	if got, want := labelCounts(s), []int{50, 50, 50}; !slices.Equal(got, want) {
		t.Errorf("iris label counts = %v, want %v", got, want)
	}
	if s.Targets != nil || s.Name != "iris" {
		t.Errorf("iris targets = %v, name %q, want nil, %q", s.Targets, s.Name, "iris")
	}
	// Row 1: 5.1,3.5,1.4,0.2,setosa.
	if got, want := s.X.Data32()[:4], []float32{5.1, 3.5, 1.4, 0.2}; !slices.Equal(got, want) || s.Labels[0] != 0 {
		t.Errorf("iris row 0 = %v label %d, want %v label 0", got, s.Labels[0], want)
	}
}

func TestLoadCSVWineQuality(t *testing.T) {
	dir := needData(t, "wine-quality")
	tests := []struct {
		file   string
		rows   int
		counts []int
	}{
		{"winequality-red.csv", 1599, []int{10, 53, 681, 638, 199, 18}},
		{"winequality-white.csv", 4898, []int{20, 163, 1457, 2198, 880, 175, 5}},
	}
	for _, tc := range tests {
		s, err := LoadCSV(filepath.Join(dir, tc.file), -1)
		if err != nil {
			t.Errorf("LoadCSV(%s, -1): %v", tc.file, err)
			continue
		}
		if got, want := s.X.Shape(), []int{tc.rows, 11}; !slices.Equal(got, want) {
			t.Errorf("%s X shape = %v, want %v", tc.file, got, want)
		}
		if got := labelCounts(s); !slices.Equal(got, tc.counts) {
			t.Errorf("%s label counts = %v, want %v", tc.file, got, tc.counts)
		}
		want := []string{"3", "4", "5", "6", "7", "8", "9"}[:len(tc.counts)]
		if !slices.Equal(s.Classes, want) {
			t.Errorf("%s classes = %v, want %v", tc.file, s.Classes, want)
		}
		if s.Targets == nil || !slices.Equal(s.Targets.Shape(), []int{tc.rows, 1}) {
			t.Fatalf("%s targets = %v, want shape [%d 1]", tc.file, s.Targets, tc.rows)
		}
		// The first row of both files has quality 5 or 6; the target is the number itself.
		if got, want := s.Targets.At(0, 0), float64(s.Classes[s.Labels[0]][0]-'0'); got != want {
			t.Errorf("%s target 0 = %v, want %v (class %q)", tc.file, got, want, s.Classes[s.Labels[0]])
		}
	}
}

func labelCounts(s *Set) []int {
	c := make([]int, len(s.Classes))
	for _, l := range s.Labels {
		c[l]++
	}
	return c
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadCSVFormats(t *testing.T) {
	tests := []struct {
		name        string
		content     string
		labelColumn int
		wantX       []float32
		wantLabels  []int
		wantClasses []string
		wantTargets []float32 // nil: no targets
	}{
		{"header comma", "a,b,y\n1,2,x\n3,4,w\n", -1,
			[]float32{1, 2, 3, 4}, []int{1, 0}, []string{"w", "x"}, nil},
		{"no header", "1,2,x\n3,4,w\n", 2,
			[]float32{1, 2, 3, 4}, []int{1, 0}, []string{"w", "x"}, nil},
		{"semicolon quoted header", "\"fixed acidity\";\"pH\";\"quality\"\n7.4;3.51;5\n7.8;3.2;6\n6.1;3;5.0\n", -1,
			[]float32{7.4, 3.51, 7.8, 3.2, 6.1, 3}, []int{0, 1, 0}, []string{"5", "6"}, []float32{5, 6, 5}},
		{"label first", "label,p1,p2\n10,0.5,1e2\n-2.5,-1,+3\n", 0,
			[]float32{0.5, 100, -1, 3}, []int{1, 0}, []string{"-2.5", "10"}, []float32{10, -2.5}},
		{"crlf, blank lines and spaces", "  \n1, 2, a\r\n\r\n \r\n 3 ,4, b \r\n", -1,
			[]float32{1, 2, 3, 4}, []int{0, 1}, []string{"a", "b"}, nil},
		{"bom and tabs", "\uFEFFx\ty\tz\n1\t2\tc\n", -1,
			[]float32{1, 2}, []int{0}, []string{"c"}, nil},
		{"middle label, quoted commas", "\"f,1\",class,f2\n1,\"a, b\",2\n3,c,4\n", 1,
			[]float32{1, 2, 3, 4}, []int{0, 1}, []string{"a, b", "c"}, nil},
		{"numeric header label only", "f1,f2,9\n1,2,3\n", -1,
			[]float32{1, 2}, []int{0}, []string{"3"}, []float32{3}},
	}
	dir := t.TempDir()
	for i, tc := range tests {
		path := writeFile(t, dir, "f"+string(rune('a'+i))+".csv", tc.content)
		s, err := LoadCSV(path, tc.labelColumn)
		if err != nil {
			t.Errorf("%s: LoadCSV(%q, %d): %v", tc.name, tc.content, tc.labelColumn, err)
			continue
		}
		if got := s.X.Data32(); !slices.Equal(got, tc.wantX) || s.Features != len(tc.wantX)/len(tc.wantLabels) {
			t.Errorf("%s: LoadCSV(%q) X = %v (%d features), want %v", tc.name, tc.content, got, s.Features, tc.wantX)
		}
		if !slices.Equal(s.Labels, tc.wantLabels) || !slices.Equal(s.Classes, tc.wantClasses) {
			t.Errorf("%s: LoadCSV(%q) labels %v classes %q, want %v %q", tc.name, tc.content, s.Labels, s.Classes, tc.wantLabels, tc.wantClasses)
		}
		switch {
		case tc.wantTargets == nil && s.Targets != nil:
			t.Errorf("%s: LoadCSV(%q) targets = %v, want nil", tc.name, tc.content, s.Targets)
		case tc.wantTargets != nil && (s.Targets == nil || !slices.Equal(s.Targets.Data32(), tc.wantTargets)):
			t.Errorf("%s: LoadCSV(%q) targets = %v, want %v", tc.name, tc.content, s.Targets, tc.wantTargets)
		}
	}
}

func TestLoadCSVErrors(t *testing.T) {
	tests := []struct {
		name        string
		content     string
		labelColumn int
		want        string // the error after "dataset: <path>: "
	}{
		{"ragged", "a,b,c\n1,2,x\n1,2,3,y\n", -1, "line 3: 4 fields, want 3"},
		{"short row", "1,2,x\n3,y\n", -1, "line 2: 2 fields, want 3"},
		{"not a number", "a,b,c,d\n1,2,3,x\n1,2,3,x\n1,2,3,x\n1,2,3,x\n1,2,3,x\n1,2,abc,x\n", -1, `line 7: column 3: "abc" is not a number`},
		{"empty feature", "1,2,x\n1,,x\n", -1, `line 2: column 2: "" is not a number`},
		{"nan", "1,2,x\nNaN,2,x\n", -1, `line 2: column 1: "NaN" is not a finite float32 number`},
		{"overflow float32", "1,2,x\n1e39,2,x\n", -1, `line 2: column 1: "1e39" is not a finite float32 number`},
		{"empty label", "1,2,x\n1,2, \n", -1, "line 2: column 3: empty label"},
		{"empty file", "", -1, "empty file"},
		{"blank file", "\n \n", -1, "empty file"},
		{"header only", "a,b,c\n", -1, "no data rows"},
		{"label column too large", "1,2,x\n", 3, "line 1: label column 3 is out of range for 3 columns"},
		{"label column too negative", "1,2,x\n", -4, "line 1: label column -4 is out of range for 3 columns"},
		{"one column", "x\ny\n", -1, "line 1: one column leaves no feature columns"},
		{"bad quote", "1,2,x\n1,2\"3,x\n", -1, "line 2: bare \" in non-quoted-field"},
	}
	dir := t.TempDir()
	for i, tc := range tests {
		path := writeFile(t, dir, "e"+string(rune('a'+i))+".csv", tc.content)
		s, err := LoadCSV(path, tc.labelColumn)
		want := "dataset: " + path + ": " + tc.want
		if err == nil || err.Error() != want {
			t.Errorf("%s: LoadCSV(%q, %d) = %v, %v; want error %q", tc.name, tc.content, tc.labelColumn, s, err, want)
		}
	}
	_, err := LoadCSV(filepath.Join(dir, "missing.csv"), -1)
	if !errors.Is(err, fs.ErrNotExist) || !strings.HasPrefix(err.Error(), "dataset: ") {
		t.Errorf("LoadCSV(missing.csv) error = %v, want a dataset: error wrapping fs.ErrNotExist", err)
	}
}

func TestLoadInputs(t *testing.T) {
	tests := []struct {
		name        string
		content     string
		labelColumn int
		want        []float32 // nil: an error
		err         string    // the error after "dataset: <path>: "
	}{
		{"bare rows", "1,2,3\n4,5,6\n", -1, []float32{1, 2, 3, 4, 5, 6}, ""},
		{"header", "a,b,c\n1,2,3\n", -1, []float32{1, 2, 3}, ""},
		{"label last, dropped", "a,b,c,y\n1,2,3,x\n4,5,6,7\n", -1, []float32{1, 2, 3, 4, 5, 6}, ""},
		{"label first", "9,1,2,3\n", 0, []float32{1, 2, 3}, ""},
		{"semicolons and blank lines", "1;2;3\n\n  \n4;5;6\n", -1, []float32{1, 2, 3, 4, 5, 6}, ""},
		{"short row", "1,2,3\n1,2,3\n1,2\n", -1, nil, "row 3: 2 values, the model takes 3"},
		{"short row after a header", "a,b,c\n1,2\n", -1, nil, "row 2: 2 values, the model takes 3"},
		{"first row too wide", "1,2,3,4,5\n", -1, nil, "row 1: 5 values, the model takes 3"},
		{"short row among labelled ones", "1,2,3,x\n1,2,3\n", -1, nil, "row 2: 3 values, want 4 as the first row's (3 features and the label in column 4)"},
		{"not a number", "1,2,3\n1,x,3\n", -1, nil, `row 2: column 2: "x" is not a number`},
		{"label column out of range", "1,2,3,4\n", 5, nil, "row 1: label column 5 is out of range for 4 columns"},
		{"header only", "a,b,c\n", -1, nil, "no data rows"},
		{"empty", "", -1, nil, "empty file"},
	}
	dir := t.TempDir()
	for i, tc := range tests {
		path := writeFile(t, dir, "i"+string(rune('a'+i))+".csv", tc.content)
		s, err := LoadInputs(path, 3, tc.labelColumn)
		if tc.want == nil {
			if want := "dataset: " + path + ": " + tc.err; err == nil || err.Error() != want {
				t.Errorf("%s: LoadInputs(%q, 3, %d) error %v, want %q", tc.name, tc.content, tc.labelColumn, err, want)
			}
			continue
		}
		if err != nil || !slices.Equal(s.X.Data32(), tc.want) || s.X.Dim(1) != 3 {
			t.Errorf("%s: LoadInputs(%q, 3, %d) = %v, %v, want %v", tc.name, tc.content, tc.labelColumn, s, err, tc.want)
		}
	}
}
