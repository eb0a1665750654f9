package ops_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/pipetrain/pipetrain/ops"
	"github.com/pipetrain/pipetrain/tensor"
)

// BenchmarkMatMul reports float32 GFLOP/s at the shapes of an MLP's layers,
// written into a destination made once, as bench/matmul_numpy.py times
// numpy's matmul(a, b, out=c). BenchmarkMatMulAlloc includes the output's
// allocation.
func BenchmarkMatMul(b *testing.B) {
	for _, s := range [][3]int{{128, 784, 512}, {128, 512, 256}, {128, 1024, 1024}, {1024, 1024, 1024}} {
		m, k, n := s[0], s[1], s[2]
		b.Run(fmt.Sprintf("%dx%dx%d", m, k, n), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 1))
			x := tensor.RandUniform(rng, tensor.Float32, -1, 1, m, k)
			w := tensor.RandUniform(rng, tensor.Float32, -1, 1, k, n)
			out := tensor.Zeros(tensor.Float32, m, n)
			b.ReportAllocs()
			for b.Loop() {
				ops.MatMulInto(out, x, w)
			}
			b.ReportMetric(2*float64(m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

func BenchmarkMatMulAlloc(b *testing.B) {
	for _, s := range [][3]int{{128, 784, 512}, {1024, 1024, 1024}} {
		m, k, n := s[0], s[1], s[2]
		b.Run(fmt.Sprintf("%dx%dx%d", m, k, n), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 1))
			x := tensor.RandUniform(rng, tensor.Float32, -1, 1, m, k)
			w := tensor.RandUniform(rng, tensor.Float32, -1, 1, k, n)
			b.ReportAllocs()
			for b.Loop() {
				ops.MatMul(x, w)
			}
			b.ReportMetric(2*float64(m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkConv2d reports float32 GFLOP/s (2·N·F·OH·OW·C·KH·KW per forward,
// twice that per backward) of a 3×3, padding-1 layer of a small CNN; the
// -into forms write into tensors and a ConvWork made once.
func BenchmarkConv2d(b *testing.B) {
	const n, c, h, w, f, k, pad = 128, 32, 14, 14, 64, 3, 1
	rng := rand.New(rand.NewPCG(1, 1))
	x := tensor.RandUniform(rng, tensor.Float32, -1, 1, n, c, h, w)
	wt := tensor.RandUniform(rng, tensor.Float32, -1, 1, f, c, k, k)
	bias := tensor.RandUniform(rng, tensor.Float32, -1, 1, f)
	g := tensor.RandUniform(rng, tensor.Float32, -1, 1, n, f, h, w)
	flops := 2 * float64(n*f*h*w*c*k*k)
	b.Run("forward", func(b *testing.B) {
		for b.Loop() {
			ops.Conv2d(x, wt, bias, 1, pad)
		}
		b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	})
	b.Run("backward", func(b *testing.B) {
		for b.Loop() {
			ops.Conv2dBackward(g, x, wt, 1, pad)
		}
		b.ReportMetric(2*flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	})
	var work ops.ConvWork
	y, gx, gw, gb := tensor.Zeros(tensor.Float32, n, f, h, w), tensor.Zeros(tensor.Float32, n, c, h, w), tensor.Zeros(tensor.Float32, f, c, k, k), tensor.Zeros(tensor.Float32, f)
	b.Run("forward-into", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ops.Conv2dInto(y, x, wt, bias, 1, pad, &work)
		}
		b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	})
	b.Run("backward-into", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ops.Conv2dBackwardInto(gx, gw, gb, g, x, wt, 1, pad, &work)
		}
		b.ReportMetric(2*flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	})
}
