package model

import (
	"image"
	"image/color"
	"math"
	"slices"
	"testing"
)

// TestResizeArea: area averaging weighs each source pixel by the part of it
// an output pixel covers.
func TestResizeArea(t *testing.T) {
	for _, tc := range []struct {
		src        []float64
		h, w, H, W int
		want       []float64
	}{
		{[]float64{1, 2, 3, 4}, 2, 2, 2, 2, []float64{1, 2, 3, 4}},
		{[]float64{1, 2, 3, 4}, 2, 2, 1, 1, []float64{2.5}},
		{[]float64{0, 3, 6}, 1, 3, 1, 2, []float64{1, 5}},
		{[]float64{2, 4}, 1, 2, 1, 4, []float64{2, 2, 4, 4}},
		{[]float64{0, 3, 6}, 3, 1, 2, 1, []float64{1, 5}},
		{[]float64{1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}, 4, 4, 2, 2, []float64{1, 2, 3, 4}},
	} {
		got := resizeArea(tc.src, tc.h, tc.w, tc.H, tc.W)
		for i := range got {
			if math.Abs(got[i]-tc.want[i]) > 1e-12 {
				t.Errorf("resizeArea(%v, %d×%d to %d×%d) = %v, want %v", tc.src, tc.h, tc.w, tc.H, tc.W, got, tc.want)
				break
			}
		}
	}
}

// TestLuma: grey keeps its level exactly, colour is weighed by BT.601, and
// transparency is black.
func TestLuma(t *testing.T) {
	for _, tc := range []struct {
		c    color.Color
		want float64
	}{
		{color.Gray{51}, 51.0 / 255},
		{color.Gray{255}, 1},
		{color.Gray16{0x8000}, 0x8000 / 65535.0},
		{color.NRGBA{255, 0, 0, 255}, 0.299},
		{color.NRGBA{0, 255, 0, 255}, 0.587},
		{color.NRGBA{0, 0, 255, 255}, 0.114},
		{color.NRGBA{200, 200, 200, 0}, 0},
	} {
		if got := luma(tc.c); math.Abs(got-tc.want) > 1e-15 || tc.want == 51.0/255 && got != tc.want {
			t.Errorf("luma(%v) = %v, want %v", tc.c, got, tc.want)
		}
	}
}

// TestRawImages: images of the model's size keep their levels, times
// divide; others are resized; a model of other samples refuses them.
func TestRawImages(t *testing.T) {
	d := Description{Sample: []int{1, 2, 2}, Input: Input{Divide: 16}}
	raw, err := d.RawImages([]float64{0, 0.5, 1, 0.25}, 1, 2, 2)
	if err != nil || !slices.Equal(raw.Float64s(), []float64{0, 8, 16, 4}) {
		t.Errorf("same size: %v, %v", raw, err)
	}
	img := image.NewGray(image.Rect(0, 0, 4, 4))
	for i := range img.Pix {
		img.Pix[i] = 255
	}
	raw, err = d.RawImages(Grey(img), 1, 4, 4)
	if err != nil || !slices.Equal(raw.Float64s(), []float64{16, 16, 16, 16}) {
		t.Errorf("4×4 white to 2×2: %v, %v", raw, err)
	}
	flat := Description{Sample: []int{4}, Input: Input{Divide: 1}}
	if _, err := flat.RawImages(make([]float64, 4), 1, 2, 2); err == nil {
		t.Error("a model of flat samples took images")
	}
}
