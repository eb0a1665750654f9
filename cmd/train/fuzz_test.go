package main

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/pipetrain/pipetrain/model"
)

// FuzzReadPNG: predict's PNG reader never panics, and an image it accepts
// becomes the model's 8×8 raw inputs within the set's range.
func FuzzReadPNG(f *testing.F) {
	for _, size := range []int{1, 8, 33} {
		img := image.NewNRGBA(image.Rect(0, 0, size, size+1))
		img.Set(0, 0, color.NRGBA{200, 10, 10, 128})
		var b bytes.Buffer
		png.Encode(&b, img)
		f.Add(b.Bytes())
		f.Add(b.Bytes()[:b.Len()/2])
	}
	d := model.Description{Sample: []int{1, 8, 8}, Input: model.Input{Divide: 16}}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "in.png")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		img, err := readPNG(path)
		if err != nil {
			return
		}
		raw, err := img.raw(&d)
		if err != nil {
			t.Fatalf("an accepted image: %v", err)
		}
		for _, v := range raw.Float64s() {
			if !(v >= 0 && v <= 16+1e-9) {
				t.Fatalf("raw value %v outside 0..16", v)
			}
		}
	})
}
