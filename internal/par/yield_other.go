//go:build !linux

package par

func osYield() {}
