//go:build !linux || !amd64

package main

func enableAMX() bool  { return false }
func tdpTilesLoop(int) { panic("peak: AMX on linux/amd64 only") }
func tdpChainLoop(int) { panic("peak: AMX on linux/amd64 only") }
func tileCallLoop(int) { panic("peak: AMX on linux/amd64 only") }
