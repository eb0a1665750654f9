//go:build race

package remote

// raceBuild: the race detector is on. The data plane then sends one write
// a piece instead of one writev: package syscall's read and write tell the
// detector that bytes read were written before, and writev does not, so
// every chain of messages through another process that crossed a data
// connection looked unordered, and a buffer reused the next step looked
// raced with the last step's reads of it.
const raceBuild = true
