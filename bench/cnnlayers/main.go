// Command cnnlayers times the forward and backward of each layer of the
// issue's MNIST CNN (configs/cnn.toml) on one mini-batch, and sums the
// times by layer type: where a CNN step goes. The layers run in the order a
// stage actor runs them (nn.RunOrder). Each figure is the median of
// -reps passes after a warm-up.
//
//	go run ./bench/cnnlayers [-batch 128] [-threads 1] [-reps 15] [-precision fp32|bf16] [-cpuprofile F]
package main

import (
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"runtime/pprof"
	"slices"
	"time"

	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/tensor"
)

// model is configs/cnn.toml's layers.
var model = []nn.Spec{
	{Type: "conv2d", Channels: 32, Kernel: 3, Padding: 1, Init: nn.TorchDefault}, {Type: "relu"}, {Type: "maxpool2d", Kernel: 2},
	{Type: "conv2d", Channels: 64, Kernel: 3, Padding: 1, Init: nn.TorchDefault}, {Type: "relu"}, {Type: "maxpool2d", Kernel: 2},
	{Type: "flatten"}, {Type: "linear", Units: 128, Init: nn.TorchDefault}, {Type: "relu"},
	{Type: "linear", Units: 10, Init: nn.TorchDefault},
}

func main() {
	batch := flag.Int("batch", 128, "rows of the mini-batch")
	threads := flag.Int("threads", 1, "goroutines per kernel")
	reps := flag.Int("reps", 15, "timed passes")
	bn := flag.Bool("batchnorm", false, "add batch norm after each convolution")
	profile := flag.String("cpuprofile", "", "write a CPU profile of the timed passes")
	precision := flag.String("precision", "fp32", "precision of the GEMM products: fp32 or bf16")
	flag.Parse()
	pr, err := nn.ParsePrecision(*precision)
	if err != nil {
		log.Fatal(err)
	}
	specs := model
	if *bn {
		specs = slices.Insert(slices.Clone(model), 4, nn.Spec{Type: "batchnorm"})
		specs = slices.Insert(specs, 1, nn.Spec{Type: "batchnorm"})
	}
	layers, err := nn.BuildShape(specs, []int{1, 28, 28}, 1, tensor.Float32, 0, len(specs))
	if err != nil {
		log.Fatal(err)
	}
	x := tensor.RandUniform(rand.New(rand.NewPCG(1, 2)), tensor.Float32, 0, 1, *batch, 784)
	fwd := make([][]time.Duration, len(layers))
	bwd := make([][]time.Duration, len(layers))
	var arena nn.Arena           // as a stage's: outputs reused step after step
	order := nn.RunOrder(layers) // as a stage actor runs them
	pass := func(step int, record bool) {
		arena.Reset()
		p := nn.Pass{Step: step, Train: true, Threads: *threads, Arena: &arena, Precision: pr}
		h := x
		for _, i := range order {
			start := time.Now()
			h = layers[i].Forward(p, h)
			if record {
				fwd[i] = append(fwd[i], time.Since(start))
			}
		}
		g := tensor.Full(tensor.Float32, 1e-3, h.Shape()...)
		for j := len(order) - 1; j >= 0; j-- {
			i := order[j]
			start := time.Now()
			g = layers[i].Backward(p, g, j > 0)
			if record {
				bwd[i] = append(bwd[i], time.Since(start))
			}
		}
		for _, l := range layers {
			l.ZeroGrad()
		}
	}
	for s := range 3 {
		pass(s+1, false)
	}
	if *profile != "" {
		f, err := os.Create(*profile)
		if err != nil {
			log.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			log.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	for s := range *reps {
		pass(s+4, true)
	}
	fmt.Printf("batch %d, %d thread(s), %s, medians of %d passes, ms\n\n", *batch, *threads, pr, *reps)
	report(layers, fwd, bwd, *batch)
}

// report prints each layer's median forward and backward times, then their
// sums by layer type and their shares of the step.
func report(layers []nn.Layer, fwd, bwd [][]time.Duration, batch int) {
	type sum struct{ f, b time.Duration }
	byType := map[string]*sum{}
	var order []string
	var total time.Duration
	fmt.Printf("| layer | type | forward | backward |\n| ---: | --- | ---: | ---: |\n")
	for i, l := range layers {
		f, b := median(fwd[i]), median(bwd[i])
		fmt.Printf("| %d | %s | %.2f | %.2f |\n", i, l.Kind(), ms(f), ms(b))
		if byType[l.Kind()] == nil {
			byType[l.Kind()] = &sum{}
			order = append(order, l.Kind())
		}
		byType[l.Kind()].f += f
		byType[l.Kind()].b += b
		total += f + b
	}
	fmt.Printf("\n| type | forward | backward | share of the step |\n| --- | ---: | ---: | ---: |\n")
	for _, k := range order {
		s := byType[k]
		fmt.Printf("| %s | %.2f | %.2f | %.1f%% |\n", k, ms(s.f), ms(s.b), 100*float64(s.f+s.b)/float64(total))
	}
	fmt.Printf("| all | | | %.2f ms: %.0f samples/s without the update |\n", ms(total), float64(batch)/total.Seconds())
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }
