package model

import (
	"fmt"
	"image"
	"image/color"

	"github.com/pipetrain/pipetrain/tensor"
)

// Grey returns img's grey levels in [0, 1], row by row: a colour pixel's
// level is its luma (ITU-R BT.601: 0.299 R + 0.587 G + 0.114 B), a grey
// pixel's its grey (8-bit p gives exactly p/255), both after compositing
// over black, the background of the image sets.
func Grey(img image.Image) []float64 {
	b := img.Bounds()
	out := make([]float64, 0, b.Dx()*b.Dy())
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			out = append(out, luma(img.At(x, y)))
		}
	}
	return out
}

// RawImages returns n grey images of h×w pixels (levels in [0, 1], image by
// image, row by row, as Grey gives them) as the model's raw inputs,
// [n, H·W]: each resized to the model's H×W by area averaging, its levels
// times Input.Divide, which Prepare divides again, so that the model sees
// them as it saw the image sets' pixels (p/255). It needs a model of
// one-channel images.
func (d *Description) RawImages(grey []float64, n, h, w int) (*tensor.Tensor, error) {
	if len(d.Sample) != 3 || d.Sample[0] != 1 {
		return nil, fmt.Errorf("model: the model takes samples of shape %v, not grey images", d.Sample)
	}
	if n < 0 || h < 1 || w < 1 || len(grey) != n*h*w {
		return nil, fmt.Errorf("model: %d grey levels for %d images of %d×%d", len(grey), n, h, w)
	}
	H, W := d.Sample[1], d.Sample[2]
	out := make([]float64, 0, n*H*W)
	for i := range n {
		img := grey[i*h*w : (i+1)*h*w]
		if h != H || w != W {
			img = resizeArea(img, h, w, H, W)
		}
		for _, v := range img {
			out = append(out, v*d.Input.Divide)
		}
	}
	return tensor.FromFloat64s(tensor.Float64, out, n, H*W), nil
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
