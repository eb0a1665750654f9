package dataset

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// DownloadOptions tune Download and DownloadShakespeare. The zero value fetches from the
// canonical mirrors into the user's cache folder.
type DownloadOptions struct {
	// Dir is the folder to fetch into; empty means os.UserCacheDir()/pipetrain/<name>.
	Dir string
	// BaseURLs are the mirrors to try, in order, each a folder URL holding the set's
	// files; empty means the canonical mirrors (see Download and DownloadShakespeare).
	BaseURLs []string
	// Client makes the requests; nil means a client with a 10-minute timeout per file.
	Client *http.Client
	// Retries is the number of further attempts at one mirror after a failure that may
	// be transient (a network error, a cut-off body, HTTP 408, 429 or 5xx) before moving
	// to the next mirror. 0 means 2; a negative value means none.
	Retries int
	// Backoff is the wait before the first retry; it doubles after each, up to 30 s.
	// 0 means 500 ms.
	Backoff time.Duration
	// Logf, if not nil, receives one line per fetch, retry and skipped file.
	Logf func(format string, args ...any)
}

type remoteFile struct {
	name   string
	size   int64
	sha256 string
}

type remoteSet struct {
	mirrors []string
	files   []remoteFile
}

// remoteSets are the data sets Download knows, with the published sizes and SHA-256
// sums of their files (the constants torchvision, tensorflow-datasets and gomlx publish).
var remoteSets = map[string]remoteSet{
	"mnist": {
		mirrors: []string{
			"https://ossci-datasets.s3.amazonaws.com/mnist/",
			"https://storage.googleapis.com/cvdf-datasets/mnist/",
		},
		files: []remoteFile{
			{TrainImagesFile, 9912422, "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609"},
			{TrainLabelsFile, 28881, "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c"},
			{TestImagesFile, 1648877, "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6"},
			{TestLabelsFile, 4542, "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6"},
		},
	},
	"fashion-mnist": {
		mirrors: []string{
			"http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/",
		},
		files: []remoteFile{
			{TrainImagesFile, 26421880, "3aede38d61863908ad78613f6a32ed271626dd12800ba2636569512369268a84"},
			{TrainLabelsFile, 29515, "a04f17134ac03560a47e3764e11b92fc97de4d1bfaf8ba1a3aa29af54cc90845"},
			{TestImagesFile, 4422102, "346e55b948d973a97e58d2351dde16a484bd415d4595297633bb08f03db6a073"},
			{TestLabelsFile, 5148, "67da17c76eaffca5446c3361aaab5c3cd6d1c2608764d35dfb1850b086bf8dd5"},
		},
	},
}

// shakespeareSet is tiny Shakespeare, karpathy/char-rnn's data/tinyshakespeare/input.txt
// (the file of nanoGPT's shakespeare_char). It is not in remoteSets: Download returns a
// folder for LoadIDX, DownloadShakespeare a file for LoadText.
var shakespeareSet = remoteSet{
	mirrors: []string{"https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/"},
	files:   []remoteFile{{ShakespeareFile, 1115394, "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"}},
}

var defaultClient = &http.Client{Timeout: 10 * time.Minute}

// CacheDir returns the default download folder of a data set,
// os.UserCacheDir()/pipetrain/<name>.
func CacheDir(name string) (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("dataset: no cache folder for %s: %v", name, err)
	}
	return filepath.Join(base, "pipetrain", name), nil
}

// Download fetches the four IDX files of "mnist" or "fashion-mnist" into a folder and
// returns it, ready for LoadIDX. The canonical mirrors are, for MNIST,
// https://ossci-datasets.s3.amazonaws.com/mnist/ then
// https://storage.googleapis.com/cvdf-datasets/mnist/, and for Fashion-MNIST
// http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/ (plain HTTP; the checksum
// is what makes it safe).
//
// Each file must have its published size and SHA-256 sum. A file already in the folder
// with the right sum is not fetched again. A fetch goes to a temporary file in the same
// folder, which is synced and then renamed into place, so a file under its final name is
// always complete and verified. A failed attempt is retried with a doubling backoff (see
// DownloadOptions) and then the next mirror is tried; a wrong checksum or a client error
// moves to the next mirror at once. The error after the last mirror lists every attempt.
func Download(ctx context.Context, name string, opts DownloadOptions) (dir string, err error) {
	rs, ok := remoteSets[name]
	if !ok {
		return "", fmt.Errorf("dataset: cannot download %q: want mnist or fashion-mnist", name)
	}
	return download(ctx, name, rs, opts)
}

// DownloadShakespeare fetches tiny Shakespeare (ShakespeareFile, 1,115,394 bytes of
// ASCII) into a folder, by default os.UserCacheDir()/pipetrain/tinyshakespeare, and
// returns the file's path, ready for LoadText. The canonical source is
// https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/;
// opts.BaseURLs replaces it with folder URLs holding input.txt. The size and SHA-256
// checks, the cache, the atomic write and the retries are Download's.
func DownloadShakespeare(ctx context.Context, opts DownloadOptions) (path string, err error) {
	dir, err := download(ctx, ShakespeareName, shakespeareSet, opts)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, ShakespeareFile), nil
}

// download fetches rs's files into opts.Dir, or the cache folder of name.
func download(ctx context.Context, name string, rs remoteSet, opts DownloadOptions) (dir string, err error) {
	dir = opts.Dir
	if dir == "" {
		if dir, err = CacheDir(name); err != nil {
			return "", err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("dataset: %w", err)
	}
	mirrors := opts.BaseURLs
	if len(mirrors) == 0 {
		mirrors = rs.mirrors
	}
	d := downloader{opts: opts, client: opts.Client, dir: dir}
	if d.client == nil {
		d.client = defaultClient
	}
	if d.opts.Retries == 0 {
		d.opts.Retries = 2
	}
	if d.opts.Backoff <= 0 {
		d.opts.Backoff = 500 * time.Millisecond
	}
	for _, rf := range rs.files {
		if err := d.fetch(ctx, name, rf, mirrors); err != nil {
			return "", err
		}
	}
	return dir, nil
}

type downloader struct {
	opts   DownloadOptions
	client *http.Client
	dir    string
}

func (d *downloader) logf(format string, args ...any) {
	if d.opts.Logf != nil {
		d.opts.Logf(format, args...)
	}
}

// fetch makes sure rf is in d.dir with the right checksum.
func (d *downloader) fetch(ctx context.Context, set string, rf remoteFile, mirrors []string) error {
	final := filepath.Join(d.dir, rf.name)
	switch err := verifyFile(final, rf); {
	case err == nil:
		d.logf("dataset: %s is present and verified", final)
		return nil
	case !errors.Is(err, os.ErrNotExist):
		d.logf("dataset: fetching %s again: %v", final, err)
	}
	var failures attempts
	for _, base := range mirrors {
		u, err := url.JoinPath(base, rf.name)
		if err != nil {
			failures.add(fmt.Sprintf("mirror %q: %v", base, err))
			continue
		}
		wait := d.opts.Backoff
		for attempt := 0; ; attempt++ {
			d.logf("dataset: fetching %s", u)
			err := d.get(ctx, u, final, rf)
			if err == nil {
				return nil
			}
			if ctx.Err() != nil {
				return fmt.Errorf("dataset: download %s: %s: %w", set, rf.name, ctx.Err())
			}
			failures.add(fmt.Sprintf("GET %s: %v", u, err))
			var fe *fetchError
			if attempt >= d.opts.Retries || errors.As(err, &fe) && !fe.retry {
				break
			}
			d.logf("dataset: GET %s: %v; retrying in %v", u, err, wait)
			if err := sleep(ctx, wait); err != nil {
				return fmt.Errorf("dataset: download %s: %s: %w", set, rf.name, err)
			}
			wait = min(2*wait, 30*time.Second)
		}
	}
	return fmt.Errorf("dataset: download %s: %s: every mirror failed: %s", set, rf.name, failures)
}

// attempts are a download's failures in order, a failure repeated at once
// (the same URL, the same error) told once with its count.
type attempts struct {
	msgs []string
	n    []int
}

func (a *attempts) add(msg string) {
	if k := len(a.msgs) - 1; k >= 0 && a.msgs[k] == msg {
		a.n[k]++
		return
	}
	a.msgs, a.n = append(a.msgs, msg), append(a.n, 1)
}

func (a attempts) String() string {
	parts := make([]string, len(a.msgs))
	for i, m := range a.msgs {
		parts[i] = m
		if a.n[i] > 1 {
			parts[i] += fmt.Sprintf(" (%d attempts)", a.n[i])
		}
	}
	return strings.Join(parts, "; ")
}

// fetchError is a failed attempt; retry says whether the same URL may do better.
type fetchError struct {
	msg   string
	retry bool
}

func (e *fetchError) Error() string { return e.msg }

func failf(retry bool, format string, args ...any) error {
	return &fetchError{msg: fmt.Sprintf(format, args...), retry: retry}
}

// get downloads u into a temporary file in d.dir, verifies it and renames it to final.
func (d *downloader) get(ctx context.Context, u, final string, rf remoteFile) (err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return failf(false, "%v", err)
	}
	// The bytes on the wire must be the .gz file itself: no transparent decompression.
	req.Header.Set("Accept-Encoding", "identity")
	resp, err := d.client.Do(req)
	if err != nil {
		return failf(true, "%v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		c := resp.StatusCode
		return failf(c == http.StatusRequestTimeout || c == http.StatusTooManyRequests || c >= 500, "HTTP %s", resp.Status)
	}
	tmp, err := os.CreateTemp(d.dir, "."+rf.name+".*.tmp")
	if err != nil {
		return failf(false, "%v", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), io.LimitReader(resp.Body, rf.size+1))
	switch {
	case err != nil:
		return failf(true, "after %d of %d bytes: %v", n, rf.size, err)
	case n < rf.size:
		return failf(true, "truncated: got %d bytes, want %d", n, rf.size)
	case n > rf.size:
		return failf(false, "longer than the %d bytes expected", rf.size)
	}
	if sum := hex.EncodeToString(h.Sum(nil)); sum != rf.sha256 {
		return failf(false, "checksum mismatch: sha256 %s, want %s", sum, rf.sha256)
	}
	if err := tmp.Sync(); err != nil {
		return failf(false, "%v", err)
	}
	if err := tmp.Close(); err != nil {
		return failf(false, "%v", err)
	}
	if err := os.Rename(tmp.Name(), final); err != nil {
		return failf(false, "%v", err)
	}
	syncDir(d.dir)
	return nil
}

// verifyFile checks that path has rf's size and SHA-256 sum.
func verifyFile(path string, rf remoteFile) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return err
	}
	if n != rf.size {
		return fmt.Errorf("%d bytes, want %d", n, rf.size)
	}
	if sum := hex.EncodeToString(h.Sum(nil)); sum != rf.sha256 {
		return fmt.Errorf("checksum mismatch: sha256 %s, want %s", sum, rf.sha256)
	}
	return nil
}

// syncDir makes a rename in dir durable where the system allows it (best effort: some
// systems cannot sync a folder).
func syncDir(dir string) {
	if f, err := os.Open(dir); err == nil {
		f.Sync()
		f.Close()
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
