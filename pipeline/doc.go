// Package pipeline builds a graph of actors from a Model (nn layer specs, a
// sample shape, a seed) and runs training steps through it under the
// sequential, GPipe and 1F1B schedules.
//
// # Words
//
// One word per thing, in the code and the logs alike:
//
//   - a layer is an nn.Layer, numbered from 0 in the model;
//   - a position is a place in the chain, what the schedules count ("stage
//     i of p"): consecutive layers, or one layer split into shards;
//   - a stage actor runs the layers of one position, or one shard of the
//     layer at a position; stage actors are numbered by id in chain order,
//     and a stage event's "stage" is that id, its "position" the place;
//   - a shard is a block of a layer's output columns (a linear layer's
//     features, a convolution's filters) with its rows of W and b;
//   - a slot is a stage actor to be, in the Plan;
//   - a host is a process that runs stage actors for a coordinator elsewhere
//     (a worker, `train worker`); this process is not one;
//   - a replica is a copy of the whole chain working on its share of a
//     mini-batch (not built yet).
//
// # Positions and stage actors
//
// Config.Stages = 0 makes every layer a position of its own; N groups
// consecutive layers into N positions balanced by their measured cost (each
// layer's forward and backward is timed on a sample, and the split minimises
// the costliest). A position's stage actor runs on one goroutine at a time;
// the Go scheduler spreads the actors over the cores.
//
// Config.Shards[i] = K splits layer i's units over K stage actors (an
// nn.Sharder), each owning its rows of W and b. A sharded layer is a
// position of its own: the next position joins the K output blocks by
// columns, and the K partial input gradients are summed in shard order. The
// p of the schedules is the number of positions (Engine.Positions). Sharded
// results agree with the unsharded layer to rounding (within 1e-6 relative
// for the tests' MLP, 1e-5 for their CNN), not bit for bit, since dX sums
// in a different order.
//
// # The plan
//
// New works out what will run before any actor exists: a Plan, a plain
// value with the positions, one Slot per stage actor (its layers, position,
// shard, name and host) and the thread budget of the stage actors here.
// start then spawns and wires the actors from it, and Engine.Plan returns it.
//
// # Equivalence
//
// For the same seed, every schedule at every stage count and every number of
// micro-batches gives the step losses and final weights of nn.Sequential, bit
// for bit: each layer sees the micro-batches in order, micro-batches are whole
// 32-row chunks and every sum over a mini-batch's rows runs over those chunks
// in row order (the weight gradient's GEMM, the loss), dropout masks are keyed
// by (seed, layer, step, row), and each stage runs the same optim code over its own parameters (the
// updates are element-wise; the one global quantity, the gradient norm, is
// defined as per-parameter sums added in the global order, so the optimizer
// actor adding the stages' sums gets optim.GradNorm's bits). Snapshot gathers
// the stages' optimizer states into the state one optimizer over the whole
// model would have, and Restore hands each stage its part, so a checkpoint does
// not depend on the stage layout. TestEquivalence and
// TestOptimizerStateGathered check it.
//
// # Failure, hangs and shutdown
//
// The first failure of any actor fails the step in progress and every later
// one. A watchdog goroutine fails a step when no message has moved for
// Config.Hang, logging a "hang" event with each actor's mailbox length, last
// message and the micro-batch in hand. Close stops the watchdog and every actor
// and shuts the actor system down, leaving no goroutine behind. protoactor's
// own logging goes to Config.Logger through zerolog's slog handler, or nowhere.
//
// # Sending dX before dW
//
// Config.SplitBackward makes a stage compute its linear layers' input
// gradients first and send them upstream at once (the zero-bubble idea), and
// leave their weight gradients to the step's end, after its last
// micro-batch: they fill the drain, and each layer runs them as one GEMM over
// the whole step (nn.BatchParams). That GEMM reads and writes the weight
// gradient once instead of once per micro-batch, which is most of what small
// micro-batches cost. It can because a stage's arenas lend each micro-batch
// its rows of step-wide tensors (nn.StepRows), so a layer's inputs and output
// gradients for the whole step lie in one block of memory; the GEMM sums rows
// in 32-row chunks, so the bits are those of one call per micro-batch. Train's
// pipeline.split_backward turns it on, and "auto" uses it for its pipelined
// layouts. On the deep MLP of bench/scaling, 8 micro-batches, 1f1b over an
// actor per layer on two cores, it is 22-27% faster (BenchmarkDeep).
//
// # Stages on other processes
//
// With Config.Hosts the stage actors run on workers (NewWorker, `train
// worker`) in contiguous blocks over the hosts, and the coordinator, loss and
// optimizer actors stay here. Each stage is spawned through a protoactor
// remote kind (a session per engine on each worker) and builds its own layers
// from the Model (specs, sample shape, seed), so its weights are those of the
// in-process stage bit for bit; its optimizer state stays with it, and only
// activations, their gradients and scalars cross each step. A handshake
// checks the protocol and the token before anything is spawned
// (HandshakeError); the token is checked on every gRPC call, in constant
// time. The engine watches each worker's session and runs a heartbeat every
// 0.5 s, and each stage watches its neighbours on other hosts: a lost worker
// or link, or a silent link, fails the step within 3 s with an error naming
// the host, its stages and the step, and a worker drops a run whose
// coordinator is gone or silent for 5 s. A question to a host (Snapshot,
// Stats) ends as soon as the host is lost. A message between processes that
// is not delivered (a dead letter: no connection, no such actor; or one for
// another run or engine) is counted, logged as an "undelivered" event and
// fails its run at once, naming the host.
//
// A process's actor address names its incarnation: its host:port, "/" and a
// random number drawn when its endpoint starts. protoactor keeps what it knows
// of a peer by actor address, so nothing it held of a dead process is taken
// for a successor at the same host:port; host:port is used only to dial. A
// process talks to its workers through one endpoint, shared by its engines
// and stopped by CloseRemote: protoactor's remote sets gRPC's process-wide
// logger whenever one starts, so one starts per process.
//
// # Seeing the pipeline
//
// Stats returns each actor's busy time, message count, largest number of
// micro-batches in flight and, with Config.Trace, its spans. WriteTrace writes
// the spans as Chrome trace-event JSON (open it in Perfetto): a track per
// actor, a span per forward, backward and update, labelled by step and
// micro-batch. Bubble measures the idle fraction of the forward/backward phase.
package pipeline
