package pipeline_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/pipetrain/pipetrain/actors"
	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/pipeline"
)

// withRecompute returns m with its transformer blocks recomputing r, as
// the trainer sets model.recompute on their specs.
func withRecompute(m pipeline.Model, r nn.Recompute) pipeline.Model {
	m.Specs = slices.Clone(m.Specs)
	for i := range m.Specs {
		if m.Specs[i].Type == "transformer_block" {
			m.Specs[i].Recompute = string(r)
		}
	}
	return m
}

// TestRecomputeEquivalence: a GPT whose blocks recompute the attention
// probabilities or the whole block in the backward gives the losses and
// weights of one that keeps everything (nn.Sequential, one micro-batch),
// bit for bit, with dropout, under every schedule, with and without the
// split backward, at 0, 1 and 2 stages and 1, 2 and 4 micro-batches; and
// in bf16 products.
func TestRecomputeEquivalence(t *testing.T) {
	wantLoss, wantW := referenceGPT(t, tinyGPT, 1)
	for _, r := range []nn.Recompute{nn.RecomputeAttention, nn.RecomputeBlocks} {
		m := withRecompute(tinyGPT, r)
		for _, micro := range []int{1, 2, 4} {
			t.Run(fmt.Sprintf("%s/nn.Sequential/micro=%d", r, micro), func(t *testing.T) {
				l, w := referenceGPT(t, m, micro)
				if why := within(l, wantLoss, w, wantW, 0); why != "" {
					t.Error(why)
				}
			})
			for _, sched := range []actors.Schedule{actors.Sequential, actors.GPipe, actors.OneFOneB} {
				for _, stages := range []int{0, 1, 2} {
					for _, split := range []bool{false, true} {
						t.Run(fmt.Sprintf("%s/%v/stages=%d/micro=%d/split=%v", r, sched, stages, micro, split), func(t *testing.T) {
							l, w := trainEngineOn(t, m, pipeline.Config{Schedule: sched, MicroBatches: micro, Stages: stages,
								SplitBackward: split, Loss: nn.CrossEntropy, Optimizer: sgd, ClipNorm: clipNorm}, gptBatch)
							if why := within(l, wantLoss, w, wantW, 0); why != "" {
								t.Error(why)
							}
						})
					}
				}
			}
		}
	}
	// without dropout a recomputing block stops at c_proj's input
	plain := tinyGPT
	plain.Specs = slices.Clone(plain.Specs)
	for i := range plain.Specs {
		plain.Specs[i].Dropout = 0
	}
	plainLoss, plainW := referenceGPT(t, plain, 1)
	for _, c := range []pipeline.Config{
		{Schedule: actors.Sequential, MicroBatches: 2},
		{Schedule: actors.OneFOneB, MicroBatches: 4, Stages: 2},
		{Schedule: actors.OneFOneB, MicroBatches: 4, Stages: 2, SplitBackward: true},
	} {
		t.Run(fmt.Sprintf("no dropout/blocks/%v/stages=%d/split=%v", c.Schedule, c.Stages, c.SplitBackward), func(t *testing.T) {
			c.Loss, c.Optimizer, c.ClipNorm = nn.CrossEntropy, sgd, clipNorm
			l, w := trainEngineOn(t, withRecompute(plain, nn.RecomputeBlocks), c, gptBatch)
			if why := within(l, plainLoss, w, plainW, 0); why != "" {
				t.Error(why)
			}
		})
	}
	for _, pr := range []nn.Precision{nn.BF16, nn.BF16Pairs} {
		wantLoss, wantW := referenceGPTIn(t, tinyGPT, 1, pr)
		for _, r := range []nn.Recompute{nn.RecomputeAttention, nn.RecomputeBlocks} {
			for _, c := range []pipeline.Config{
				{Schedule: actors.Sequential, MicroBatches: 1},
				{Schedule: actors.OneFOneB, MicroBatches: 4, Stages: 2, SplitBackward: true},
			} {
				t.Run(fmt.Sprintf("%v/%s/%v/stages=%d/micro=%d", pr, r, c.Schedule, c.Stages, c.MicroBatches), func(t *testing.T) {
					c.Loss, c.Optimizer, c.ClipNorm, c.Precision = nn.CrossEntropy, sgd, clipNorm, pr
					l, w := trainEngineOn(t, withRecompute(tinyGPT, r), c, gptBatch)
					if why := within(l, wantLoss, w, wantW, 0); why != "" {
						t.Error(why)
					}
				})
			}
		}
	}
}

// peakBytes trains m for the test's steps on an engine of cfg and returns
// the stage actors' peak activation bytes, in chain order.
func peakBytes(t *testing.T, m pipeline.Model, cfg pipeline.Config) []int64 {
	t.Helper()
	cfg.Loss, cfg.Optimizer, cfg.ClipNorm = nn.CrossEntropy, sgd, clipNorm
	eng, err := pipeline.New(m, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	for step := 1; step <= 2; step++ {
		x, tg := gptBatch(step)
		if _, err := eng.Step(step, lr(step), x, tg); err != nil {
			t.Fatal(err)
		}
	}
	stats, err := eng.Stats(true)
	if err != nil {
		t.Fatal(err)
	}
	var out []int64
	for _, info := range eng.Stages() {
		out = append(out, stats[info.Actor].PeakActivationBytes)
	}
	return out
}

// TestRecomputePeakBytes: the stage event's peak activation bytes show what
// recomputation saves. One stage of tinyGPT, one micro-batch of 8 sequences
// at a time: attention holds exactly the probabilities and attention outputs
// of 3 blocks fewer, 3·(heads·T·T + T·D) float32 values a sequence, and one
// block's attention output more (the stage's scratch, where the backward
// rebuilds it); blocks holds the blocks' outputs and one block's rebuilt
// activations (the scratch), less than attention.
func TestRecomputePeakBytes(t *testing.T) {
	cfg := pipeline.Config{Schedule: actors.Sequential, MicroBatches: 2, Stages: 1}
	none := peakBytes(t, tinyGPT, cfg)
	attention := peakBytes(t, withRecompute(tinyGPT, nn.RecomputeAttention), cfg)
	blocks := peakBytes(t, withRecompute(tinyGPT, nn.RecomputeBlocks), cfg)
	const saved = 8 * (3*(2*8*8+8*8) - 8*8) * 4 // sequences × (blocks × (heads·T·T + T·D) − T·D) × bytes
	if len(none) != 1 || none[0]-attention[0] != saved {
		t.Errorf("peak activation bytes: none %v, attention %v: want attention %d bytes fewer", none, attention, saved)
	}
	if blocks[0] >= attention[0] {
		t.Errorf("peak activation bytes: blocks %v, want fewer than attention's %v", blocks, attention)
	}
}

// TestRemoteRecompute: model.recompute reaches the blocks a worker builds
// (the stage spec carries it): on two workers a GPT recomputing its blocks
// gives the losses and weights of one keeping everything in one process,
// bit for bit, and its stages' peak activation bytes add up to fewer. (A
// stage of one block with one micro-batch in flight saves nothing: its
// scratch holds what the block would have kept.)
func TestRemoteRecompute(t *testing.T) {
	hosts := workers(t, 2, "")
	cfg := pipeline.Config{Schedule: actors.OneFOneB, MicroBatches: 2, Stages: 2, Loss: nn.CrossEntropy, Optimizer: sgd,
		ClipNorm: clipNorm, RunID: "recompute", Hang: 5 * time.Second}
	wantLoss, wantW := trainEngineOn(t, tinyGPT, cfg, gptBatch)
	cfg.Hosts = hosts
	m := withRecompute(tinyGPT, nn.RecomputeBlocks)
	gotLoss, gotW := trainEngineOn(t, m, cfg, gptBatch)
	if why := within(gotLoss, wantLoss, gotW, wantW, 0); why != "" {
		t.Errorf("blocks on hosts: %s", why)
	}
	sum := func(b []int64) (s int64) {
		for _, v := range b {
			s += v
		}
		return s
	}
	none, blocks := peakBytes(t, tinyGPT, cfg), peakBytes(t, m, cfg)
	if sum(blocks) >= sum(none) {
		t.Errorf("stages on workers: peak activation bytes %v recomputing blocks, %v keeping everything: want fewer in all", blocks, none)
	}
}

// BenchmarkRecomputeStep times a training step of bench/gpt/recompute.toml's
// GPT (6 blocks, width 192, 6 heads, context 256, batch 8) in one stage
// actor, per model.recompute mode:
// go test -run '^$' -bench RecomputeStep -benchtime 10x -count 3 ./pipeline/
func BenchmarkRecomputeStep(b *testing.B) {
	for _, r := range nn.Recomputes {
		b.Run(string(r), func(b *testing.B) {
			benchGPT(b, withRecompute(gptModel(6, 192, 6, 256), r), 8, 256,
				pipeline.Config{Schedule: actors.Sequential, MicroBatches: 1, Stages: 1})
		})
	}
}
