package main

import (
	"bytes"
	"image/color"
	"image/png"
	"os"

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

// readPNG reads a PNG file as one grey image: a colour pixel's level is its
// luma (ITU-R BT.601: 0.299 R + 0.587 G + 0.114 B), a grey pixel's its
// grey, both after compositing over black (a transparent pixel is black,
// the background of the image sets).
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
	g := greyImages{n: 1, h: b.Dy(), w: b.Dx(), grey: make([]float64, b.Dx()*b.Dy())}
	for y := range g.h {
		for x := range g.w {
			g.grey[y*g.w+x] = luma(img.At(b.Min.X+x, b.Min.Y+y))
		}
	}
	return g, nil
}

// luma is c's grey level in [0, 1] by ITU-R BT.601, over black. A grey
// colour keeps its level exactly: 8-bit p gives p/255 as float64 division does.
func luma(c color.Color) float64 {
	r, g, b, _ := c.RGBA() // 16 bits, premultiplied by alpha: composited over black
	if r == g && g == b {
		return float64(r) / 0xffff
	}
	return (0.299*float64(r) + 0.587*float64(g) + 0.114*float64(b)) / 0xffff
}

// raw returns the images resized to h×w as rows of raw values, [n, h·w]:
// grey level times divide, which the model's Prepare divides again, so
// that the model sees the levels as the image sets' features (p/255).
// The raw values stay float64, so that an IDX image of the model's size
// gives exactly the features training gave it.
func (g greyImages) raw(h, w int, divide float64) *tensor.Tensor {
	out := make([]float64, 0, g.n*h*w)
	for i := range g.n {
		img := g.grey[i*g.h*g.w : (i+1)*g.h*g.w]
		if g.h != h || g.w != w {
			img = resizeArea(img, g.h, g.w, h, w)
		}
		for _, v := range img {
			out = append(out, v*divide)
		}
	}
	return tensor.FromFloat64s(tensor.Float64, out, g.n, h*w)
}

// resizeArea scales an h×w image to H×W by area averaging: an output pixel
// is the mean of the source area it covers, a source pixel counted by the
// fraction of it inside. Shrinking 32×32 bitmaps by 4 this way is how the
// digits' 8×8 counts were made; a 4×4-block upscale shrinks back exactly.
func resizeArea(src []float64, h, w, H, W int) []float64 {
	rows, cols := areaTaps(h, H), areaTaps(w, W)
	tmp := make([]float64, H*w) // the rows resized, the columns not yet
	for Y, taps := range rows {
		for _, t := range taps {
			for x, v := range src[t.i*w : (t.i+1)*w] {
				tmp[Y*w+x] += t.w * v
			}
		}
	}
	out := make([]float64, H*W)
	for Y := range H {
		for X, taps := range cols {
			for _, t := range taps {
				out[Y*W+X] += t.w * tmp[Y*w+t.i]
			}
		}
	}
	return out
}

// tap is one source pixel's weight in an output pixel.
type tap struct {
	i int
	w float64
}

// areaTaps returns, for each of N output pixels along an axis of n source
// pixels, the source pixels it covers and their weights, which sum to 1.
// In units of 1/N of a source pixel, output o spans [o·n, (o+1)·n) and
// source i spans [i·N, (i+1)·N): the overlaps are whole numbers.
func areaTaps(n, N int) [][]tap {
	taps := make([][]tap, N)
	for o := range taps {
		lo, hi := o*n, (o+1)*n
		for i := lo / N; i*N < hi; i++ {
			if overlap := min(hi, (i+1)*N) - max(lo, i*N); overlap > 0 {
				taps[o] = append(taps[o], tap{i, float64(overlap) / float64(n)})
			}
		}
	}
	return taps
}
