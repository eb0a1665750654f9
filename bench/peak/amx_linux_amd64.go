package main

import (
	"math/rand/v2"
	"syscall"

	"golang.org/x/sys/cpu"
)

// amxTiles is tdpTiles' operand: the tile configuration (palette 1, tiles
// 0-7 of 16 rows of 64 bytes) and four tiles of random bf16 pairs, filled
// by enableAMX.
var amxTiles [64 + 4*1024]byte

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
