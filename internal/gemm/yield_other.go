//go:build !linux

package gemm

func osYield() {}
