package actors

import (
	"github.com/asynkron/protoactor-go/actor"
	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/optim"
	"github.com/pipetrain/pipetrain/tensor"
)

// Every message is a plain struct sent as a pointer. Ownership is written on each:
// once sent, a message and the tensors in it belong to the receiver, except where
// a field says it is shared read-only, until its step is over. Senders on the
// training-step path reuse their message structs in the next step, and layers
// reuse their output tensors (nn.Arena): a receiver reads them within their
// step and keeps no reference after it. The next step starts only when every
// actor is done with the last one.

// Forward carries one micro-batch's activations downstream, from one actor of a
// position to every actor of the next position (or to the loss actor). X is shared
// read-only by all receivers of one send: none may write it, any may keep it.
type Forward struct {
	Step, Micro int
	Row         int  // index of the micro-batch's first row in its mini-batch (keys dropout)
	Total       int  // rows of the mini-batch
	Seq         int  // the engine's count of training steps, whatever Step says
	Micros      int  // micro-batches of this replica in this step
	Shard       int  // the sending actor's index within its position: X is that column block
	First       int  // the first row of this replica's share of the mini-batch
	Share       int  // rows of this replica's share; 0: Total (one replica)
	Replicas    int  // shares in this step: replicas with rows (ReplicaOf shares 0 to Replicas-1); 0: one
	Eval        bool // evaluation: no caching, no backward
	X           *tensor.Tensor
}

// Backward carries the loss gradient with respect to the receiver's output
// block, from one actor of the next position (or from the loss actor). Partial
// gradients from several senders are summed in Shard order. DY belongs to the receiver.
type Backward struct {
	Step, Micro int
	Shard       int // the sending actor's index within its position
	DY          *tensor.Tensor
}

// Target tells the loss actor what micro-batch Micro of Step is compared with:
// Rows of the mini-batch's Total rows. Coordinator to loss actor.
type Target struct {
	Step, Micro, Micros int
	Seq                 int // as Forward.Seq
	Eval                bool
	T                   nn.Target
	Rows, Total         int
	Row                 int // the micro-batch's first row in the mini-batch
	Replica             int // the replica that runs the micro-batch
	Share               int // micro-batches of that replica in this step; 0: Micros
}

// BackwardDone reports that an actor of the first position finished a micro-batch's
// backward, or with All every micro-batch of its replica in the step (Micro
// the last). First-position actor to coordinator.
type BackwardDone struct {
	Step, Micro int
	Actor       int
	All         bool
}

// StepLoss is a step's mini-batch mean loss, summed over micro-batches in order.
// Loss actor to coordinator.
type StepLoss struct {
	Step int
	Loss float64
}

// EvalPart is the summed loss and correct count of one evaluation chunk.
// Loss actor to coordinator.
type EvalPart struct {
	Chunk   int
	Loss    float64 // the chunk's mean loss
	Correct int     // labels that are the largest of their outputs
	Rows    int
}

// BeginStep gives the optimizer the learning rate of a step. Coordinator to optimizer.
type BeginStep struct {
	Step int
	LR   float64
}

// GradNorm carries the sums of squares of a stage's gradients, one per
// parameter in the stage's order, after its last backward of a step (and after
// value clipping): all the optimizer needs for the global clip. Sums is the
// stage's own slice, lent until the stage's next step. Stage to optimizer.
type GradNorm struct {
	Step, Actor int
	Sums        []float64
}

// Update tells a stage how to update its weights for a step: the learning rate
// and the factor its gradients are scaled by first (1 without clipping). Each
// stage runs its own optimizer on its own weights; only these scalars cross.
// One Update is shared read-only by every stage. Optimizer to stage.
type Update struct {
	Step      int
	LR, Scale float64
	// Provisional: the update a stage may apply before the step's global
	// norm is known, with Scale 1 (optimistic clipping); the final Update
	// follows, and a stage that applied this one keeps it when the final
	// one's Scale is 1, or puts its weights back and applies that one.
	Provisional bool
}

// UpdateApplied reports that an actor holds the weights of the end of Step.
// Actor to coordinator.
type UpdateApplied struct {
	Step, Actor int
	Rolled      bool // a provisional update was put back and redone
}

// Failed reports that an actor cannot go on: a kernel panicked or produced a
// non-finite value. Any actor to coordinator.
type Failed struct {
	Actor int
	Err   error
}

// Lost reports that a host running stages is gone or silent: the run cannot
// go on. Engine to coordinator.
type Lost struct {
	Host   string
	Stages []string // the stages it ran
	Why    string
}

// RunStep asks the coordinator to run one training step; it answers the sender
// with a *StepResult. X and T belong to the coordinator.
type RunStep struct {
	Step int
	LR   float64
	X    *tensor.Tensor
	T    nn.Target
}

// StepResult answers RunStep.
type StepResult struct {
	Step      int
	Loss      float64
	Rollbacks int // stages that put a provisional update back (UpdateApplied.Rolled)
	Err       error
}

// RunEval asks the coordinator to evaluate the model on X in chunks of Rows
// rows, at most Window of them on their way at once (0: 8; the actors'
// Wire.EvalWindow when they have one); it answers with an *EvalResult.
type RunEval struct {
	X      *tensor.Tensor
	T      nn.Target
	Rows   int
	Window int
}

// EvalResult answers RunEval. Accuracy is NaN when the target has no labels.
type EvalResult struct {
	Loss, Accuracy float64
	Err            error
}

// GetParams asks a stage for copies of its parameters and of its optimizer's
// state, or with NamesOnly for their names alone; it answers with *Params:
// Into, when given, filled in and lent back, its tensors reused where they
// fit, so that asking again and again faults in no new memory.
type GetParams struct {
	NamesOnly bool
	Into      *Params
	// Lend answers with the stage's own tensors, not copies, for a
	// caller in this process that reads them before it sends the stage
	// anything else (a checkpoint's writer).
	Lend bool
}

// Params answers GetParams; the tensors are copies that belong to the receiver.
// Names and Values list the parameters, then the buffers (batch norm's
// running statistics); State indexes the parameters in that order.
type Params struct {
	Actor  int
	Names  []string
	Values []*tensor.Tensor
	State  optim.State
}

// SetParams replaces a stage's parameter and buffer values, in Params order, and its
// optimizer's state when State is not nil; it answers with *Ack. The tensors
// are copied.
type SetParams struct {
	Values []*tensor.Tensor
	State  *optim.State
}

// GetStats asks an actor for its counters (*Stats), resetting them if Reset.
type GetStats struct{ Reset bool }

// Ack answers requests that return nothing but an error.
type Ack struct{ Err error }

// kick makes a stage look at its queue of forwards again, after any message
// already in its mailbox, so ready backwards run first.
type kick struct{}

// turnKick tells a stage actor that its device's next op is its own
// (Wire.Schedule): another actor of its stage has run its op.
type turnKick struct{}

// Wire connects an actor to its neighbours; it is the first message each actor
// gets, before any work.
type Wire struct {
	Coordinator, Optimizer *actor.PID
	Next                   []*actor.PID // actors of the next position, or the loss actor
	Prev                   []*actor.PID // actors of the previous position; none for the first position
	PrevSplit              []int        // column bounds of the previous position's output, len(Prev)+1
	InShards               int          // forward blocks to gather: actors of the previous position, or 1
	OutShards              int          // backward blocks to gather: actors of the next position, or 1
	Limit                  int          // micro-batches admitted at once, until their backwards
	SplitBackward          bool         // send dX upstream before computing dW
	// OneArena: each micro-batch's work is over everywhere before the next
	// one's starts (the sequential schedule, no split backward, no
	// replicas), so the micro-batches of a step take turns in one arena and
	// a step holds one micro-batch's activations, not all of them.
	OneArena bool
	// EvalWindow, when not 0, is how many evaluation chunks the coordinator
	// lets out at once (RunEval.Window): chunk k's outputs live in arena k
	// mod EvalWindow, free again once chunk k is over everywhere, so that
	// an evaluation allocates nothing after its first chunks. 0: each
	// chunk's outputs are allocated, for the collector.
	EvalWindow int
	// EachDone: a first-position actor reports each micro-batch's backward
	// as it ends (the sequential schedule, whose coordinator sends the next
	// micro-batch only then); otherwise one BackwardDone (All) a step,
	// which spares a message to another process per micro-batch.
	EachDone bool
	// Schedule, when Programmed, has the stage actor run each step's ops in
	// the order Order gives over Stages stages of Chunks positions, in turn
	// with its stage's other actors (SetDevice), each op once its input is
	// there; Limit then bounds only a step the order has none for. Under
	// the zero-bubble schedules the backward sends the input gradients
	// upstream and leaves the weight gradients for the order.
	Schedule             Schedule
	Stages, Chunks       int
	NextNames, PrevNames []string   // the stage names of Next and Prev, for reports
	Tied                 []TiedLink // the stage's weights that another copy shares

	// with replicas
	Replica   int            // the stage's replica; 0 owns the weights, the others share them (or copy them)
	Copies    []*actor.PID   // the stage actors sharing its weights, by replica; nil: none, or no weights
	CopyNames []string       // their stage names, for reports
	OwnCopies bool           // each of Copies holds its own weights (on hosts): see GradTurn
	Chains    [][]*actor.PID // the loss actor's: each replica's last position (Prev is replica 0's)
}

// TiedLink is a stage's copy of a tied weight (a head sharing its
// embedding's token weights, nn.Tie): before each update the stages of the
// two copies swap their gradients, and both update with the sum, so the
// copies stay equal.
type TiedLink struct {
	Tie   int        // the tie's index in the model (nn.Ties)
	Param int        // the copy's index among the stage's parameters
	Head  bool       // the head's copy: the gradient norm counts the embedding's only
	Peer  *actor.PID // the stage holding the other copy; nil: this one, at Other
	Other int        // with Peer nil, the other copy's index here
}

// GradTurn hands the turn to add into a position's shared gradients, for
// step Seq, from the stage actor of one share's replica to the next share's
// (ReplicaOf), and from the last to the owner, replica 0's, which adds its
// own share, the last, if it has one (Rows), then updates the weights. A
// replica's stage writes the shared gradients only while it holds the turn,
// so they sum the chunks in the order one replica would: share after share,
// each in its own micro-batch order. Stage to stage.
//
// With Wire.OwnCopies the stages share no memory, so the gradients travel
// with the turn: Grads are the sender's gradients, summed so far, in
// parameter order, and Buffers its buffers' values (batch norm's running
// statistics, which the replicas' forwards update in turn); the receiver
// copies them into its own before it adds. Both are shared read-only until
// the receiver's next message.
//
// The turn goes in parts: a stage whose layers keep their
// weight gradients to the step's end hands on the gradients of its last
// layers as soon as it has added into them, and the next replica adds its
// own into those while the sender goes on with the layers before: the
// replicas' weight gradients overlap instead of following each other.
// Part counts from 0, each part's Grads being its parameters'; Buffers
// come with the last part.
type GradTurn struct {
	Step, Seq int
	Part      int
	Rows      bool // the receiver's replica has rows in the step
	Grads     []*tensor.Tensor
	Buffers   []*tensor.Tensor
}

// Weights gives a replica's stage that holds its own copy of the weights
// (Wire.OwnCopies) a part of the owner's parameter values after Step's
// update (the parts of the turn, GradTurn), the buffers' with the last;
// the receiver copies them, passes them on along the chain of copies
// (from the owner to the last share's replica, on down to the first's),
// and once it has every part reports UpdateApplied to the coordinator,
// which starts the next step only then. Values are shared read-only by
// their receiver. Stage to stage.
type Weights struct {
	Step, Part int
	Values     []*tensor.Tensor
}

// TiedGrad is a stage's gradient of its copy of a tied weight, for the
// stage holding the other copy. Stage to stage.
type TiedGrad struct {
	Step int
	Tie  int
	G    *tensor.Tensor
}
