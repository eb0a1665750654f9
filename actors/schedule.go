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
	// Interleaved is 1F1B over chunks: the chain is cut into stages ×
	// chunks positions and position c runs on stage c mod stages
	// (Megatron's virtual stages), so each stage's first forward starts
	// sooner and the bubble shrinks by the chunks.
	Interleaved
	// ZBH1 is 1F1B with the backward split into input gradients (B), sent
	// upstream at once, and weight gradients (W), run when the stage would
	// otherwise wait: Zero Bubble's H1, in 1F1B's memory.
	ZBH1
	// ZBV is ZBH1 over two chunks a stage placed in a V (stage i runs
	// positions i and 2·stages−1−i), so the first stage also ends the
	// chain and its backwards start at once: Zero Bubble's V schedule.
	ZBV
)

// scheduleNames are the schedules' config names, by Schedule.
var scheduleNames = [...]string{Sequential: "sequential", GPipe: "gpipe", OneFOneB: "1f1b", Interleaved: "interleaved", ZBH1: "zb-h1", ZBV: "zbv"}

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

// Limit returns how many micro-batches position i of p may start before
// their backwards come back, under s: 1F1B's p−i over the positions for
// every pipelined schedule but GPipe (under Interleaved the positions of
// every stage: its stage 0 then holds Megatron's (v+1)/2 stages' worth for
// v = 2). The programmed schedules' orders bound them
// otherwise (Programmed).
func (s Schedule) Limit(i, p, micros int) int {
	switch s {
	case Sequential:
		return 1
	case OneFOneB, Interleaved, ZBH1, ZBV:
		return max(1, p-i)
	}
	return max(1, micros)
}

// SplitsBackward reports whether s always splits the backward into input
// and weight gradients and runs the weight gradients where its order puts
// them, holding each micro-batch's activations until then (at most p
// micro-batches' on a stage, 1F1B's first stage's, as Order places them).
func (s Schedule) SplitsBackward() bool { return s == ZBH1 || s == ZBV }

// Programmed reports whether the stages of s run each step's ops in the
// order Order gives (the zero-bubble and interleaved schedules), rather
// than as their inputs come within Limit.
func (s Schedule) Programmed() bool { return s == Interleaved || s == ZBH1 || s == ZBV }

// Chunked reports whether s runs several positions on each stage
// (Plan's chunks).
func (s Schedule) Chunked() bool { return s == Interleaved || s == ZBV }

// Stage returns the stage that runs position c of a chain of stages ×
// chunks positions under s: c mod stages when interleaved, the V's arm
// under ZBV, c itself otherwise.
func (s Schedule) Stage(c, stages, chunks int) int {
	switch {
	case chunks <= 1 || !s.Chunked():
		return c
	case s == ZBV && c >= stages:
		return 2*stages - 1 - c
	}
	return c % stages
}
