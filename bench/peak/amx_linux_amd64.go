package main

import (
	"math/rand/v2"
	"syscall"
	"unsafe"

	"golang.org/x/sys/cpu"
)

// amxTiles is tdpTiles' operand: the tile configuration (palette 1, tiles
// 0-7 of 16 rows of 64 bytes) and four tiles of random bf16 pairs, filled
// by enableAMX; amxC is tileCall's C, a 16×32 tile of float32. Both start
// on a 64-byte line: a tile row across two lines makes a tile load or
// store about 2.3 times slower.
var amxTiles, amxC = lineAligned(64 + 4*1024), lineAligned(2048)

// lineAligned returns n bytes starting on a 64-byte boundary.
func lineAligned(n int) []byte {
	b := make([]byte, n+64)
	off := (64 - int(uintptr(unsafe.Pointer(&b[0]))%64)) % 64
	return b[off : off+n]
}

// enableAMX asks Linux for the AMX tile state (arch_prctl
// ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA): without it the first tile
// instruction raises SIGILL. The permission holds for the whole process.
func enableAMX() bool {
	if !cpu.X86.HasAMXTile || !cpu.X86.HasAMXBF16 {
		return false
	}
	const archReqXcompPerm, xfeatureXtiledata = 0x1023, 18
	if _, _, e := syscall.RawSyscall(syscall.SYS_ARCH_PRCTL, archReqXcompPerm, xfeatureXtiledata, 0); e != 0 {
		return false
	}
	amxTiles[0] = 1
	for t := range 8 {
		amxTiles[16+2*t], amxTiles[48+t] = 64, 16
	}
	for i := 64; i < len(amxTiles); i += 2 {
		amxTiles[i], amxTiles[i+1] = byte(rand.Uint32()), 0x3f // bf16 in [0.5, 2)
	}
	return true
}

func tdpTilesLoop(n int) { tdpTiles(n, &amxTiles[0]) }
func tdpChainLoop(n int) { tdpChain(n, &amxTiles[0]) }
func tileCallLoop(n int) { tileCall(n, &amxTiles[0], &amxC[0]) }
