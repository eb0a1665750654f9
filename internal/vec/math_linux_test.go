//go:build linux

package vec

import (
	"syscall"
	"testing"
	"unsafe"
)

// TestMathPageEnd: kernels read and write nothing past the end of their
// slices, even where the next page is unmapped (the masked tails).
func TestMathPageEnd(t *testing.T) {
	page := syscall.Getpagesize()
	mem, err := syscall.Mmap(-1, 0, 2*page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Skip("mmap:", err)
	}
	defer syscall.Munmap(mem)
	if err := syscall.Mprotect(mem[page:], syscall.PROT_NONE); err != nil {
		t.Skip("mprotect:", err)
	}
	all := unsafe.Slice((*float32)(unsafe.Pointer(&mem[0])), page/4)
	for _, k := range mtKernels() {
		for n := 1; n <= 40; n++ {
			x := all[len(all)-n:]
			for i := range x {
				x[i] = float32(i) - 20
			}
			dy := make([]float32, n)
			k.exp(x, x)
			k.gelu(x, x)
			k.geluBackward(x, dy, x)
			k.geluBackward(dy, x, x)
			k.geluBackward(dy, dy, x)
		}
	}
}
