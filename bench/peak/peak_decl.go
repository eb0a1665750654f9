//go:build amd64

package main

//go:noescape
func fmaZMM(n int)

//go:noescape
func fmaYMM(n int)
