package main

import (
	"bytes"
	"image/png"
	"os"

	"github.com/pipetrain/pipetrain/model"
	"github.com/pipetrain/pipetrain/tensor"
)

// maxImagePixels bounds a PNG's declared size, so that a hostile header
// cannot make predict allocate gigabytes.
const maxImagePixels = 1 << 26

// greyImages are n grey images of h×w pixels, their levels in [0, 1] (a
// pixel p of 0..255 is p/255), image by image, row by row.
type greyImages struct {
	n, h, w int
	grey    []float64
}

// readPNG reads a PNG file as one grey image (model.Grey).
func readPNG(file string) (greyImages, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return greyImages{}, badInputf("--input: %v", err)
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return greyImages{}, badInputf("%s: reading the PNG image: %v", file, err)
	}
	if cfg.Width < 1 || cfg.Height < 1 || cfg.Width*cfg.Height > maxImagePixels {
		return greyImages{}, badInputf("%s: a PNG image of %d×%d pixels is not one to classify", file, cfg.Width, cfg.Height)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		return greyImages{}, badInputf("%s: reading the PNG image: %v", file, err)
	}
	b := img.Bounds()
	return greyImages{n: 1, h: b.Dy(), w: b.Dx(), grey: model.Grey(img)}, nil
}

// raw returns the images as the model's raw inputs (Description.RawImages).
func (g greyImages) raw(d *model.Description) (*tensor.Tensor, error) {
	return d.RawImages(g.grey, g.n, g.h, g.w)
}
