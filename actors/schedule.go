package actors

import (
	"fmt"
	"slices"
	"strings"
)

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

// scheduleNames are the schedules' config names, by Schedule.
var scheduleNames = [...]string{Sequential: "sequential", GPipe: "gpipe", OneFOneB: "1f1b"}

// ScheduleNames lists the schedules' config names.
func ScheduleNames() []string { return slices.Clone(scheduleNames[:]) }

// ParseSchedule maps a config name onto a Schedule.
func ParseSchedule(name string) (Schedule, error) {
	if i := slices.Index(scheduleNames[:], name); i >= 0 {
		return Schedule(i), nil
	}
	return 0, fmt.Errorf("actors: unknown schedule %q (want one of %s)", name, strings.Join(scheduleNames[:], ", "))
}

func (s Schedule) String() string { return scheduleNames[s] }

// OneAtATime reports whether the coordinator sends a micro-batch only when
// the one before it is done (sequential): one stage actor is busy at a time.
func (s Schedule) OneAtATime() bool { return s == Sequential }

// BackwardsWait reports whether the backwards wait for every forward of the
// step (GPipe): the loss actor holds the output gradients until then.
func (s Schedule) BackwardsWait() bool { return s == GPipe }

// Limit returns how many micro-batches position i of p may hold at once under s.
func (s Schedule) Limit(i, p, micros int) int {
	switch s {
	case Sequential:
		return 1
	case OneFOneB:
		return max(1, p-i)
	}
	return max(1, micros)
}
