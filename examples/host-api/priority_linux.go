package main

import "syscall"

// lowerThreadPriority raises the nice value of the calling OS thread by
// nice (Linux keeps a nice value per thread; PRIO_PROCESS with a thread
// id sets that thread's only). The caller must have locked its goroutine
// to the thread. Raising nice needs no privilege; lowering it back does,
// which is why the pool's threads never return to the runtime.
func lowerThreadPriority(nice int) error {
	tid := syscall.Gettid()
	cur, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid)
	if err != nil {
		return err
	}
	// The raw system call returns 20 - nice (1..40), see getpriority(2).
	return syscall.Setpriority(syscall.PRIO_PROCESS, tid, min(19, 20-cur+nice))
}
