// Package prototest checks, in a package's tests, that the Go code generated
// from its .proto file and committed is what go generate makes of it, so
// that the two cannot drift apart. It is for tests only.
package prototest
