package pipeline

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/pipetrain/pipetrain/actors"
)

// Bubble returns the idle fraction of the stages during the forward and
// backward phase of the spans in stats: 1 - mean busy time / the phase's
// span, the phase running from the first forward to the last backward or
// weight gradient. A stage is a stage actor, or under a chunked schedule
// the actors of a stage's positions, which take turns on its cores. With
// equal stages it approaches (p-1)/(m+p-1) under GPipe and 1F1B.
func Bubble(stats []actors.Stats, stages []StageInfo) float64 {
	type lane struct{ replica, stage, shard int }
	laneOf := map[int]lane{}
	for _, s := range stages {
		laneOf[s.Actor] = lane{s.Replica, s.Stage, s.Shard}
	}
	lanes := map[lane]bool{}
	var first, last time.Duration = 1<<62 - 1, 0
	busy := time.Duration(0)
	for _, st := range stats {
		l, ok := laneOf[st.Actor]
		if !ok {
			continue
		}
		lanes[l] = true
		for _, sp := range st.Spans {
			if !sp.Kind.Computes() {
				continue
			}
			first, last = min(first, sp.Start), max(last, sp.Start+sp.Dur)
			busy += sp.Dur
		}
	}
	if len(lanes) == 0 || last <= first {
		return 0
	}
	return 1 - float64(busy)/float64(len(lanes))/float64(last-first)
}

// traceEvent is one record of the Chrome trace event format (Perfetto reads it).
type traceEvent struct {
	Name string         `json:"name"`
	Ph   string         `json:"ph"`
	Ts   float64        `json:"ts"` // microseconds
	Dur  float64        `json:"dur,omitempty"`
	Pid  int            `json:"pid"`
	Tid  int            `json:"tid"`
	Args map[string]any `json:"args,omitempty"`
}

// WriteTrace writes every span recorded so far (collected by Stats with reset)
// as Chrome trace-event JSON: a track per actor, a span per forward, backward
// and update, labelled by step and micro-batch.
func (e *Engine) WriteTrace(w io.Writer) error {
	if _, err := e.Stats(true); err != nil {
		return err
	}
	var evs []traceEvent
	ids := make([]int, 0, len(e.names))
	for id := range e.names {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	named := map[int]bool{}
	for _, id := range ids {
		// a chunked schedule's stage is one track: its positions' actors
		// take turns on its cores, and the track shows in which order
		tid, track, chunk := id, e.names[id], -1
		if id < len(e.plan.Slots) && e.plan.Chunks > 1 {
			st, c := e.plan.StageOf(e.plan.Slots[id].Position)
			tid, track, chunk = st, fmt.Sprintf("stage %d", st), c
		}
		if !named[tid] {
			named[tid] = true
			evs = append(evs, traceEvent{Name: "thread_name", Ph: "M", Pid: 1, Tid: tid, Args: map[string]any{"name": track}})
		}
		for _, sp := range e.spans[id] {
			name := fmt.Sprintf("%s s%d", sp.Kind.String(), sp.Step)
			args := map[string]any{"step": sp.Step}
			if sp.Micro >= 0 {
				name += fmt.Sprintf(" m%d", sp.Micro)
				args["micro_batch"] = sp.Micro
			}
			if chunk >= 0 {
				name += fmt.Sprintf(" c%d", chunk)
				args["chunk"] = chunk
			}
			evs = append(evs, traceEvent{Name: name, Ph: "X", Ts: float64(sp.Start.Nanoseconds()) / 1e3,
				Dur: float64(sp.Dur.Nanoseconds()) / 1e3, Pid: 1, Tid: tid, Args: args})
		}
	}
	enc := json.NewEncoder(w)
	return enc.Encode(map[string]any{"traceEvents": evs, "displayTimeUnit": "ms"})
}
