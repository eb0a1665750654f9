package leakcheck_test

import (
	"fmt"

	"github.com/pipetrain/pipetrain/internal/leakcheck"
)

func Example() {
	// in a TestMain: os.Exit(leakcheck.After(m.Run())); tests that failed
	// keep their status, unchecked
	fmt.Println(leakcheck.After(2))
	// Output: 2
}
