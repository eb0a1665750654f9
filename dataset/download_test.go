package dataset

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// mirror is an httptest server serving the shared MNIST files, with a hook to
// misbehave. It counts the requests for each file.
type mirror struct {
	*httptest.Server
	mu    sync.Mutex
	hits  map[string]int
	files map[string][]byte
}

// newMirror starts a mirror; serve, if not nil, may answer a request itself (the
// attempt counts from 1 for each file) and return true.
func newMirror(t *testing.T, serve func(w http.ResponseWriter, name string, data []byte, attempt int) bool) *mirror {
	t.Helper()
	dir := needData(t, "mnist")
	m := &mirror{hits: map[string]int{}, files: map[string][]byte{}}
	for _, name := range IDXFiles {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		m.files[name] = b
	}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(r.URL.Path, "/mnist/")
		m.mu.Lock()
		m.hits[name]++
		attempt := m.hits[name]
		m.mu.Unlock()
		data, ok := m.files[name]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if serve != nil && serve(w, name, data, attempt) {
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		w.Write(data)
	}))
	t.Cleanup(m.Close)
	return m
}

func (m *mirror) hitsFor(name string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.hits[name]
}

func (m *mirror) requests() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, h := range m.hits {
		n += h
	}
	return n
}

func fastOptions(dir string, mirrors ...*mirror) DownloadOptions {
	opts := DownloadOptions{Dir: dir, Retries: 1, Backoff: time.Millisecond}
	for _, m := range mirrors {
		opts.BaseURLs = append(opts.BaseURLs, m.URL+"/mnist/")
	}
	return opts
}

// checkDir checks which of the four files are in dir with the right checksum, and that
// no temporary file is left behind.
func checkDir(t *testing.T, dir string, want []string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("folder holds %v, want %v", got, want)
	}
	for _, rf := range remoteSets["mnist"].files {
		for _, name := range want {
			if name == rf.name {
				if err := verifyFile(filepath.Join(dir, name), rf); err != nil {
					t.Errorf("%s: %v", name, err)
				}
			}
		}
	}
}

var allFiles = []string{TestImagesFile, TestLabelsFile, TrainImagesFile, TrainLabelsFile} // sorted

func TestDownloadGood(t *testing.T) {
	m := newMirror(t, nil)
	dir := filepath.Join(t.TempDir(), "cache", "mnist")
	var logs []string
	opts := fastOptions(dir, m)
	opts.Logf = func(format string, args ...any) { logs = append(logs, format) }
	got, err := Download(context.Background(), "mnist", opts)
	if err != nil || got != dir {
		t.Fatalf("Download = %q, %v; want %q, nil", got, err, dir)
	}
	checkDir(t, dir, allFiles)
	if n := m.requests(); n != 4 || len(logs) != 4 {
		t.Errorf("Download made %d requests and %d log lines, want 4 and 4", n, len(logs))
	}

	// A second download finds the files and fetches nothing.
	if _, err := Download(context.Background(), "mnist", fastOptions(dir, m)); err != nil {
		t.Fatalf("second Download: %v", err)
	}
	if n := m.requests(); n != 4 {
		t.Errorf("second Download made %d new requests, want 0", n-4)
	}

	// A damaged file is fetched again, and only it.
	p := filepath.Join(dir, TestLabelsFile)
	if err := os.WriteFile(p, []byte("damaged"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Download(context.Background(), "mnist", fastOptions(dir, m)); err != nil {
		t.Fatalf("Download over a damaged file: %v", err)
	}
	checkDir(t, dir, allFiles)
	if n := m.hitsFor(TestLabelsFile); n != 2 || m.requests() != 5 {
		t.Errorf("after damaging %s: %d requests for it, %d in all; want 2 and 5", TestLabelsFile, n, m.requests())
	}
}

func TestDownloadFailures(t *testing.T) {
	tests := []struct {
		name      string
		serve     func(w http.ResponseWriter, name string, data []byte, attempt int) bool
		want      []string // substrings of the error
		wantFiles []string // left in the folder
		wantHits  int      // requests for t10k-labels
	}{
		{
			name: "corrupt",
			serve: func(w http.ResponseWriter, name string, data []byte, attempt int) bool {
				if name != TestLabelsFile {
					return false
				}
				bad := []byte(string(data))
				bad[100] ^= 1
				w.Write(bad)
				return true
			},
			want:      []string{"t10k-labels-idx1-ubyte.gz: every mirror failed: GET ", "checksum mismatch: sha256 "},
			wantFiles: []string{TestImagesFile, TrainImagesFile, TrainLabelsFile},
			wantHits:  1, // a wrong checksum is not retried on the same mirror
		},
		{
			name: "truncated with content length",
			serve: func(w http.ResponseWriter, name string, data []byte, attempt int) bool {
				if name != TestLabelsFile {
					return false
				}
				w.Header().Set("Content-Length", strconv.Itoa(len(data)))
				w.Write(data[:len(data)/2])
				return true
			},
			want:      []string{"after 2271 of 4542 bytes: unexpected EOF"},
			wantFiles: []string{TestImagesFile, TrainImagesFile, TrainLabelsFile},
			wantHits:  2, // retried once
		},
		{
			name: "truncated without content length",
			serve: func(w http.ResponseWriter, name string, data []byte, attempt int) bool {
				if name != TestLabelsFile {
					return false
				}
				w.(http.Flusher).Flush() // chunked: the client cannot know the length
				w.Write(data[:1000])
				return true
			},
			want:      []string{"truncated: got 1000 bytes, want 4542"},
			wantFiles: []string{TestImagesFile, TrainImagesFile, TrainLabelsFile},
			wantHits:  2,
		},
		{
			name: "longer",
			serve: func(w http.ResponseWriter, name string, data []byte, attempt int) bool {
				if name != TestLabelsFile {
					return false
				}
				w.Write(append([]byte(string(data)), 0))
				return true
			},
			want:      []string{"longer than the 4542 bytes expected"},
			wantFiles: []string{TestImagesFile, TrainImagesFile, TrainLabelsFile},
			wantHits:  1,
		},
		{
			name: "server error",
			serve: func(w http.ResponseWriter, name string, data []byte, attempt int) bool {
				if name != TrainImagesFile {
					return false
				}
				http.Error(w, "boom", http.StatusServiceUnavailable)
				return true
			},
			want:      []string{"train-images-idx3-ubyte.gz: every mirror failed: ", "HTTP 503 Service Unavailable (2 attempts)"}, // the same failure told once
			wantFiles: nil,                                                                                                        // the first file failed, so nothing was fetched
			wantHits:  0,
		},
	}
	for _, tc := range tests {
		m := newMirror(t, tc.serve)
		dir := t.TempDir()
		_, err := Download(context.Background(), "mnist", fastOptions(dir, m))
		if err == nil {
			t.Errorf("%s: Download succeeded, want an error", tc.name)
			continue
		}
		t.Logf("%s: %v", tc.name, err)
		for _, w := range append(tc.want, "dataset: download mnist: ") {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: Download error = %v, want it to contain %q", tc.name, err, w)
			}
		}
		checkDir(t, dir, tc.wantFiles)
		if got := m.hitsFor(TestLabelsFile); got != tc.wantHits {
			t.Errorf("%s: %d requests for %s, want %d", tc.name, got, TestLabelsFile, tc.wantHits)
		}
	}
}

func TestDownloadMirrors(t *testing.T) {
	tests := []struct {
		name         string
		first        func(w http.ResponseWriter, name string, data []byte, attempt int) bool
		wantFirstHit int // requests for train-images at the first mirror
	}{
		{"not found", func(w http.ResponseWriter, _ string, _ []byte, _ int) bool {
			http.NotFound(w, nil)
			return true
		}, 1},
		{"server error", func(w http.ResponseWriter, _ string, _ []byte, _ int) bool {
			http.Error(w, "down", http.StatusInternalServerError)
			return true
		}, 2},
		{"corrupt", func(w http.ResponseWriter, _ string, data []byte, _ int) bool {
			w.Write(data[1:])
			return true
		}, 2}, // a short body may be a cut connection, so it is retried
		{"transient", func(w http.ResponseWriter, _ string, _ []byte, attempt int) bool {
			if attempt == 1 {
				http.Error(w, "busy", http.StatusTooManyRequests)
				return true
			}
			return false
		}, 2},
	}
	for _, tc := range tests {
		first := newMirror(t, tc.first)
		second := newMirror(t, nil)
		dir := t.TempDir()
		if _, err := Download(context.Background(), "mnist", fastOptions(dir, first, second)); err != nil {
			t.Errorf("%s: Download: %v", tc.name, err)
			continue
		}
		checkDir(t, dir, allFiles)
		if got := first.hitsFor(TrainImagesFile); got != tc.wantFirstHit {
			t.Errorf("%s: first mirror got %d requests for %s, want %d", tc.name, got, TrainImagesFile, tc.wantFirstHit)
		}
	}

	// A mirror that does not answer at all.
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	good := newMirror(t, nil)
	dir := t.TempDir()
	opts := fastOptions(dir, good)
	opts.BaseURLs = append([]string{deadURL + "/mnist/"}, opts.BaseURLs...)
	if _, err := Download(context.Background(), "mnist", opts); err != nil {
		t.Errorf("closed first mirror: Download: %v", err)
	}
	checkDir(t, dir, allFiles)
}

func TestDownloadBadArguments(t *testing.T) {
	m := newMirror(t, nil)
	tests := []struct {
		name string
		set  string
		ctx  func() context.Context
		want string
	}{
		{"unknown set", "cifar", context.Background, `dataset: cannot download "cifar": want mnist or fashion-mnist`},
		{"canceled", "mnist", func() context.Context {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx
		}, "dataset: download mnist: train-images-idx3-ubyte.gz: context canceled"},
	}
	for _, tc := range tests {
		dir := t.TempDir()
		_, err := Download(tc.ctx(), tc.set, fastOptions(dir, m))
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: Download(%q) error = %v, want %q", tc.name, tc.set, err, tc.want)
		}
		if tc.name == "canceled" && !errors.Is(err, context.Canceled) {
			t.Errorf("%s: error %v does not wrap context.Canceled", tc.name, err)
		}
		checkDir(t, dir, nil)
	}
}

func TestCacheDir(t *testing.T) {
	base, err := os.UserCacheDir()
	if err != nil {
		t.Skipf("no user cache folder: %v", err)
	}
	got, err := CacheDir("mnist")
	if want := filepath.Join(base, "pipetrain", "mnist"); err != nil || got != want {
		t.Errorf("CacheDir(mnist) = %q, %v; want %q", got, err, want)
	}
}

// TestAttempts: a failure repeated at once is told once, with its count.
func TestAttempts(t *testing.T) {
	var a attempts
	for _, m := range []string{"GET x: 503", "GET x: 503", "GET x: 503", "GET x: EOF", "GET y: 503"} {
		a.add(m)
	}
	if got, want := a.String(), "GET x: 503 (3 attempts); GET x: EOF; GET y: 503"; got != want {
		t.Errorf("attempts: %q, want %q", got, want)
	}
}
