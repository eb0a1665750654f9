//go:build amd64

package main

//go:noescape
func fmaZMM(n int)

//go:noescape
func fmaYMM(n int)

//go:noescape
func dpbf16ZMM(n int)

//go:noescape
func dpbf16Chain(n int)

//go:noescape
func fmaChain(n int)

//go:noescape
func addChain(n int)

//go:noescape
func tdpTiles(n int, tiles *byte)

//go:noescape
func tdpChain(n int, tiles *byte)

//go:noescape
func tileCall(n int, tiles, c *byte)
