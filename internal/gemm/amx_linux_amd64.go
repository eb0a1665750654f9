//go:build !purego

package gemm

import "syscall"

// amxPermitted asks Linux for the AMX tile state (arch_prctl
// ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA) and reports whether it was
// granted: without it the first tile instruction raises SIGILL. The grant
// holds for every thread of the process, and the kernel saves the tiles
// with the rest of a thread's state at switches and signals.
func amxPermitted() bool {
	const archReqXcompPerm, xfeatureXtiledata = 0x1023, 18
	_, _, e := syscall.RawSyscall(syscall.SYS_ARCH_PRCTL, archReqXcompPerm, xfeatureXtiledata, 0)
	return e == 0
}
