package checkpoint

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzReadState: state.json's reader never panics, and what it accepts has
// the version, counters and file records Load relies on. Run it with
// go test -fuzz=FuzzReadState (bench/fuzz.sh).
func FuzzReadState(f *testing.F) {
	root := f.TempDir()
	dir, err := Save(root, Meta{Step: 3, Epoch: 1, Batch: 2, Seed: 7, OptimizerType: "sgd",
		Extra: map[string]any{"optimizer_params": 2}, Model: []byte(`{"format":1}`)}, oddTensors(), nil)
	if err != nil {
		f.Fatal(err)
	}
	good, err := os.ReadFile(filepath.Join(dir, StateFile))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte(`{"version": 1, "step": -1}`))
	f.Add([]byte(`{"version": 1, "files": {"model.safetensors": {"size": 1, "crc32c": "zz"}}}`))
	f.Add([]byte(`{}{}`))
	tmp := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(tmp, StateFile)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		st, err := readState(path)
		if err != nil {
			return
		}
		if st.Version != Version || st.Step < 0 || st.Epoch < 0 || st.Batch < 0 || len(st.Files) != 2 {
			t.Fatalf("accepted %+v", st)
		}
		for _, name := range []string{ModelFile, OptimizerFile} {
			if rec := st.Files[name]; rec.Size < 0 || len(rec.CRC32C) != 8 {
				t.Fatalf("accepted record %+v of %s", rec, name)
			}
		}
	})
}
