package main

import (
	"fmt"

	"github.com/schollz/progressbar/v3"
)

// progress draws a bar on a terminal and nothing otherwise.
type progress struct {
	bar *progressbar.ProgressBar
}

func newProgress(log *runLog, total, done int) *progress {
	if !log.terminal {
		return &progress{}
	}
	bar := progressbar.NewOptions(total,
		progressbar.OptionSetWriter(log.console),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionShowCount(),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100_000_000),
	)
	_ = bar.Set(done)
	return &progress{bar: bar}
}

func (p *progress) step(epoch int, loss float64) {
	if p.bar == nil {
		return
	}
	p.bar.Describe(fmt.Sprintf("epoch %d loss %.4f", epoch+1, loss))
	_ = p.bar.Add(1)
}

func (p *progress) finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
		_ = p.bar.Exit()
	}
}
