//go:build !amd64

package main

// The loops are amd64 assembly; elsewhere the CPU flags that select them
// are false and they never run.
func fmaZMM(int)      { panic("peak: amd64 only") }
func fmaYMM(int)      { panic("peak: amd64 only") }
func dpbf16ZMM(int)   { panic("peak: amd64 only") }
func dpbf16Chain(int) { panic("peak: amd64 only") }
func fmaChain(int)    { panic("peak: amd64 only") }
func addChain(int)    { panic("peak: amd64 only") }
