// Package par runs work on the calling goroutine and a small pool of helper
// goroutines, within a thread budget the caller passes: Do for work cut into
// parts (the GEMM's blocks of C), For for loops over disjoint index ranges
// (an optimizer's update, clearing gradients). No budget is global: each
// call says how many goroutines it may use, so pipeline stages running at
// once can share the cores without a process-wide setting.
//
// Helpers are pooled: an idle helper spins (yielding to any runnable
// goroutine and OS thread) for up to 2 ms waiting for the next call and then
// exits, so back-to-back calls do not pay for waking a parked thread and no
// goroutine outlives its usefulness. Jobs and helpers are kept on free
// lists: steady-state calls do not allocate.
//
// Runs starts longer-lived functions, an actor's run of messages, on
// goroutines it keeps, so that their grown stacks are kept too; Keep starts
// one for each run that can be under way at once and bounds them there, so
// their number does not creep up under load. Go puts a
// goroutine made runnable on its maker's CPU, from where only an idle CPU
// takes it, and a CPU spinning an idle helper is not idle: so while
// helpers spin, Start yields its CPU to the run it started.
package par
