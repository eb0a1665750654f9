package actors

import (
	"log/slog"
	"reflect"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/pipetrain/pipetrain/actors/wire"
	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/optim"
	"github.com/pipetrain/pipetrain/tensor"
)

// TestWireRoundTrip: every message that crosses processes decodes to what
// was encoded, with its run.
func TestWireRoundTrip(t *testing.T) {
	x := tensor.FromFloat64s(tensor.Float32, []float64{1, -2, 3.5, 0}, 2, 2)
	st := optim.State{Kind: "sgd", Step: 3, NumParams: 1, Tensors: map[string]*tensor.Tensor{"0.momentum": x}}
	pid := actor.NewPID("127.0.0.1:7101", "stage-1")
	run := Run{ID: "r1", Gen: 7}
	for _, msg := range []any{
		&Forward{Step: 1, Micro: 2, Row: 32, Total: 256, Seq: 4, Micros: 8, Shard: 1, Eval: true, X: x, First: 128, Share: 128, Replicas: 2},
		&Backward{Step: 1, Micro: 2, Shard: 1, DY: x},
		&BackwardDone{Step: 1, Micro: 2, Actor: 3},
		&GradNorm{Step: 1, Actor: 2, Sums: []float64{1, 2}},
		&Update{Step: 1, LR: 0.1, Scale: 0.5},
		&UpdateApplied{Step: 1, Actor: 2},
		&Failed{Actor: 2, Err: &nn.NonFiniteError{Layer: 3, Kind: "relu", Step: 5, Where: "forward"}},
		&Wire{Coordinator: pid, Optimizer: pid, Next: []*actor.PID{pid}, Prev: []*actor.PID{pid, pid}, PrevSplit: []int{0, 3, 6},
			InShards: 2, OutShards: 1, Limit: 3, SplitBackward: true, NextNames: []string{"stage 2"}, PrevNames: []string{"stage 0 shard 0", "stage 0 shard 1"},
			Tied:    []TiedLink{{Tie: 0, Param: 2, Head: true, Peer: pid}, {Tie: 1, Param: 0, Other: 4}},
			Replica: 1, Copies: []*actor.PID{pid, pid}, CopyNames: []string{"stage 1", "replica 1 stage 1"}, OwnCopies: true},
		&TiedGrad{Step: 3, Tie: 1, G: x},
		&GradTurn{Step: 3, Seq: 5, Grads: []*tensor.Tensor{x, x}, Buffers: []*tensor.Tensor{x}},
		&GradTurn{Step: 3, Seq: 5},
		&Weights{Step: 3, Values: []*tensor.Tensor{x}},
		&Lost{Host: "10.0.0.3:7101", Stages: []string{"stage 2"}, Why: "the connection from stage 1 on 10.0.0.2:7101 was lost"},
		&GetParams{NamesOnly: true},
		&Params{Actor: 1, Names: []string{"0.weight"}, Values: []*tensor.Tensor{x}, State: st},
		&SetParams{Values: []*tensor.Tensor{x}, State: &st},
		&Ack{},
		&GetStats{Reset: true},
		&Stats{Actor: 1, Name: "stage 0", Layers: []int{0, 1}, Busy: time.Second, Messages: 4, MaxInFlight: 2, WireBytes: 99, PeakActivationBytes: 4096,
			Spans: []Span{{Kind: 'F', Step: 1, Micro: 0, Start: time.Millisecond, Dur: time.Microsecond}}},
	} {
		w, err := Encode(msg, run, "stage 3")
		if err != nil {
			t.Fatalf("%T: %v", msg, err)
		}
		if r, from, ok := RunOf(w); !ok || r != run || from != "stage 3" {
			t.Errorf("%T: RunOf gives %v, %q, %v; want %v, \"stage 3\", true", msg, r, from, ok, run)
		}
		got, gotRun, err := Decode(w)
		if err != nil {
			t.Fatalf("%T: %v", msg, err)
		}
		if gotRun != run {
			t.Errorf("%T: run %v, want %v", msg, gotRun, run)
		}
		if f, ok := msg.(*Failed); ok {
			if got.(*Failed).Err.Error() != f.Err.Error() || got.(*Failed).Actor != f.Actor {
				t.Errorf("Failed: got %v", got)
			}
			continue
		}
		if !reflect.DeepEqual(got, msg) {
			t.Errorf("%T: got %+v, want %+v", msg, got, msg)
		}
	}
	if _, err := Encode(&RunStep{}, run, ""); err == nil {
		t.Error("RunStep encoded: it never crosses processes")
	}
	if _, _, err := Decode(&wire.Forward{X: &wire.Tensor{Shape: []int64{2}, Data: []byte{1}}}); err == nil {
		t.Error("a forward whose tensor bytes do not fit its shape decoded")
	}
}

// TestStaleRunDropped: a stage drops a wire message of another run or
// generation before doing anything with it, and takes one of its own.
func TestStaleRunDropped(t *testing.T) {
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }))
	defer system.Shutdown()
	g := NewGraph(false)
	var drops []Drop
	g.Dropped = func(d Drop) { drops = append(drops, d) } // on the stage's goroutine; read after its answer below
	st := NewStage(0, "stage 0", g, []nn.Layer{nn.NewReLU()}, 0, 0, false, Updater{})
	mine := Run{ID: "r", Gen: 2}
	st.SetRun(mine)
	pid := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return st }))
	x := tensor.FromFloat64s(tensor.Float32, []float64{1, -1}, 1, 2)
	for _, stale := range []Run{{ID: "r", Gen: 1}, {ID: "old", Gen: 2}, {}} {
		w, err := Encode(&Forward{Step: 1, Micros: 1, X: x}, stale, "stage 9")
		if err != nil {
			t.Fatal(err)
		}
		system.Root.Send(pid, w)
	}
	w, err := Encode(&GetStats{}, mine, "engine")
	if err != nil {
		t.Fatal(err)
	}
	res, err := system.Root.RequestFuture(pid, w, 5*time.Second).Result()
	if err != nil {
		t.Fatal(err)
	}
	stats, ok := res.(*Stats) // in one process the answer is not encoded
	if !ok {
		t.Fatalf("answer %T", res)
	}
	if got := stats.Messages; got != 1 {
		t.Errorf("the stage handled %d messages, want 1 (its own GetStats; three stale forwards dropped)", got)
	}
	if len(drops) != 3 {
		t.Fatalf("%d drops reported, want 3: %+v", len(drops), drops)
	}
	for i, d := range drops {
		if d.From != "stage 9" || d.To != "stage 0" || d.Type != "Forward step 1 micro-batch 0 shard 0" || d.Reason == "" {
			t.Errorf("drop %d: %+v; want one from stage 9 to stage 0 naming the forward and why", i, d)
		}
	}
}
