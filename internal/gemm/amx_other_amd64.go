//go:build !purego && !linux

package gemm

// amxPermitted: the tile state is asked of Linux only.
func amxPermitted() bool { return false }
