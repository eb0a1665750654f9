package actors

import (
	"cmp"
	"container/heap"
	"fmt"
	"math"
	"slices"
	"strings"
)

// SimSchedule is a schedule the simulator knows, by its config name.
type SimSchedule string

// The schedules Simulate replays.
const (
	SimSequential  SimSchedule = "sequential"  // one micro-batch at a time through every stage
	SimGPipe       SimSchedule = "gpipe"       // every forward, then every backward
	Sim1F1B        SimSchedule = "1f1b"        // stage i holds at most p − i micro-batches
	SimInterleaved SimSchedule = "interleaved" // Megatron's 1F1B over v chunks a stage
	SimZBH1        SimSchedule = "zb-h1"       // 1F1B with the weight gradients filling the bubbles
	SimZBV         SimSchedule = "zbv"         // two chunks a stage in a V, weight gradients filling the bubbles
)

// SimKind is what an op computes: F the forward, B the input gradient (or
// the whole backward, when the schedule does not split it), W the weight
// gradient.
type SimKind byte

// The kinds of op.
const (
	SimF SimKind = 'F'
	SimB SimKind = 'B'
	SimW SimKind = 'W'
)

// SimOp is one op of a simulated step: a pass of micro-batch Micro
// through chunk Chunk (its place in the chain of p·v chunks), from Start to
// End seconds.
type SimOp struct {
	Kind       SimKind
	Micro      int
	Chunk      int
	Start, End float64
}

// SimCosts is what the simulator charges, in seconds: each chunk's forward
// (F), input gradient (B) and weight gradient (W), in chain order, or one
// value for every chunk; a schedule that does not split the backward runs
// B+W as one op. Hop is a transfer between stages, each way.
type SimCosts struct {
	F, B, W []float64
	Hop     float64
}

// SimResult is a simulated step.
type SimResult struct {
	Schedule              SimSchedule
	Stages, Micro, Chunks int  // p, m and the chunks each stage holds
	Split                 bool // B and W are ops of their own

	Step   float64   // the first op's start to the last one's end
	Busy   []float64 // each stage's compute
	Bubble float64   // 1 − ΣBusy / (Stages · Step)
	// SpanBubble counts each stage's idle time between its own first and
	// last op only, against the longest such span: the bubble left once a
	// stage may start the next step as soon as its part of this one is
	// done (the later stages' late start then overlaps the previous step's
	// tail), which is what zero bubble schedules are designed for.
	SpanBubble float64

	// Peak is each stage's most activations held at once, in chunks: a
	// micro-batch's chunk holds them from its F's start until its W (or
	// fused B) ends. PeakFull counts them until the B's end instead: what a
	// layer keeps before its input gradient frees all that the weight
	// gradient does not need.
	Peak, PeakFull []int

	Ops [][]SimOp // each stage's ops in the order they run
}

// Simulate replays one training step of schedule s over p stages and m
// micro-batches, each stage holding v chunks of the chain (1 for
// sequential, gpipe, 1f1b and zb-h1; 2 for zbv; any for interleaved, whose
// chunk c runs on stage c mod p), with the costs cost. Each schedule is
// first written as each stage's ordered list of ops, then replayed: an op
// starts when its stage is free and its inputs are there (F of chunk c
// after F of chunk c−1 of the same micro-batch, B of chunk c after B of
// chunk c+1 and F of chunk c, W after B of its chunk; a Hop later when they
// ran on another stage). The result is deterministic and depends on
// nothing but the arguments.
func Simulate(s SimSchedule, p, m, v int, cost SimCosts) (*SimResult, error) {
	sm := &sim{kind: s, p: p, m: m, v: v, cost: cost}
	if err := sm.check(); err != nil {
		return nil, err
	}
	order, err := sm.order()
	if err != nil {
		return nil, err
	}
	return sm.replay(order)
}

// sim is a simulation's parameters.
type sim struct {
	kind    SimSchedule
	p, m, v int
	split   bool
	cost    SimCosts
}

// simOp names an op before it is timed.
type simOp struct {
	kind         SimKind
	micro, chunk int
}

func (o simOp) String() string {
	return fmt.Sprintf("%c(micro %d, chunk %d)", o.kind, o.micro, o.chunk)
}

// check refuses what the schedule cannot run, and notes whether it
// splits the backward.
func (s *sim) check() error {
	if s.p < 1 || s.m < 1 {
		return fmt.Errorf("actors: simulate %s: %d stages and %d micro-batches: want at least 1 of each", s.kind, s.p, s.m)
	}
	want := 1
	switch s.kind {
	case SimSequential, SimGPipe, Sim1F1B:
	case SimZBH1:
		s.split = true
	case SimZBV:
		want, s.split = 2, true
	case SimInterleaved:
		want = max(1, s.v)
		// Megatron's order walks the micro-batches in groups of p
		if s.m%s.p != 0 {
			return fmt.Errorf("actors: simulate interleaved: %d micro-batches is not a multiple of the %d stages", s.m, s.p)
		}
	default:
		return fmt.Errorf("actors: simulate: unknown schedule %q (want sequential, gpipe, 1f1b, interleaved, zb-h1 or zbv)", s.kind)
	}
	if s.v != want {
		return fmt.Errorf("actors: simulate %s: %d chunks a stage, want %d", s.kind, s.v, want)
	}
	n := s.chunks()
	for _, c := range []struct {
		name string
		x    []float64
		zero bool // may be 0
	}{{"F", s.cost.F, false}, {"B", s.cost.B, false}, {"W", s.cost.W, true}} {
		if len(c.x) != 1 && len(c.x) != n && !(c.zero && len(c.x) == 0) {
			return fmt.Errorf("actors: simulate %s: %d %s costs for %d chunks, want 1 or %d", s.kind, len(c.x), c.name, n, n)
		}
		for i, x := range c.x {
			if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 || (x == 0 && !c.zero) {
				want := "a positive number"
				if c.zero {
					want = "0 or more"
				}
				return fmt.Errorf("actors: simulate %s: chunk %d's %s cost %v, want %s", s.kind, i, c.name, x, want)
			}
		}
	}
	if !(s.cost.Hop >= 0) || math.IsInf(s.cost.Hop, 0) {
		return fmt.Errorf("actors: simulate %s: hop cost %v, want 0 or more", s.kind, s.cost.Hop)
	}
	return nil
}

func (s *sim) chunks() int { return s.p * s.v }

// stageOf is the stage that runs chunk c.
func (s *sim) stageOf(c int) int {
	if s.kind == SimZBV && c >= s.p {
		return 2*s.p - 1 - c // the V: stage i holds chunks i and 2p−1−i
	}
	return c % s.p
}

func costAt(x []float64, c int) float64 {
	switch len(x) {
	case 0:
		return 0
	case 1:
		return x[0]
	}
	return x[c]
}

// dur is an op's cost; an unsplit backward is B and W in one.
func (s *sim) dur(o simOp) float64 {
	switch o.kind {
	case SimF:
		return costAt(s.cost.F, o.chunk)
	case SimW:
		return costAt(s.cost.W, o.chunk)
	}
	if s.split {
		return costAt(s.cost.B, o.chunk)
	}
	return costAt(s.cost.B, o.chunk) + costAt(s.cost.W, o.chunk)
}

// id numbers an op for the tables of a replay.
func (s *sim) id(o simOp) int {
	k := 0
	switch o.kind {
	case SimB:
		k = 1
	case SimW:
		k = 2
	}
	return (k*s.m+o.micro)*s.chunks() + o.chunk
}

// deps lists the ops o needs done first.
func (s *sim) deps(o simOp) []simOp {
	switch o.kind {
	case SimF:
		if o.chunk > 0 {
			return []simOp{{SimF, o.micro, o.chunk - 1}}
		}
		return nil
	case SimB:
		d := []simOp{{SimF, o.micro, o.chunk}}
		if o.chunk+1 < s.chunks() {
			d = append(d, simOp{SimB, o.micro, o.chunk + 1})
		}
		return d
	}
	return []simOp{{SimB, o.micro, o.chunk}}
}

// order writes each stage's list of ops for the schedule.
func (s *sim) order() ([][]simOp, error) {
	p, m := s.p, s.m
	order := make([][]simOp, p)
	for st := range p {
		add := func(k SimKind, j, c int) { order[st] = append(order[st], simOp{k, j, c}) }
		switch s.kind {
		case SimSequential:
			for j := range m {
				add(SimF, j, st)
				add(SimB, j, st)
			}
		case SimGPipe:
			for j := range m {
				add(SimF, j, st)
			}
			for j := range m {
				add(SimB, j, st)
			}
		case Sim1F1B, SimZBH1:
			order[st] = s.oneFOneB(st)
		case SimInterleaved:
			order[st] = s.interleaved(st)
		case SimZBV:
			order[st] = s.vShape(st)
		}
	}
	switch s.kind {
	case SimZBH1:
		// 1F1B's forwards and input gradients, so at most p − i micro-batches
		// before their B as in 1F1B; until their W at most p, 1F1B's peak
		// (its first stage's), as in the Zero Bubble paper's ZB-H1
		return s.greedy(order, p)
	case SimZBV:
		// at most the activations of p micro-batches through a whole stage:
		// 1F1B's first stage's
		return s.greedy(order, 2*p)
	}
	return order, nil
}

// oneFOneB is stage st's 1F1B order: p − st − 1 forwards, then a forward
// and a backward in turn, then the backwards left.
func (s *sim) oneFOneB(st int) []simOp {
	warm := min(s.p-st-1, s.m)
	var ops []simOp
	for j := range warm {
		ops = append(ops, simOp{SimF, j, st})
	}
	for k := range s.m - warm {
		ops = append(ops, simOp{SimF, warm + k, st}, simOp{SimB, k, st})
	}
	for j := s.m - warm; j < s.m; j++ {
		ops = append(ops, simOp{SimB, j, st})
	}
	return ops
}

// interleaved is stage st's order under Megatron's interleaved 1F1B: the
// stage's k-th forward is micro-batch (k / pv)·p + k mod p of its chunk
// (k mod pv) / p, its backwards walk the chunks the other way; it runs
// 2(p − st − 1) + (v − 1)·p forwards first (all of them when m = p), then a
// forward and a backward in turn.
func (s *sim) interleaved(st int) []simOp {
	p, v := s.p, s.v
	total := s.m * v
	at := func(k int, fwd bool) simOp {
		c := (k % (p * v)) / p
		kind := SimF
		if !fwd {
			c, kind = v-1-c, SimB
		}
		return simOp{kind, (k/(p*v))*p + k%p, c*p + st}
	}
	warm := min(2*(p-st-1)+(v-1)*p, total)
	if s.m == p {
		warm = total
	}
	var ops []simOp
	for k := range warm {
		ops = append(ops, at(k, true))
	}
	for k := range total - warm {
		ops = append(ops, at(warm+k, true), at(k, false))
	}
	for k := total - warm; k < total; k++ {
		ops = append(ops, at(k, false))
	}
	return ops
}

// vShape is stage st's forwards and input gradients under ZBV (the Zero
// Bubble paper's V schedule, as PyTorch's ScheduleZBVZeroBubble writes it):
// the stage holds chunk st (its first) and 2p−1−st (its second); it runs
// 2(p−st)−1 forwards of the first, st pairs of forwards of the second and
// the first, p−st forwards and backwards of the second, then in turn a
// forward and a backward of the first and of the second, and the backwards
// left. Written for at least 2p−1 micro-batches, those past m dropped; W's
// are left to greedy.
func (s *sim) vShape(st int) []simOp {
	p := s.p
	n := max(s.m, 2*p-1)
	first, second := st, 2*p-1-st
	var ops []simOp
	count := map[simOp]int{}
	add := func(k SimKind, c int) {
		key := simOp{kind: k, chunk: c}
		if j := count[key]; j < s.m {
			ops = append(ops, simOp{k, j, c})
		}
		count[key]++
	}
	for range 2*(p-st) - 1 {
		add(SimF, first)
	}
	for range st {
		add(SimF, second)
		add(SimF, first)
	}
	for range p - st {
		add(SimF, second)
		add(SimB, second)
	}
	for count[simOp{kind: SimF, chunk: second}] < n {
		if count[simOp{kind: SimF, chunk: first}] < n {
			add(SimF, first)
		}
		add(SimB, first)
		add(SimF, second)
		add(SimB, second)
	}
	for range st {
		add(SimB, first)
		add(SimB, second)
	}
	for range p - st {
		add(SimB, first)
	}
	return ops
}

// greedy times the stages' lists of F and B and places the W's: a stage
// that is free runs its next F or B if that is ready (and, for an F, the
// stage holds fewer than limit chunks' activations), else its oldest W
// waiting, else it waits; its W's left run at the end. It returns the lists
// with the W's in place.
func (s *sim) greedy(fb [][]simOp, limit int) ([][]simOp, error) {
	return s.greedyLimits(fb, func(int) int { return limit })
}

// greedyLimits is greedy with a limit for each stage.
func (s *sim) greedyLimits(fb [][]simOp, limitOf func(stage int) int) ([][]simOp, error) {
	r := s.newRun()
	next := make([]int, s.p)
	waiting := make([][]simOp, s.p)
	held := make([]int, s.p)
	ops, err := r.run(func(st int, t float64) (simOp, bool) {
		if next[st] < len(fb[st]) {
			o := fb[st][next[st]]
			if at, ok := r.ready(o); ok && at <= t && (o.kind != SimF || held[st] < limitOf(st)) {
				next[st]++
				switch o.kind {
				case SimF:
					held[st]++
				case SimB:
					waiting[st] = append(waiting[st], simOp{SimW, o.micro, o.chunk})
				}
				return o, true
			}
		}
		if len(waiting[st]) > 0 {
			w := waiting[st][0]
			waiting[st] = waiting[st][1:]
			held[st]--
			return w, true
		}
		return simOp{}, false
	})
	if err != nil {
		return nil, fmt.Errorf("actors: simulate %s: placing the W's: %w", s.kind, err)
	}
	order := make([][]simOp, s.p)
	for st, l := range ops {
		for _, o := range l {
			order[st] = append(order[st], simOp{o.Kind, o.Micro, o.Chunk})
		}
	}
	return order, nil
}

// replay times the stages' lists, each stage running its ops in its
// list's order, after checking that they hold each op of the step once, on
// the stage of its chunk.
func (s *sim) replay(order [][]simOp) (*SimResult, error) {
	if len(order) != s.p {
		return nil, fmt.Errorf("actors: simulate %s: %d stages' lists for %d stages", s.kind, len(order), s.p)
	}
	kinds := 2
	if s.split {
		kinds = 3
	}
	seen := make([]bool, 3*s.m*s.chunks())
	n := 0
	for st, l := range order {
		for _, o := range l {
			switch {
			case o.micro < 0 || o.micro >= s.m || o.chunk < 0 || o.chunk >= s.chunks() ||
				(o.kind != SimF && o.kind != SimB && (o.kind != SimW || !s.split)):
				return nil, fmt.Errorf("actors: simulate %s: stage %d: no such op %v", s.kind, st, o)
			case s.stageOf(o.chunk) != st:
				return nil, fmt.Errorf("actors: simulate %s: stage %d runs %v, whose chunk is stage %d's", s.kind, st, o, s.stageOf(o.chunk))
			case seen[s.id(o)]:
				return nil, fmt.Errorf("actors: simulate %s: stage %d runs %v twice", s.kind, st, o)
			}
			seen[s.id(o)] = true
			n++
		}
	}
	if want := kinds * s.m * s.chunks(); n != want {
		return nil, fmt.Errorf("actors: simulate %s: the lists hold %d ops of the step's %d", s.kind, n, want)
	}
	r := s.newRun()
	pos := make([]int, s.p)
	ops, err := r.run(func(st int, t float64) (simOp, bool) {
		if pos[st] == len(order[st]) {
			return simOp{}, false
		}
		o := order[st][pos[st]]
		if at, ok := r.ready(o); !ok || at > t {
			return simOp{}, false
		}
		pos[st]++
		return o, true
	})
	if err != nil {
		var stuck []string
		for st, l := range order {
			if pos[st] < len(l) {
				stuck = append(stuck, fmt.Sprintf("stage %d at %v", st, l[pos[st]]))
			}
		}
		return nil, fmt.Errorf("actors: simulate %s: %w: %s", s.kind, err, strings.Join(stuck, ", "))
	}
	return s.result(ops), nil
}

// run is one timing of the stages' ops.
type run struct {
	*sim
	end  []float64 // each op's end, by id; NaN until it has started
	free []float64 // each stage's time it is next free
}

func (s *sim) newRun() *run {
	r := &run{sim: s, end: make([]float64, 3*s.m*s.chunks()), free: make([]float64, s.p)}
	for i := range r.end {
		r.end[i] = math.NaN()
	}
	return r
}

// ready is when o's inputs are all on its stage, and false while one of
// them has not started.
func (r *run) ready(o simOp) (float64, bool) {
	at := 0.0
	for _, d := range r.deps(o) {
		e := r.end[r.id(d)]
		if math.IsNaN(e) {
			return 0, false
		}
		if r.stageOf(d.chunk) != r.stageOf(o.chunk) {
			e += r.cost.Hop
		}
		at = max(at, e)
	}
	return at, true
}

// errDeadlock is a replay in which no stage can run its next op and none
// is running.
var errDeadlock = fmt.Errorf("no stage can go on")

// run moves a clock from event to event (an op's end, an input's arrival
// on another stage); at each, every free stage, the lowest first, starts
// the ops that next picks for it until it picks none. F and B cost more
// than nothing, so an op started at a moment readies no other stage's op
// at that moment and one pass over the stages is enough.
func (r *run) run(next func(stage int, t float64) (simOp, bool)) ([][]SimOp, error) {
	ops := make([][]SimOp, r.p)
	total := 2 * r.m * r.chunks()
	if r.split {
		total += r.m * r.chunks()
	}
	var times timeHeap
	for t, done := 0.0, 0; ; {
		for st := range r.p {
			for r.free[st] <= t {
				o, ok := next(st, t)
				if !ok {
					break
				}
				end := t + r.dur(o)
				r.end[r.id(o)] = end
				r.free[st] = end
				ops[st] = append(ops[st], SimOp{o.kind, o.micro, o.chunk, t, end})
				heap.Push(&times, end)
				if r.cost.Hop > 0 {
					heap.Push(&times, end+r.cost.Hop)
				}
				done++
			}
		}
		if done == total {
			return ops, nil
		}
		for times.Len() > 0 && times[0] <= t {
			heap.Pop(&times)
		}
		if times.Len() == 0 {
			return nil, errDeadlock
		}
		t = heap.Pop(&times).(float64)
	}
}

// timeHeap is the moments to come, earliest first.
type timeHeap []float64

func (h timeHeap) Len() int           { return len(h) }
func (h timeHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h timeHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *timeHeap) Push(x any)        { *h = append(*h, x.(float64)) }
func (h *timeHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// result sums up a replay.
func (s *sim) result(ops [][]SimOp) *SimResult {
	r := &SimResult{Schedule: s.kind, Stages: s.p, Micro: s.m, Chunks: s.v, Split: s.split, Ops: ops,
		Busy: make([]float64, s.p), Peak: make([]int, s.p), PeakFull: make([]int, s.p)}
	var busy, span float64
	for st, l := range ops {
		first, last := math.Inf(1), 0.0
		for _, o := range l {
			r.Busy[st] += o.End - o.Start
			first, last = min(first, o.Start), max(last, o.End)
		}
		busy += r.Busy[st]
		span = max(span, last-first)
		r.Step = max(r.Step, last)
		r.Peak[st] = peakHeld(l, func(o SimOp) bool { return o.Kind == SimW || (o.Kind == SimB && !s.split) })
		r.PeakFull[st] = peakHeld(l, func(o SimOp) bool { return o.Kind == SimB })
	}
	r.Bubble = 1 - busy/(float64(s.p)*r.Step)
	r.SpanBubble = 1 - busy/(float64(s.p)*span)
	return r
}

// peakHeld is the most chunks' activations held at once by a stage that
// runs ops: from an F's start until the end of the op release says frees
// them; one freed at the moment another is taken is not counted twice.
func peakHeld(ops []SimOp, release func(SimOp) bool) int {
	type change struct {
		at float64
		d  int
	}
	var cs []change
	for _, o := range ops {
		if o.Kind == SimF {
			cs = append(cs, change{o.Start, 1})
		}
		if release(o) {
			cs = append(cs, change{o.End, -1})
		}
	}
	// frees first at the same moment
	slices.SortStableFunc(cs, func(a, b change) int { return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.d, b.d)) })
	held, peak := 0, 0
	for _, c := range cs {
		held += c.d
		peak = max(peak, held)
	}
	return peak
}

// Timeline draws the step, a row a stage, a cell of two characters for
// each unit of time: the op running at the cell's middle, as its kind (F,
// B, W; in lower case for a stage's second and later chunks) and its
// micro-batch (0-9, then a-z, modulo 36), or ".." when the stage is idle.
func (r *SimResult) Timeline(unit float64) string {
	const digits = "0123456789abcdefghijklmnopqrstuvwxyz"
	cells := int(math.Ceil(r.Step/unit - 1e-9))
	var b strings.Builder
	for st, ops := range r.Ops {
		fmt.Fprintf(&b, "%*d ", len(fmt.Sprint(r.Stages-1)), st)
		i := 0
		for k := range cells {
			mid := (float64(k) + 0.5) * unit
			for i < len(ops) && ops[i].End <= mid {
				i++
			}
			if i == len(ops) || ops[i].Start > mid {
				b.WriteString("..")
				continue
			}
			kind := rune(ops[i].Kind)
			if ops[i].Chunk/r.Stages > 0 {
				kind += 'a' - 'A'
			}
			b.WriteRune(kind)
			b.WriteByte(digits[ops[i].Micro%len(digits)])
		}
		b.WriteString("\n")
	}
	return b.String()
}

// Order returns each stage's ops for one training step of s over stages
// stages, micros micro-batches and chunks positions a stage, in the order
// Simulate runs them with every op costing the same: the order the
// schedule's authors wrote, which the stages of a programmed schedule
// (Programmed) follow. An op's Chunk is its position in the chain.
func Order(s Schedule, stages, micros, chunks int) ([][]SimOp, error) {
	one := []float64{1}
	sm := &sim{kind: SimSchedule(s.String()), p: stages, m: micros, v: chunks, cost: SimCosts{F: one, B: one, W: one}}
	if err := sm.check(); err != nil {
		return nil, err
	}
	order, err := sm.order()
	if err != nil {
		return nil, err
	}
	out := make([][]SimOp, len(order))
	for st, l := range order {
		for _, o := range l {
			out[st] = append(out[st], SimOp{Kind: o.kind, Micro: o.micro, Chunk: o.chunk})
		}
	}
	return out, nil
}
