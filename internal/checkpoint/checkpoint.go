package checkpoint

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/pipetrain/pipetrain/tensor"
)

// Version is the checkpoint format version Save writes and Load accepts.
const Version = 1

// The files of a checkpoint directory.
const (
	ModelFile     = "model.safetensors"     // the model's parameters
	OptimizerFile = "optimizer.safetensors" // the optimizer's state (momentum, moments)
	StateFile     = "state.json"            // Meta, plus the sizes and checksums of the two above
)

const (
	stepPrefix = "step-"
	tmpPrefix  = ".tmp-" // a directory being written, or being removed
	oldPrefix  = ".old-" // a checkpoint moved aside while Save replaces it

	maxStateSize = 64 << 20 // a state.json larger than this is refused unread
)

// Meta is the training state that is not tensors, stored as state.json beside the
// weights. It records where training stands so that a resumed run continues
// exactly where the saved one was.
type Meta struct {
	Version       int    `json:"version"`        // format version; Save fills in 0 as Version
	Step          int    `json:"step"`           // optimizer steps completed
	Epoch         int    `json:"epoch"`          // epoch of the next batch
	Batch         int    `json:"batch"`          // index of the next batch within Epoch
	Seed          uint64 `json:"seed"`           // the run's seed
	OptimizerType string `json:"optimizer"`      // "sgd", "adam", "adamw"
	OptimizerStep int    `json:"optimizer_step"` // the optimizer's own step count (Adam's bias correction)
	ConfigHash    string `json:"config_hash"`    // to refuse resuming with an incompatible config
	// Precision is the run's train.precision, "fp32" or "bf16" (of its
	// products: the weights are float32 either way); empty in older
	// checkpoints, which are fp32.
	Precision string `json:"precision,omitempty"`
	// BF16Arithmetic, for a bf16 run, is the arithmetic its products' sums
	// took ("amx" or "avx512bf16": they round differently).
	BF16Arithmetic string         `json:"bf16_arithmetic,omitempty"`
	Extra          map[string]any `json:"extra,omitempty"`
	// Model describes the model, so that the checkpoint alone rebuilds it
	// (package model's Description); empty in checkpoints older than it.
	Model json.RawMessage `json:"model,omitempty"`
}

// stateFile is what state.json holds: Meta's fields, and a record of each weight
// file so that Load can tell a damaged file from a good one.
type stateFile struct {
	Meta
	Files map[string]fileRecord `json:"files"`
}

type fileRecord struct {
	Size   int64  `json:"size"`
	CRC32C string `json:"crc32c"` // CRC-32C (Castagnoli) of the whole file, 8 hex digits
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// StepDir returns the directory of the checkpoint of step under root:
// root/step-00000020 for step 20.
func StepDir(root string, step int) string { return filepath.Join(root, stepName(step)) }

func stepName(step int) string { return fmt.Sprintf("%s%08d", stepPrefix, step) }

// parseStepName returns the step of a checkpoint directory's name. Only the
// canonical spelling that stepName produces is accepted.
func parseStepName(name string) (int, bool) {
	digits, ok := strings.CutPrefix(name, stepPrefix)
	if !ok || digits == "" || strings.TrimLeft(digits, "0123456789") != "" {
		return 0, false
	}
	step, err := strconv.Atoi(digits)
	if err != nil || stepName(step) != name {
		return 0, false
	}
	return step, true
}

// Save writes a checkpoint of step meta.Step under root, creating root if needed,
// and returns its directory, root/step-00000020 for step 20. model and optim may
// be empty or nil. A zero meta.Version is written as Version.
//
// Save is atomic: it writes the three files into a fresh directory
// root/.tmp-step-00000020-<random>, syncs each file and then the directory to
// disk, and renames the directory into place, syncing root. A checkpoint of the
// same step is replaced: it is first renamed aside to root/.old-step-00000020-<random>,
// and removed once the new one is in place. Whenever Save is interrupted, even by
// a crash or power loss, root holds the checkpoints it held before (except, at
// worst, the one being replaced, which then waits in its .old- directory) and no
// partial step- directory; the next Save removes what was left behind and puts a
// stranded .old- checkpoint back. One process at a time may save into a root.
func Save(root string, meta Meta, model, optim map[string]*tensor.Tensor) (dir string, err error) {
	return SaveFiles(root, meta, model, optim, nil)
}

// SaveFiles is Save with more files in the checkpoint's folder, such as a
// text model's tokenizer.json: each name a plain file name other than the
// checkpoint's own, written and synced with them before the folder is
// renamed into place, so the checkpoint has them all or is not there.
// Load and the "files" record of state.json do not see them.
func SaveFiles(root string, meta Meta, model, optim map[string]*tensor.Tensor, files map[string][]byte) (dir string, err error) {
	for name := range files {
		if name == "" || name != filepath.Base(name) || name == "." || name == ".." || strings.HasPrefix(name, ".") ||
			name == ModelFile || name == OptimizerFile || name == StateFile {
			return "", fmt.Errorf("checkpoint: %q cannot be an extra file's name", name)
		}
	}
	switch {
	case root == "":
		return "", errors.New("checkpoint: no root directory given")
	case meta.Step < 0:
		return "", fmt.Errorf("checkpoint: step %d is negative", meta.Step)
	case meta.Version == 0:
		meta.Version = Version
	case meta.Version != Version:
		return "", fmt.Errorf("checkpoint: meta version %d; this package writes version %d", meta.Version, Version)
	}
	if _, err := json.Marshal(meta); err != nil {
		return "", fmt.Errorf("checkpoint: meta cannot be written as JSON: %w", err)
	}
	if err := makeRoot(root); err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	cleanRoot(root)

	name := stepName(meta.Step)
	final := filepath.Join(root, name)
	tmp, err := makeTempDir(root, tmpPrefix+name+"-")
	if err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(tmp)
		}
	}()

	for name, data := range files {
		path := filepath.Join(tmp, name)
		if _, err := writeFileSync(path, func(w io.Writer) error { _, err := w.Write(data); return err }); err != nil {
			return "", fmt.Errorf("checkpoint: %s: %w", path, err)
		}
	}
	if err := writeFiles(tmp, meta, model, optim); err != nil {
		return "", err
	}
	if err := install(root, tmp, final, name); err != nil {
		return "", err
	}
	return final, nil
}

// writeFiles writes the checkpoint's files into dir, durably: the tensors,
// then state.json with their checksums.
func writeFiles(dir string, meta Meta, model, optim map[string]*tensor.Tensor) error {
	state := stateFile{Meta: meta, Files: make(map[string]fileRecord)}
	for _, f := range []struct {
		name    string
		tensors map[string]*tensor.Tensor
	}{{ModelFile, model}, {OptimizerFile, optim}} {
		path := filepath.Join(dir, f.name)
		rec, err := writeFileSync(path, func(w io.Writer) error { return Encode(w, f.tensors, nil) })
		if err != nil {
			return fmt.Errorf("checkpoint: %s: %w", path, err)
		}
		state.Files[f.name] = rec
	}
	js, err := json.MarshalIndent(state, "", "  ")
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	js = append(js, '\n')
	statePath := filepath.Join(dir, StateFile)
	if _, err := writeFileSync(statePath, func(w io.Writer) error { _, err := w.Write(js); return err }); err != nil {
		return fmt.Errorf("checkpoint: %s: %w", statePath, err)
	}
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return nil
}

// install moves the finished checkpoint tmp to final (named name) under
// root: an existing checkpoint of this step is moved aside, the new one
// renamed into place, the renames made durable, then the old one dropped.
func install(root, tmp, final, name string) error {
	old := ""
	if _, err := os.Lstat(final); err == nil {
		old, err = tempName(root, oldPrefix+name+"-")
		if err != nil {
			return fmt.Errorf("checkpoint: %w", err)
		}
		if err := os.Rename(final, old); err != nil {
			return fmt.Errorf("checkpoint: moving the previous %s aside: %w", name, err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("checkpoint: %w", err)
	}
	if err := os.Rename(tmp, final); err != nil {
		if old != "" {
			os.Rename(old, final) // put the previous checkpoint back
		}
		return fmt.Errorf("checkpoint: %w", err)
	}
	if err := syncDir(root); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	if old != "" {
		// Best effort: a leftover .old- directory is removed by the next Save.
		if os.RemoveAll(old) == nil {
			syncDir(root)
		}
	}
	return nil
}

// makeRoot creates root if it does not exist, durably.
func makeRoot(root string) error {
	if st, err := os.Stat(root); err == nil {
		if !st.IsDir() {
			return fmt.Errorf("%s is not a directory", root)
		}
		return nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	return syncDir(filepath.Dir(filepath.Clean(root)))
}

// cleanRoot removes what an interrupted Save or Prune left in root, and puts back
// a checkpoint that Save had moved aside but not yet replaced. It is best effort:
// what it cannot remove now, it retries next time.
func cleanRoot(root string) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return
	}
	changed := false
	for _, e := range entries {
		name := e.Name()
		path := filepath.Join(root, name)
		switch {
		case strings.HasPrefix(name, tmpPrefix):
			changed = os.RemoveAll(path) == nil || changed
		case strings.HasPrefix(name, oldPrefix):
			rest := strings.TrimPrefix(name, oldPrefix)
			i := strings.LastIndexByte(rest, '-')
			step, ok := 0, false
			if i > 0 {
				step, ok = parseStepName(rest[:i])
			}
			if !ok {
				continue // not ours
			}
			if _, err := os.Lstat(StepDir(root, step)); errors.Is(err, fs.ErrNotExist) {
				changed = os.Rename(path, StepDir(root, step)) == nil || changed
			} else if err == nil {
				changed = os.RemoveAll(path) == nil || changed
			}
		}
	}
	if changed {
		syncDir(root)
	}
}

// tempName returns an unused path root/<prefix><random>.
func tempName(root, prefix string) (string, error) {
	for range 100 {
		p := filepath.Join(root, fmt.Sprintf("%s%08x", prefix, rand.Uint32()))
		if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
			return p, nil
		}
	}
	return "", fmt.Errorf("no free name %s* in %s", prefix, root)
}

// makeTempDir creates a new directory root/<prefix><random>. Unlike os.MkdirTemp
// it keeps the umask's usual 0755, since the directory becomes the checkpoint.
func makeTempDir(root, prefix string) (string, error) {
	for range 100 {
		p := filepath.Join(root, fmt.Sprintf("%s%08x", prefix, rand.Uint32()))
		err := os.Mkdir(p, 0o755)
		if err == nil {
			return p, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", err
		}
	}
	return "", fmt.Errorf("no free name %s* in %s", prefix, root)
}

// writeFileSync creates path (which must not exist), lets write fill it, and syncs
// it to disk. It returns the file's size and checksum.
func writeFileSync(path string, write func(io.Writer) error) (fileRecord, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fileRecord{}, err
	}
	h := crc32.New(castagnoli)
	cw := &countWriter{w: io.MultiWriter(f, h)}
	err = write(cw)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fileRecord{}, err
	}
	return fileRecord{Size: cw.n, CRC32C: sum(h)}, nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// syncDir makes the entries of directory path durable. File systems that cannot
// sync a directory are let be.
func syncDir(path string) error {
	if runtime.GOOS == "windows" {
		return nil // directories cannot be opened for syncing; NTFS journals renames
	}
	d, err := os.Open(path)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, syscall.EINVAL) || errors.Is(err, errors.ErrUnsupported) {
		return nil
	}
	return err
}

// stepEntry is a step- directory under a root.
type stepEntry struct {
	step int
	dir  string
}

// listSteps returns root's step- directories, newest first. A missing root has
// none.
func listSteps(root string) ([]stepEntry, error) {
	entries, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	var steps []stepEntry
	for _, e := range entries {
		if step, ok := parseStepName(e.Name()); ok && e.IsDir() {
			steps = append(steps, stepEntry{step, filepath.Join(root, e.Name())})
		}
	}
	slices.SortFunc(steps, func(a, b stepEntry) int { return cmp.Compare(b.step, a.step) })
	return steps, nil
}

// complete reports whether dir holds the three files of a checkpoint of step and
// a state.json that parses. It reads state.json only.
func complete(dir string, step int) bool {
	for _, name := range []string{ModelFile, OptimizerFile} {
		if st, err := os.Stat(filepath.Join(dir, name)); err != nil || !st.Mode().IsRegular() {
			return false
		}
	}
	st, err := readState(filepath.Join(dir, StateFile))
	return err == nil && st.Step == step
}

// IsCheckpoint reports whether dir looks like one checkpoint (it holds a
// state.json) rather than a root of them; Load checks the rest.
func IsCheckpoint(dir string) bool {
	st, err := os.Stat(filepath.Join(dir, StateFile))
	return err == nil && st.Mode().IsRegular()
}

// Latest returns the directory of the newest checkpoint under root: the step-
// directory with the highest step whose three files exist and whose state.json
// parses and names that step. It ignores every other entry, such as .tmp-
// directories left by an interrupted Save. ok is false if there is none,
// including when root does not exist; err reports only a root that cannot be read.
// Latest does not read the weights; Load checks them.
func Latest(root string) (dir string, ok bool, err error) {
	steps, err := listSteps(root)
	if err != nil {
		return "", false, err
	}
	for _, s := range steps {
		if complete(s.dir, s.step) {
			return s.dir, true, nil
		}
	}
	return "", false, nil
}

// Load reads the checkpoint in dir and verifies all of it: state.json must parse
// strictly (no unknown fields) with a supported version and, when dir is named
// step-N, step N; each weight file must be a valid safetensors file whose size
// and CRC-32C match state.json's record. Errors name the file and what is wrong,
// as in "checkpoint: ckpt/step-00000020/model.safetensors: data offsets of "0.weight" ...".
// Numbers in meta.Extra come back as json.Number, so that none loses precision.
func Load(dir string) (meta Meta, model, optim map[string]*tensor.Tensor, err error) {
	statePath := filepath.Join(dir, StateFile)
	st, err := readState(statePath)
	if err != nil {
		return Meta{}, nil, nil, fmt.Errorf("checkpoint: %s: %w", statePath, err)
	}
	if step, ok := parseStepName(filepath.Base(filepath.Clean(dir))); ok && step != st.Step {
		return Meta{}, nil, nil, fmt.Errorf("checkpoint: %s: step is %d, but the directory is named for step %d", statePath, st.Step, step)
	}
	model, err = loadTensors(filepath.Join(dir, ModelFile), st.Files[ModelFile])
	if err != nil {
		return Meta{}, nil, nil, err
	}
	optim, err = loadTensors(filepath.Join(dir, OptimizerFile), st.Files[OptimizerFile])
	if err != nil {
		return Meta{}, nil, nil, err
	}
	return st.Meta, model, optim, nil
}

// ReadMeta returns the Meta of the checkpoint in dir without loading its
// tensors.
func ReadMeta(dir string) (Meta, error) {
	statePath := filepath.Join(dir, StateFile)
	st, err := readState(statePath)
	if err != nil {
		return Meta{}, fmt.Errorf("checkpoint: %s: %w", statePath, err)
	}
	return st.Meta, nil
}

// readState reads and checks a state.json.
func readState(path string) (stateFile, error) {
	var st stateFile
	f, err := os.Open(path)
	if err != nil {
		return st, bare(err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxStateSize+1))
	if err != nil {
		return st, bare(err)
	}
	if len(data) > maxStateSize {
		return st, fmt.Errorf("larger than %d bytes", maxStateSize)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	if err := dec.Decode(&st); err != nil {
		return st, fmt.Errorf("invalid JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return st, errors.New("invalid JSON: unexpected data after the object")
	}
	switch {
	case st.Version != Version:
		return st, fmt.Errorf("version %d is not supported (want %d)", st.Version, Version)
	case st.Step < 0 || st.Epoch < 0 || st.Batch < 0 || st.OptimizerStep < 0:
		return st, fmt.Errorf("negative counter: step %d, epoch %d, batch %d, optimizer_step %d",
			st.Step, st.Epoch, st.Batch, st.OptimizerStep)
	}
	for _, name := range []string{ModelFile, OptimizerFile} {
		rec, ok := st.Files[name]
		if !ok {
			return st, fmt.Errorf("no record of %s under \"files\"", name)
		}
		if _, err := strconv.ParseUint(rec.CRC32C, 16, 32); err != nil || len(rec.CRC32C) != 8 || rec.Size < 0 {
			return st, fmt.Errorf("record of %s is malformed: size %d, crc32c %q", name, rec.Size, rec.CRC32C)
		}
	}
	if len(st.Files) != 2 {
		return st, fmt.Errorf("\"files\" lists %d files, want %s and %s", len(st.Files), ModelFile, OptimizerFile)
	}
	return st, nil
}

// loadTensors decodes the safetensors file at path and checks it against rec.
func loadTensors(path string, rec fileRecord) (map[string]*tensor.Tensor, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %s: %w", path, bare(err))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %s: %w", path, bare(err))
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("checkpoint: %s: not a regular file", path)
	}
	h := crc32.New(castagnoli)
	ts, _, err := decode(io.TeeReader(f, h), fi.Size(), false)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %s: %w", path, err)
	}
	if fi.Size() != rec.Size {
		return nil, fmt.Errorf("checkpoint: %s: file is %d bytes, but %s records %d", path, fi.Size(), StateFile, rec.Size)
	}
	if got := sum(h); got != rec.CRC32C {
		return nil, fmt.Errorf("checkpoint: %s: CRC-32C is %s, but %s records %s (file corrupted)", path, got, StateFile, rec.CRC32C)
	}
	return ts, nil
}

func sum(h hash.Hash32) string { return fmt.Sprintf("%08x", h.Sum32()) }

// bare strips the operation and path from an *fs.PathError, for messages that
// name the path themselves; errors.Is still sees the cause.
func bare(err error) error {
	if pe, ok := err.(*fs.PathError); ok {
		return pe.Err
	}
	return err
}

// Prune removes the checkpoints under root that are older than the keep newest
// complete ones (complete as Latest judges), and returns the directories it
// removed. Nothing is removed while fewer than keep complete checkpoints exist,
// and incomplete directories newer than the oldest kept one are left alone. Each
// directory is first renamed to a .tmp- name, so that an interrupted Prune never
// leaves a partial step- directory.
func Prune(root string, keep int) (removed []string, err error) {
	if keep < 1 {
		return nil, fmt.Errorf("checkpoint: Prune must keep at least 1 checkpoint, not %d", keep)
	}
	steps, err := listSteps(root)
	if err != nil {
		return nil, err
	}
	kept, cut := 0, len(steps)
	for i, s := range steps {
		if complete(s.dir, s.step) {
			kept++
			if kept == keep {
				cut = i + 1
				break
			}
		}
	}
	for _, s := range steps[cut:] {
		gone, err := tempName(root, tmpPrefix+"prune-"+stepName(s.step)+"-")
		if err == nil {
			err = os.Rename(s.dir, gone)
		}
		if err != nil {
			return removed, fmt.Errorf("checkpoint: removing %s: %w", s.dir, err)
		}
		removed = append(removed, s.dir)
		if err := syncDir(root); err != nil {
			return removed, fmt.Errorf("checkpoint: %w", err)
		}
		if err := os.RemoveAll(gone); err != nil {
			return removed, fmt.Errorf("checkpoint: removing %s: %w", s.dir, err)
		}
	}
	return removed, nil
}
