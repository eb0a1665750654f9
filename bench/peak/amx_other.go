//go:build !amd64

package main

func enableAMX() bool  { return false }
func tdpTilesLoop(int) { panic("peak: amd64 only") }
func tdpChainLoop(int) { panic("peak: amd64 only") }
