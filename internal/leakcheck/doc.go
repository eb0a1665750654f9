// Package leakcheck fails a package's tests that leave goroutines behind,
// from its TestMain. It is for tests only.
package leakcheck
