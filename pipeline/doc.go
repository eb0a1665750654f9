// Package pipeline builds a graph of actors from a Model (nn layer specs, a
// sample shape, a seed) and runs training steps through it under the
// sequential, GPipe, 1F1B, interleaved, ZB-H1 and ZBV schedules. It holds the plan and the engine;
// package recipe holds a stage actor's recipe, which both the engine and a
// worker build from, and package remote all that crosses processes:
// workers, the link to them and the data plane.
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
//   - a stage, under a chunked schedule (interleaved, zbv), is the share
//     of the cores whose positions' stage actors take turns on it (a chunk
//     each); otherwise each position is a stage of its own;
//   - a slot is a stage actor to be, in the Plan;
//   - a host is a process that runs stage actors for a coordinator elsewhere
//     (a worker, `train worker`); this process is not one;
//   - a replica is a copy of the whole chain working on its share of a
//     mini-batch; replica 0's stage actors own the weights.
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
// value with the schedule, micro-batches, loss and clip norm, the
// positions, one Slot per stage actor (its layers, position, shard, name,
// host, parameters) and the thread budget of the stage actors here. Each
// slot carries its recipe.StageSpec, the whole recipe of its actor, which
// recipe.Build turns into the actor here or, sent as a wire.Build, on a
// worker: one function builds a stage everywhere. start then spawns and
// wires the actors from the plan alone, and Engine.Plan returns it.
// Predict makes the same plan without starting anything and adds a cost
// model's step time (train plan).
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
// # Replicas
//
// Config.Replicas = R makes R copies of the chain. The Plan has a slot per
// stage actor of every replica (replica r's are ids [r·n, (r+1)·n) for n
// a chain, Slot.Replica and Slot.Owner say whose); replica r > 0's layers
// are built anew, one at a time, and pointed at replica 0's parameters,
// gradients and buffers (nn.ShareParams), so there is one copy of the
// weights. The coordinator deals each mini-batch's chunks in order, in
// shares (nn.SplitEven over the chunks): replica 1 the first run of them,
// replica 2 the next, and replica 0, the owner, the last
// (actors.ReplicaOf), and each replica cuts its share into
// Config.MicroBatches micro-batches. Micro-batches are numbered across the step in row order;
// one loss actor serves every replica, sends each gradient back as soon as
// it has it, and adds the losses in micro-batch order.
//
// Who writes what, and when: replica 0's stage actor at a place in the
// chain owns the weights there, their gradients, the optimizer state and
// the update. Every replica's stage actor there reads the weights during a
// step and writes the gradients only while it holds that step's turn
// (actors.GradTurn), which follows the shares of the step's rows: the
// first share is replica 1's and the last replica 0's (actors.ReplicaOf),
// so replica 1's actor holds the turn from the start, each passes it on
// when its own additions are done, and the owner takes it last, adds its
// own and only then clips, swaps tied gradients and updates. Every message
// is a happens-before edge, so the gradient's writes are ordered (share
// after share, each in micro-batch order: the chunks' order, as one
// replica sums them), and
// the update follows every replica's reads of the step's weights; the next
// step's reads follow the update through the coordinator. A replica's
// backward computes input gradients at once and leaves its linear layers'
// weight gradients until it has the turn (nn.BatchParams); a stage with
// another layer with parameters holds its backwards until then, and one with
// batch norm (whose running statistics it writes in the forward) its
// forwards too. TestReplicas checks the bits for the MLP, the CNN and the
// tied GPT under -race as well; evaluation and Snapshot use replica 0
// alone.
//
// # Failure, hangs and shutdown
//
// The first failure of any actor fails the step in progress and every later
// one. A watchdog goroutine fails a step when no message has moved for
// Config.Hang, logging a "hang" event with each actor's mailbox length, last
// message and the micro-batch in hand. Close stops the watchdog and every actor
// and shuts the actor system down, leaving no goroutine behind. protoactor's
// own logging goes to Config.Logger through zerolog's slog handler, or nowhere.
// The actors spawned here run on the engine's actors.Dispatcher: goroutines
// kept from run to run (with the stacks the kernels grew), one for each
// actor and no more, which yield their CPU to a run they start while GEMM
// helpers spin.
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
// # Chunks and zero-bubble schedules
//
// Under Interleaved and ZBV, Config.Chunks positions run on each of
// Config.Stages stages (Plan.StageOf): interleaved puts position c on
// stage c mod stages, ZBV on stage c for the V's first arm and 2·stages−1−c
// for its second. A stage's stage actors share one actors.Device and its
// thread budget; on workers a stage's positions run on one host. Under
// Interleaved, ZBH1 and ZBV each stage runs the step's ops in the order
// actors.Order gives (the simulator's, with equal costs): the device holds
// the cursor, the actor whose op is next runs it once its input has come
// and hands the turn on. ZBH1 and ZBV split every backward: the input
// gradient goes upstream at once and the weight gradients run where the
// order puts them, a micro-batch's activations held until then (at most
// 1F1B's first stage's p micro-batches). A step whose micro-batch count
// the order cannot take (interleaved wants a multiple of the stages) runs
// by 1F1B's dataflow rules. None of it changes a bit: each stage actor
// still sees the micro-batches in order.
//
// Config.OptimisticClip (train sets it under ZBH1 and ZBV) has a stage
// with clip_norm apply the step's update as soon as its own gradients are
// complete, with the clip factor 1 (a provisional actors.Update sent as
// the step begins), keeping what it replaced; the final Update, after the
// global norm, keeps it or puts the weights and optimizer state back and
// updates again: the synchronous bits always, Engine.Rollbacks counting
// the redone.
//
// # Stages on other processes
//
// With Config.Hosts the stage actors run on workers (remote.NewWorker, `train
// worker`) in contiguous blocks over the hosts, and the coordinator, loss and
// optimizer actors stay here. Each stage is spawned through a protoactor
// remote kind (a session per engine on each worker) and builds its own layers
// from its StageSpec's Model (specs, sample shape, seed; this process lets
// its copies of them go once planned), so its weights are those of the
// in-process stage bit for bit; its optimizer state stays with it, and only
// activations, their gradients and scalars cross each step (and with
// replicas, each parameter block's gradients and weights: see below). A handshake
// checks the protocol and the token before anything is spawned
// (remote.HandshakeError); the token is checked on every gRPC call, in constant
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
// Tensors travel on a data plane of their own (package remote): each message
// that holds tensors (Forward, Backward, GradTurn, Weights, TiedGrad) is one
// frame, a header with the message's fields and the tensors' types and
// shapes (wire.Frame) and then their raw bytes, on a TCP connection from the
// sending process to the receiving one. The sending actor writes the arena's
// bytes with one writev on its own goroutine; the receiving process reads
// each tensor into a slot it keeps for that frame from step to step and
// puts the message in the actor's mailbox. A data connection comes to the
// same port as protoactor's, which hands it over by its first eight bytes,
// and passes the same TLS and token checks. protoactor keeps the rest:
// spawning, links, fences, heartbeats and watches.
//
// A process's actor address names its incarnation: its host:port, "/" and a
// random number drawn when its endpoint starts. protoactor keeps what it knows
// of a peer by actor address, so nothing it held of a dead process is taken
// for a successor at the same host:port; host:port is used only to dial. A
// process talks to its workers through one endpoint, shared by its engines
// and stopped by remote.CloseEndpoint: protoactor's remote sets gRPC's process-wide
// logger whenever one starts, so one starts per process.
//
// # Replicas on hosts
//
// With Hosts, the R·S stage actors (S per chain) are placed in whichever of
// two layouts sends fewer values a step (Plan.placeHosts), from the layers'
// output sizes, the rows a replica takes and the weights of each stage:
// replica after replica in contiguous blocks over the H hosts, in the
// turn's order (replica 1 first, the owner last), so that with R = H each
// replica has a host of its own, only the turn crosses the wire, and it
// crosses once per boundary between hosts; or, when S >= H, replica 0's
// actors in contiguous blocks and each other replica's copy of a stage
// beside its owner, so that the turn stays on one host and only activations
// cross, as for one chain. Ties, and models without specs, take the first.
// There no stage
// actor shares memory with another: each stage actor of replicas 1 to R-1
// builds its own layers from the Model, with its owner's weights bit for
// bit, and holds no optimizer (Plan.OwnCopies), even on its owner's worker
// (one rule for every placement; messages between actors of one worker pass
// in memory, unencoded). The turn then carries the gradients: replica 1's
// actor adds its chunks into its own cleared gradients and sends them with
// the GradTurn; each next actor copies what it is handed into its own
// gradients, adds its chunks by the same code as in one process and hands
// the sums on; the owner, last, copies them in, adds its own chunks, swaps
// tied gradients, clips and updates as with one replica. So each parameter
// block's gradients cross once per boundary between hosts a step: once on
// two hosts. Batch norm's running statistics travel with the turn too, since
// the replicas' forwards update them in turn. After its update the owner
// sends its weights to every other replica's actor at its place
// (actors.Weights), and each reports the update applied to the coordinator
// itself, so the next step starts only once every copy holds the new
// weights. Evaluation and Snapshot use replica 0; Restore sets every copy's
// weights too, so a run resumed after a lost worker (which fails the step
// as without replicas, naming the host and its stages) starts every replica
// from the checkpoint. TestRemoteReplicas and TestRemoteReplicasRestore
// check the bits over two workers.
//
// # Seeing the pipeline
//
// Stats returns each actor's busy time, message count, largest number of
// micro-batches in flight and, with Config.Trace, its spans. WriteTrace writes
// the spans as Chrome trace-event JSON (open it in Perfetto): a track per
// actor, a span per forward, backward and update, labelled by step and
// micro-batch. Bubble measures the idle fraction of the forward/backward phase.
//
// # Simulating schedules
//
// Simulate replays one step of a schedule without running anything, in
// the order its authors wrote it (Megatron's interleaved 1F1B, the Zero
// Bubble paper's zb-h1 and zbv): the order the engine's stages follow
// under those schedules (actors.Order), while sequential, GPipe and 1F1B
// run by dataflow rules that give their orders. Each is written as every stage's ordered list of F, B and W ops and
// timed with per-chunk costs and the ops' dependencies, giving the step,
// each stage's busy time, the bubble, the peak activations held and a
// timeline to draw. MeasureSimLayers times a model's layers for it as
// Predict does, and train plan --simulate prints every schedule's
// figures; docs/design.md ("Schedules") draws each.
package pipeline
