package actors_test

import (
	"fmt"

	"github.com/pipetrain/pipetrain/actors"
)

// Under 1F1B, stage i of p may hold p-i micro-batches at once.
func ExampleSchedule_Limit() {
	s, _ := actors.ParseSchedule("1f1b")
	for i := range 3 {
		fmt.Printf("stage %d: %d in flight\n", i, s.Limit(i, 3, 8))
	}
	// Output:
	// stage 0: 3 in flight
	// stage 1: 2 in flight
	// stage 2: 1 in flight
}
