//go:build !amd64 || purego

package vec

func expShifted64Fast(dst []float64, x []float32, m float64) int { return 0 }
