package par

import "syscall"

// osYield gives the CPU to another runnable thread, if there is one: a
// spinning helper must not keep the thread it is waiting for off the CPU.
func osYield() { syscall.RawSyscall(syscall.SYS_SCHED_YIELD, 0, 0, 0) }
