package main

import (
	"io"
	"os"
	"path/filepath"
)

// writeFileAtomic writes path through a temporary file in the same folder,
// synced and renamed into place, so that a reader never sees half a file
// and a failure leaves what was there.
func writeFileAtomic(path string, write func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // gone by then after a rename
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(0o644); err != nil { // CreateTemp's 0600 would hide it from other users
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
