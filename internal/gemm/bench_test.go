package gemm

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkSgemm measures the shapes of issue 5 (and the MNIST MLP's layers):
// 128×784×512 in the three layouts training uses, the others as A·B, each on
// one and two threads, reporting GFLOP/s and allocations.
func BenchmarkSgemm(b *testing.B) {
	type shape struct {
		m, n, k int
		tA, tB  bool
	}
	shapes := []shape{
		{128, 784, 512, false, false},
		{128, 784, 512, false, true},
		{128, 784, 512, true, false},
		{128, 512, 256, false, false},
		{128, 1024, 1024, false, false},
		{1024, 1024, 1024, false, false},
	}
	for _, s := range shapes {
		for _, th := range []int{1, 2} {
			name := fmt.Sprintf("%dx%dx%d/%s/threads=%d", s.m, s.n, s.k, layoutName(s.tA, s.tB), th)
			b.Run(name, func(b *testing.B) {
				rng := rand.New(rand.NewPCG(1, 2))
				o := newOperands(rng, s.tA, s.tB, s.m, s.n, s.k, 0)
				b.ReportAllocs()
				for b.Loop() {
					Threads(th).Sgemm(s.tA, s.tB, s.m, s.n, s.k, 1, o.a, o.lda, o.b, o.ldb, 0, o.c, o.ldc)
				}
				b.ReportMetric(2*float64(s.m*s.n*s.k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// BenchmarkMicroKernel measures each micro-kernel of the kernel set in use on
// L1-resident panels (kc = 512): the ceiling the blocked Sgemm works toward.
func BenchmarkMicroKernel(b *testing.B) {
	ks := kernels
	const k = 512
	for i, kern := range ks.kerns {
		nr := (i + 1) * ks.vec
		b.Run(fmt.Sprintf("%s/%dx%d", ks.name, ks.mr, nr), func(b *testing.B) {
			a := make([]float32, k*ks.mr)
			bp := make([]float32, k*nr)
			c := make([]float32, ks.mr*nr)
			for b.Loop() {
				kern(k, &a[0], &bp[0], &c[0], nr, 1, 1)
			}
			b.ReportMetric(float64(2*k*ks.mr*nr)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkSgemmChunked compares SgemmChunked with Sgemm on the weight
// gradients of an MLP, dW += dYᵀ·X: m = out, n = in, k = rows, op(A) = dYᵀ.
func BenchmarkSgemmChunked(b *testing.B) {
	for _, s := range [][3]int{{1024, 1024, 256}, {512, 784, 128}} {
		m, n, k := s[0], s[1], s[2]
		for _, th := range []int{1, 2} {
			for _, mode := range []string{"plain", "chunked"} {
				f := Threads.Sgemm
				if mode == "chunked" {
					f = Threads.SgemmChunked
				}
				b.Run(fmt.Sprintf("%dx%dx%d/TN/threads=%d/%s", m, n, k, th, mode), func(b *testing.B) {
					rng := rand.New(rand.NewPCG(1, 2))
					o := newOperands(rng, true, false, m, n, k, 0)
					func(th Threads) {
						b.ReportAllocs()
						b.ResetTimer()
						for b.Loop() {
							f(th, true, false, m, n, k, 1, o.a, o.lda, o.b, o.ldb, 1, o.c, o.ldc)
						}
						b.ReportMetric(2*float64(m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
					}(Threads(th))
				})
			}
		}
	}
}

// trainingShapes are the products a training step of each of three models
// runs, as m×n×k and layout (listed from the GEMM calls of a few bf16
// steps): the MNIST MLP at batch 128 (784→512→256→10: forward Y = X·Wᵀ,
// dX = dY·W, dW = dYᵀ·X), the CNN's im2col products (conv1 1→32 on 28×28,
// conv2 32→64 on 14×14 four samples a GEMM, forward, dcol = Wᵀ·dY and
// dW = dY·colᵀ) and its 3136→128→10 layers, and the GPT recipe (B·T = 768
// rows, D = 128: QKV, proj, fc, fc2, head, and one head's causal attention
// products over 32-query chunks of T = 64, head dim 32). The first layer
// of each model computes no input gradient.
var trainingShapes = []struct {
	name    string
	m, n, k int
	tA, tB  bool
}{
	// The MNIST MLP (batch 128).
	{"mlp/fc1", 128, 512, 784, false, true}, {"mlp/fc1.dW", 512, 784, 128, true, false},
	{"mlp/fc2", 128, 256, 512, false, true}, {"mlp/fc2.dX", 128, 512, 256, false, false}, {"mlp/fc2.dW", 256, 512, 128, true, false},
	{"mlp/fc3", 128, 10, 256, false, true}, {"mlp/fc3.dX", 128, 256, 10, false, false}, {"mlp/fc3.dW", 10, 256, 128, true, false},
	// The CNN (batch 128).
	{"cnn/conv1", 32, 784, 9, false, false}, {"cnn/conv1.dW", 32, 9, 784, false, true},
	{"cnn/conv2", 64, 784, 288, false, false}, {"cnn/conv2.dcol", 288, 784, 64, true, false}, {"cnn/conv2.dW", 64, 288, 196, false, true},
	{"cnn/fc1", 128, 128, 3136, false, true}, {"cnn/fc1.dX", 128, 3136, 128, false, false}, {"cnn/fc1.dW", 128, 3136, 128, true, false},
	{"cnn/fc2", 128, 10, 128, false, true}, {"cnn/fc2.dX", 128, 128, 10, false, false}, {"cnn/fc2.dW", 10, 128, 128, true, false},
	// The GPT recipe.
	{"gpt/qkv", 768, 384, 128, false, true}, {"gpt/qkv.dX", 768, 128, 384, false, false}, {"gpt/qkv.dW", 384, 128, 768, true, false},
	{"gpt/proj", 768, 128, 128, false, true}, {"gpt/proj.dX", 768, 128, 128, false, false}, {"gpt/proj.dW", 128, 128, 768, true, false},
	{"gpt/fc", 768, 512, 128, false, true}, {"gpt/fc.dX", 768, 128, 512, false, false}, {"gpt/fc.dW", 512, 128, 768, true, false},
	{"gpt/fc2", 768, 128, 512, false, true}, {"gpt/fc2.dX", 768, 512, 128, false, false}, {"gpt/fc2.dW", 128, 512, 768, true, false},
	{"gpt/head", 768, 65, 128, false, true}, {"gpt/head.dX", 768, 128, 65, false, false}, {"gpt/head.dW", 65, 128, 768, true, false},
	// S = Q·Kᵀ and dP = dO·Vᵀ; O = P·V and dQ = dS·K; dV = Pᵀ·dO and
	// dK = dSᵀ·Q; over 32 keys and over 64
	{"gpt/attn.QKt", 32, 32, 32, false, true}, {"gpt/attn.QKt64", 32, 64, 32, false, true},
	{"gpt/attn.PV", 32, 32, 32, false, false}, {"gpt/attn.PV64", 32, 32, 64, false, false},
	{"gpt/attn.dV", 32, 32, 32, true, false}, {"gpt/attn.dV64", 32, 32, 64, true, false},
}

// bf16AMX is Threads.SgemmBF16 in AMX's arithmetic, in Sgemm's signature.
func bf16AMX(t Threads, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	t.SgemmBF16(AMX, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// BenchmarkTrainingShapes compares Sgemm and SgemmBF16 on one thread on
// trainingShapes, the two interleaved per shape. For medians of interleaved
// runs: GOMAXPROCS=1 go test -run '^$' -bench TrainingShapes -count 5 ./internal/gemm/
func BenchmarkTrainingShapes(b *testing.B) {
	for _, s := range trainingShapes {
		for _, prec := range []string{"fp32", "bf16"} {
			b.Run(s.name+"/"+prec, func(b *testing.B) {
				o := newOperands(rand.New(rand.NewPCG(1, 2)), s.tA, s.tB, s.m, s.n, s.k, 0)
				f := Threads.Sgemm
				if prec == "bf16" {
					f = bf16AMX
				}
				for b.Loop() {
					f(1, s.tA, s.tB, s.m, s.n, s.k, 1, o.a, o.lda, o.b, o.ldb, 0, o.c, o.ldc)
				}
				b.ReportMetric(2*float64(s.m*s.n*s.k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// BenchmarkSmallK times a 128×256 output at small k in fp32 and bf16, one
// thread: below a tile instruction's 32 steps the bf16 time is mostly
// writing C. GOMAXPROCS=1 go test -run '^$' -bench SmallK ./internal/gemm/
func BenchmarkSmallK(b *testing.B) {
	for _, k := range []int{2, 10, 32, 64} {
		for _, prec := range []string{"fp32", "bf16"} {
			b.Run(fmt.Sprintf("k=%d/%s", k, prec), func(b *testing.B) {
				o := newOperands(rand.New(rand.NewPCG(1, 2)), false, false, 128, 256, k, 0)
				f := Threads.Sgemm
				if prec == "bf16" {
					f = bf16AMX
				}
				for b.Loop() {
					f(1, false, false, 128, 256, k, 1, o.a, o.lda, o.b, o.ldb, 0, o.c, o.ldc)
				}
			})
		}
	}
}
