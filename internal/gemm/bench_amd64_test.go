//go:build !purego

package gemm

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkAMXFMA times the amx-fma set, AMX's arithmetic on CPUs without
// AMX, against Sgemm on the training shapes, one thread:
// GOMAXPROCS=1 go test -run '^$' -bench AMXFMA ./internal/gemm/
func BenchmarkAMXFMA(b *testing.B) {
	for _, s := range trainingShapes {
		for _, prec := range []string{"fp32", "amx-fma"} {
			b.Run(s.name+"/"+prec, func(b *testing.B) {
				o := newOperands(rand.New(rand.NewPCG(1, 2)), s.tA, s.tB, s.m, s.n, s.k, 0)
				saved := bf16Sets[AMX]
				defer func() { bf16Sets[AMX] = saved }()
				bf16Sets[AMX] = &amxFMAKernels
				f := Threads.Sgemm
				if prec != "fp32" {
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
