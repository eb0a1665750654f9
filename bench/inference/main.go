// Command inference measures model.Predict's predictions per second on the
// MNIST MLP (784-512-ReLU-256-ReLU-10, configs/mnist.toml's model) at
// batch 1 and batch 256, from one goroutine and from -callers goroutines at
// once. It prints one line per case: "CASE predictions/s".
//
//	go run ./bench/inference [-seconds 2] [-callers 2]
//
// bench/inference/run.sh runs it in rounds interleaved with PyTorch.
package main

import (
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pipetrain/pipetrain/model"
	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/tensor"
)

func main() {
	seconds := flag.Float64("seconds", 2, "time per case")
	callers := flag.Int("callers", 2, "goroutines of the concurrent cases")
	flag.Parse()
	d := model.Description{
		Format: model.Format, Sample: []int{784}, Loss: nn.CrossEntropy, Input: model.Input{Data: "mnist", Divide: 255},
		Layers: []nn.Spec{{Type: "linear", Units: 512, Init: nn.XavierUniform}, {Type: "relu"},
			{Type: "linear", Units: 256, Init: nn.XavierUniform}, {Type: "relu"}, {Type: "linear", Units: 10, Init: nn.XavierUniform}},
	}
	for i := range 10 {
		d.Classes = append(d.Classes, fmt.Sprint(i))
	}
	layers, err := nn.BuildShape(d.Layers, d.Sample, 1, tensor.Float32, 0, len(d.Layers))
	if err != nil {
		log.Fatal(err)
	}
	weights := map[string]*tensor.Tensor{}
	for i, l := range layers {
		for _, p := range l.Params() {
			weights[nn.ParamName(i, p.Name)] = p.Value
		}
	}
	m, err := model.New(d, weights)
	if err != nil {
		log.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct{ batch, callers int }{{1, 1}, {256, 1}, {1, *callers}, {256, *callers}} {
		x := tensor.RandUniform(rng, tensor.Float32, 0, 1, c.batch, 784)
		var done atomic.Int64
		deadline := time.Now().Add(time.Duration(*seconds * float64(time.Second)))
		var wg sync.WaitGroup
		start := time.Now()
		for range c.callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Now().Before(deadline) {
					if _, err := m.Predict(x); err != nil {
						log.Fatal(err)
					}
					done.Add(int64(c.batch))
				}
			}()
		}
		wg.Wait()
		fmt.Printf("batch%d_callers%d %.0f\n", c.batch, c.callers, float64(done.Load())/time.Since(start).Seconds())
	}
}
