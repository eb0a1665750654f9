package actors

import "fmt"

// Schedule is how a pipeline admits micro-batches.
type Schedule uint8

const (
	// Sequential sends one micro-batch at a time through the actors.
	Sequential Schedule = iota
	// GPipe runs every forward of a mini-batch, then every backward.
	GPipe
	// OneFOneB (PipeDream-Flush) lets stage i of p hold at most p-i micro-batches
	// and runs a ready backward before a new forward.
	OneFOneB
)

// ParseSchedule maps a config name onto a Schedule.
func ParseSchedule(name string) (Schedule, error) {
	switch name {
	case "sequential":
		return Sequential, nil
	case "gpipe":
		return GPipe, nil
	case "1f1b":
		return OneFOneB, nil
	}
	return 0, fmt.Errorf("actors: unknown schedule %q (want sequential, gpipe or 1f1b)", name)
}

func (s Schedule) String() string {
	return [...]string{"sequential", "gpipe", "1f1b"}[s]
}

// Limit returns how many micro-batches node i of p may hold at once under s.
func (s Schedule) Limit(i, p, micros int) int {
	switch s {
	case Sequential:
		return 1
	case OneFOneB:
		return max(1, p-i)
	}
	return max(1, micros)
}
