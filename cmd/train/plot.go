package main

import (
	"image/color"
	"io"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// writePlot draws the step losses, and the test loss and accuracy, into a PNG
// beside the log file: <log.dir>/<run_id>.png.
func (r *trainRun) writePlot() (path string, err error) {
	if len(r.stepLosses) == 0 {
		return "", nil
	}
	loss := plot.New()
	loss.Title.Text = "loss"
	loss.X.Label.Text = "step"
	loss.Legend.Top = true
	if err := addLine(loss, "train (mini-batch)", r.stepLosses, 0); err != nil {
		return "", err
	}
	if err := addLine(loss, "test", r.evalLoss, 1); err != nil {
		return "", err
	}
	acc := plot.New()
	acc.Title.Text = "test accuracy"
	acc.X.Label.Text = "step"
	if err := addLine(acc, "test", r.evalAcc, 1); err != nil {
		return "", err
	}
	const w, h = 8 * vg.Inch, 7 * vg.Inch
	img := vgimg.New(w, h)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadY: vg.Centimeter / 2, PadTop: vg.Centimeter / 4, PadBottom: vg.Centimeter / 4, PadLeft: vg.Centimeter / 4, PadRight: vg.Centimeter / 4}
	plots := [][]*plot.Plot{{loss}, {acc}}
	canvases := plot.Align(plots, tiles, dc)
	loss.Draw(canvases[0][0])
	acc.Draw(canvases[1][0])
	path = strings.TrimSuffix(r.log.path, filepath.Ext(r.log.path)) + ".png"
	return path, writeFileAtomic(path, func(f io.Writer) error {
		_, err := vgimg.PngCanvas{Canvas: img}.WriteTo(f)
		return err
	})
}

func addLine(p *plot.Plot, name string, pts []point, color int) error {
	if len(pts) == 0 {
		return nil
	}
	xys := make(plotter.XYs, len(pts))
	for i, q := range pts {
		xys[i].X, xys[i].Y = q.x, q.y
	}
	l, err := plotter.NewLine(xys)
	if err != nil {
		return err
	}
	l.Color = plotter.DefaultLineStyle.Color
	if color == 1 {
		l.Color = plotColor
	}
	p.Add(l)
	p.Legend.Add(name, l)
	return nil
}

var plotColor = color.RGBA{R: 204, G: 85, B: 0, A: 255}
