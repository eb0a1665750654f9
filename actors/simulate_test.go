package actors

import (
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
)

// unit is F = B = W = 1 for every chunk.
var unit = SimCosts{F: []float64{1}, B: []float64{1}, W: []float64{1}}

// simChunks is the chunks a stage holds under each schedule in the tests.
func simChunks(s SimSchedule) int {
	switch s {
	case SimInterleaved, SimZBV:
		return 2
	}
	return 1
}

// bubbleFormula is the bubble fraction the literature gives a schedule with
// F = B = W, and whether it applies to p and m (ZB-H1's from m = p on; ZBV's
// is the least any schedule can have, see TestSimulateBubbles).
func bubbleFormula(s SimSchedule, p, m, v int) (float64, bool) {
	fp, fm, fv := float64(p), float64(m), float64(v)
	switch s {
	case SimSequential:
		return (fp - 1) / fp, true
	case SimGPipe, Sim1F1B:
		return (fp - 1) / (fm + fp - 1), true
	case SimInterleaved:
		x := (fp - 1) / (fv * fm) // the bubble over the ideal time
		return x / (1 + x), m%p == 0
	case SimZBH1:
		// (p−1)(F+B−W) = p−1 units of bubble against 3m of work
		return (fp - 1) / (3*fm + fp - 1), m >= p
	case SimZBV:
		// the last stage cannot start before p−1 chunks' forwards, and has 6m
		// units of work: p−1 units of bubble is the floor of one step
		return (fp - 1) / (6*fm + fp - 1), m >= 2*p
	}
	return 0, false
}

// TestSimulateBubbles: with F = B = W, each schedule's bubble is its
// formula's within 0.01 for p of 2 to 16 and m of 1 to 4p (interleaved
// over 1, 2 and 4 chunks a stage); ZB-H1's bubble
// time is a third of 1F1B's, and ZBV leaves none inside the stages' spans
// from m = 2p on.
func TestSimulateBubbles(t *testing.T) {
	for _, p := range []int{2, 4, 8, 16} {
		for _, m := range []int{1, p, 2 * p, 4 * p} {
			var oneF *SimResult
			for _, c := range []struct {
				s SimSchedule
				v int
			}{
				{SimSequential, 1}, {SimGPipe, 1}, {Sim1F1B, 1}, {SimInterleaved, 1}, {SimInterleaved, 2}, {SimInterleaved, 4},
				{SimZBH1, 1}, {SimZBV, 2},
			} {
				s := c.s
				want, ok := bubbleFormula(s, p, m, c.v)
				if !ok {
					continue
				}
				r, err := Simulate(s, p, m, c.v, unit)
				if err != nil {
					t.Fatalf("Simulate(%s, p %d, m %d, v %d): %v", s, p, m, c.v, err)
				}
				if math.Abs(r.Bubble-want) > 0.01 {
					t.Errorf("%s, p %d, m %d, v %d: bubble %.4f, want %.4f", s, p, m, c.v, r.Bubble, want)
				}
				switch s {
				case SimInterleaved:
					// Megatron's warm-up: 2(p−1) + (v−1)p forwards, and one more
					if got, bound := r.Peak[0], (c.v+1)*p-1; got > bound {
						t.Errorf("interleaved, p %d, m %d, v %d: the first stage holds %d chunks, want at most %d", p, m, c.v, got, bound)
					}
				case Sim1F1B:
					oneF = r
				case SimZBH1:
					ideal := float64(3 * m)
					if got := (r.Step - ideal) / (oneF.Step - ideal); math.Abs(got-1.0/3) > 0.01 {
						t.Errorf("zb-h1, p %d, m %d: bubble time %v, 1f1b's %v: ratio %.3f, want 1/3", p, m, r.Step-ideal, oneF.Step-ideal, got)
					}
				case SimZBV:
					if r.SpanBubble > 0.01 {
						t.Errorf("zbv, p %d, m %d: bubble within the stages' spans %.4f, want < 0.01", p, m, r.SpanBubble)
					}
				}
			}
		}
	}
}

// TestZBH1StageLimits: W's filling the bubbles under 1F1B's own limit of
// p − i micro-batches on stage i until their W, rather than p on every
// stage, leave 2(p − 1) units of bubble with F = B = W, two thirds of
// 1F1B's rather than a third: the last stage must run each micro-batch's
// F, B and W in turn, so its last B ends p − 1 units before the end of its
// work, and the B's still have p − 1 stages to go down.
func TestZBH1StageLimits(t *testing.T) {
	for _, p := range []int{2, 4, 8, 16} {
		for _, m := range []int{p, 2 * p, 4 * p} {
			s := &sim{kind: SimZBH1, p: p, m: m, v: 1, cost: unit}
			if err := s.check(); err != nil {
				t.Fatal(err)
			}
			fb := make([][]simOp, p)
			for st := range p {
				fb[st] = s.oneFOneB(st)
			}
			order, err := s.greedyLimits(fb, func(st int) int { return p - st })
			if err != nil {
				t.Fatal(err)
			}
			r, err := s.replay(order)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := r.Step-float64(3*m), float64(2*(p-1)); got != want {
				t.Errorf("p %d, m %d: %v units of bubble under p − i, want %v", p, m, got, want)
			}
			for st, n := range r.Peak {
				if n > p-st {
					t.Errorf("p %d, m %d: stage %d holds %d, want at most %d", p, m, st, n, p-st)
				}
			}
		}
	}
}

// TestSimulatePeaks: the activations each stage holds at once stay within
// each schedule's bound: GPipe all m; 1F1B p − i at stage i; ZB-H1 as 1F1B
// until the B, and 1F1B's peak (p) until the W; ZBV 1F1B's peak, p
// micro-batches through a whole stage: 2p chunks.
func TestSimulatePeaks(t *testing.T) {
	for _, p := range []int{2, 4, 8, 16} {
		for _, m := range []int{1, p, 2 * p, 4 * p} {
			for _, c := range []struct {
				s         SimSchedule
				peak      func(i int) int // until the W (or fused B)
				untilB    func(i int) int
				exactPeak bool
			}{
				{SimGPipe, func(int) int { return m }, func(int) int { return m }, true},
				{Sim1F1B, func(i int) int { return min(p-i, m) }, func(i int) int { return min(p-i, m) }, true},
				{SimZBH1, func(int) int { return p }, func(i int) int { return min(p-i, m) }, false},
				{SimZBV, func(int) int { return 2 * p }, func(int) int { return 2 * p }, false},
			} {
				r, err := Simulate(c.s, p, m, simChunks(c.s), unit)
				if err != nil {
					t.Fatalf("Simulate(%s, p %d, m %d): %v", c.s, p, m, err)
				}
				for i := range p {
					if got, want := r.Peak[i], c.peak(i); got > want || (c.exactPeak && got != want) {
						t.Errorf("%s, p %d, m %d: stage %d holds %d chunks' activations until the W, want at most %d", c.s, p, m, i, got, want)
					}
					if got, want := r.PeakFull[i], c.untilB(i); got > want {
						t.Errorf("%s, p %d, m %d: stage %d holds %d chunks' activations until the B, want at most %d", c.s, p, m, i, got, want)
					}
				}
			}
		}
	}
}

// TestSimulateOps: every schedule, with costs that differ from chunk to
// chunk and a hop between stages, runs each op of the step once, on its
// chunk's stage, one at a time, after its inputs have arrived; and the
// same arguments give the same step.
func TestSimulateOps(t *testing.T) {
	for _, c := range []struct {
		s    SimSchedule
		p, m int
	}{
		{SimSequential, 3, 4}, {SimGPipe, 4, 8}, {Sim1F1B, 4, 8}, {Sim1F1B, 4, 2},
		{SimInterleaved, 4, 8}, {SimInterleaved, 3, 3}, {SimZBH1, 4, 8}, {SimZBH1, 4, 3},
		{SimZBV, 4, 8}, {SimZBV, 3, 2}, {SimZBV, 1, 3},
	} {
		v := simChunks(c.s)
		n := c.p * v
		cost := SimCosts{Hop: 0.25}
		for i := range n {
			cost.F = append(cost.F, 1+float64(i%3)/2)
			cost.B = append(cost.B, 1.5+float64(i%2))
			cost.W = append(cost.W, float64(i%4)/3)
		}
		r, err := Simulate(c.s, c.p, c.m, v, cost)
		if err != nil {
			t.Fatalf("Simulate(%s, p %d, m %d): %v", c.s, c.p, c.m, err)
		}
		name := fmt.Sprintf("%s, p %d, m %d", c.s, c.p, c.m)
		sm := &sim{kind: c.s, p: c.p, m: c.m, v: v, split: r.Split, cost: cost}
		type key struct {
			k        SimKind
			j, chunk int
		}
		ran := map[key]SimOp{}
		stage := map[key]int{}
		for st, ops := range r.Ops {
			for i, o := range ops {
				k := key{o.Kind, o.Micro, o.Chunk}
				if _, dup := ran[k]; dup {
					t.Errorf("%s: %c(%d, %d) runs twice", name, o.Kind, o.Micro, o.Chunk)
				}
				ran[k], stage[k] = o, st
				if sm.stageOf(o.Chunk) != st {
					t.Errorf("%s: %c(%d, %d) on stage %d, its chunk is on %d", name, o.Kind, o.Micro, o.Chunk, st, sm.stageOf(o.Chunk))
				}
				if want := sm.dur(simOp{o.Kind, o.Micro, o.Chunk}); math.Abs(o.End-o.Start-want) > 1e-12 {
					t.Errorf("%s: %c(%d, %d) takes %v, want %v", name, o.Kind, o.Micro, o.Chunk, o.End-o.Start, want)
				}
				if i > 0 && o.Start < ops[i-1].End {
					t.Errorf("%s: stage %d starts %c(%d, %d) at %v, before its last op ends at %v", name, st, o.Kind, o.Micro, o.Chunk, o.Start, ops[i-1].End)
				}
			}
		}
		kinds := 2
		if r.Split {
			kinds = 3
		}
		if len(ran) != kinds*c.m*n {
			t.Errorf("%s: %d ops ran, want %d", name, len(ran), kinds*c.m*n)
		}
		for k, o := range ran {
			for _, d := range sm.deps(simOp{k.k, k.j, k.chunk}) {
				dk := key{d.kind, d.micro, d.chunk}
				at := ran[dk].End
				if stage[dk] != stage[k] {
					at += cost.Hop
				}
				if o.Start < at-1e-12 {
					t.Errorf("%s: %c(%d, %d) starts at %v, before its input %v is there at %v", name, k.k, k.j, k.chunk, o.Start, d, at)
				}
			}
		}
		again, _ := Simulate(c.s, c.p, c.m, v, cost)
		if again.Timeline(0.5) != r.Timeline(0.5) || again.Step != r.Step {
			t.Errorf("%s: a second simulation differs", name)
		}
	}
}

// TestSimulateRefuses: what a schedule cannot run is an error naming it.
func TestSimulateRefuses(t *testing.T) {
	for _, c := range []struct {
		s       SimSchedule
		p, m, v int
		cost    SimCosts
		want    string
	}{
		{"pipedream", 2, 2, 1, unit, `unknown schedule "pipedream"`},
		{SimInterleaved, 4, 6, 2, unit, "6 micro-batches is not a multiple of the 4 stages"},
		{SimZBV, 4, 8, 1, unit, "1 chunks a stage, want 2"},
		{Sim1F1B, 4, 8, 2, unit, "2 chunks a stage, want 1"},
		{Sim1F1B, 0, 8, 1, unit, "want at least 1 of each"},
		{Sim1F1B, 2, 2, 1, SimCosts{F: []float64{1, 1, 1}, B: []float64{1}}, "3 F costs for 2 chunks"},
		{Sim1F1B, 2, 2, 1, SimCosts{F: []float64{1}, B: []float64{0}}, "chunk 0's B cost 0"},
		{SimGPipe, 2, 2, 1, SimCosts{F: []float64{1}, B: []float64{1}, Hop: math.NaN()}, "hop cost NaN"},
	} {
		_, err := Simulate(c.s, c.p, c.m, c.v, c.cost)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "actors: ") {
			t.Errorf("Simulate(%s, %d, %d, %d): %v, want an error naming %q", c.s, c.p, c.m, c.v, err, c.want)
		}
	}
}

// TestSimulateBadLists: stages' lists that miss or repeat an op, or put
// it on the wrong stage, are refused, and lists that wait on each other
// for ever end in an error naming where each stage is stuck.
func TestSimulateBadLists(t *testing.T) {
	F := func(j, c int) simOp { return simOp{SimF, j, c} }
	B := func(j, c int) simOp { return simOp{SimB, j, c} }
	for _, c := range []struct {
		name  string
		order [][]simOp
		want  string
	}{
		{"missing", [][]simOp{{F(0, 0), B(0, 0)}, {F(0, 1)}}, "hold 3 ops of the step's 4"},
		{"twice", [][]simOp{{F(0, 0), B(0, 0), B(0, 0)}, {F(0, 1), B(0, 1)}}, "runs B(micro 0, chunk 0) twice"},
		{"wrong stage", [][]simOp{{F(0, 0), B(0, 0), F(0, 1)}, {B(0, 1)}}, "whose chunk is stage 1's"},
		{"no W unsplit", [][]simOp{{F(0, 0), B(0, 0), {SimW, 0, 0}}, {F(0, 1), B(0, 1)}}, "no such op W"},
		// stage 1 wants B(0) before F(0): B needs its own chunk's F
		{"own order", [][]simOp{{F(0, 0), B(0, 0)}, {B(0, 1), F(0, 1)}}, "stage 0 at B(micro 0, chunk 0), stage 1 at B(micro 0, chunk 1)"},
		// stage 0 wants micro-batch 1's backward before micro-batch 0's
		// forward, which stage 1's backward of micro-batch 1 needs first
		{"cycle", [][]simOp{{F(1, 0), B(1, 0), F(0, 0), B(0, 0)}, {F(0, 1), B(0, 1), F(1, 1), B(1, 1)}}, "stage 0 at B(micro 1, chunk 0), stage 1 at F(micro 0, chunk 1)"},
	} {
		m := 1
		if c.name == "cycle" {
			m = 2
		}
		sm := &sim{kind: Sim1F1B, p: 2, m: m, v: 1, cost: unit}
		_, err := sm.replay(c.order)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error naming %q", c.name, err, c.want)
		}
	}
}

// TestSimulateTimeline: the picture of a step, a row a stage.
func TestSimulateTimeline(t *testing.T) {
	r, err := Simulate(Sim1F1B, 2, 3, 1, unit)
	if err != nil {
		t.Fatal(err)
	}
	want := "0 F0F1....B0B0F2B1B1..B2B2\n1 ..F0B0B0F1B1B1F2B2B2....\n"
	if got := r.Timeline(1); got != want {
		t.Errorf("1f1b, p 2, m 3:\n%s\nwant\n%s", got, want)
	}
}

// simDocs is what docs/design.md's "Schedules" section shows: each
// schedule's step for p = 4 and m = 8 with F = B = W, and the bubble
// fractions, formula and simulated.
func simDocs() (pictures map[SimSchedule]string, table string) {
	pictures = map[SimSchedule]string{}
	for _, s := range []SimSchedule{SimSequential, SimGPipe, Sim1F1B, SimInterleaved, SimZBH1, SimZBV} {
		r, err := Simulate(s, 4, 8, simChunks(s), unit)
		if err != nil {
			panic(err)
		}
		pictures[s] = fmt.Sprintf("```\n%s```\n", r.Timeline(1))
	}
	var b strings.Builder
	b.WriteString("| schedule | p | m | formula | simulated | within the stages' spans |\n| --- | ---: | ---: | ---: | ---: | ---: |\n")
	for _, s := range []SimSchedule{SimGPipe, Sim1F1B, SimInterleaved, SimZBH1, SimZBV} {
		for _, p := range []int{2, 4, 8, 16} {
			m := 2 * p
			want, _ := bubbleFormula(s, p, m, simChunks(s))
			r, _ := Simulate(s, p, m, simChunks(s), unit)
			fmt.Fprintf(&b, "| %s | %d | %d | %.4f | %.4f | %.4f |\n", s, p, m, want, r.Bubble, r.SpanBubble)
		}
	}
	return pictures, b.String()
}

// TestSimulateDocs: docs/design.md shows what the simulator draws today.
func TestSimulateDocs(t *testing.T) {
	doc, err := os.ReadFile("../docs/design.md")
	if err != nil {
		t.Fatal(err)
	}
	pictures, table := simDocs()
	for s, pic := range pictures {
		if !strings.Contains(string(doc), pic) {
			t.Errorf("docs/design.md does not draw %s for p 4, m 8 as the simulator does:\n%s", s, pic)
		}
	}
	if !strings.Contains(string(doc), table) {
		t.Errorf("docs/design.md does not hold the simulator's bubbles:\n%s", table)
	}
}
