// Package actors holds the protoactor actors of a pipetrain pipeline and the
// messages they exchange.
//
// # The actors
//
// A Stage runs consecutive layers of the model, or one shard of a layer,
// for every micro-batch sent to it; it alone holds and writes its layers'
// weights. The Loss actor compares the last stage's output with the target and
// starts the backward pass. Each parameter-owning stage has its own optimizer
// (an Updater), whose state (momentum, Adam moments) lives beside the weights
// it updates: a stage updates its weights as soon as its own last backward of
// the step is done, while upstream stages are still in backward. The Optimizer
// actor owns only the step's policy: it sends each stage the learning rate
// and, under clip_norm, the global clip factor, computed from the stages'
// per-parameter sums of squares added in the global order. Only scalars reach
// it; no weight or gradient leaves its stage. The Coordinator splits a
// mini-batch into micro-batches, feeds the first stage, and answers the step.
//
// # Messages and ownership
//
// Every message is a plain struct sent as a pointer and declared in
// messages.go, with its ownership written on it: once sent, a message and its
// tensors belong to the receiver until its step is over. The one exception is
// Forward.X, which the actors of one position share read-only. A step starts only
// when every actor is done with the previous one, so senders reuse their step
// messages and stages their layers' outputs (nn.Arena) from one step to the
// next: a steady step allocates nothing of pipetrain's.
//
// protoactor delivers messages from one sender in order, and each stage
// processes forwards and backwards in micro-batch order, so gradients
// accumulate in the order nn.Sequential uses and the results match it bit for
// bit. The loss actor takes micro-batches in order too, adding their rows'
// losses to one nn.LossSum, and Forward.Row (the micro-batch's first row) keys
// dropout: the results do not depend on the number of micro-batches either. A
// stage gives a micro-batch's backward the Row of its forward, so a
// transformer block that recomputes its forward there (model.recompute)
// draws the same masks, and lends its layers one scratch arena
// (nn.Pass.Scratch) for what they rebuild: one block's worth, which the
// stage's peak activation bytes count with the micro-batches in flight.
//
// # Across processes
//
// An actor's neighbours may live in other processes (a stage on a worker).
// Every send goes through one path that sends an in-process message as is
// and encodes one for another process into its actors/wire form (Encode),
// with the run it belongs to (Run: the run id and the engine's generation);
// a receiver decodes it back (Decode) and drops one for another run, so a
// stale run's or restart's message never joins a live step. Tensors are
// copied into the wire message, so ownership is as in-process. Messages from
// different processes are not ordered with each other: a stage therefore
// acknowledges its Wire before any work is sent, and everything else a step
// needs arrives in an order the step's own messages imply.
//
// # Schedules
//
// Under Sequential the coordinator sends the next micro-batch when the previous
// one's backward is done. Under GPipe every forward runs, and the loss actor
// holds the backwards until the last forward arrives. Under OneFOneB
// (PipeDream-Flush) stage i of p admits at most p-i micro-batches: a stage runs
// a backward as soon as it has it, and takes a queued forward only through a
// message to itself, behind whatever is already in its mailbox, so a ready
// backward goes first. Mailboxes are unbounded; in-flight work is bounded by
// these credits.
//
// # Failure
//
// A kernel that panics or yields a non-finite value makes its actor send Failed
// to the coordinator, which answers the step in progress, and every later one,
// with that error. Actors are spawned with a stop directive and a producer that
// refuses to run twice: protoactor's default supervisor would restart an actor
// by calling its producer again, silently re-initialising its weights.
package actors
