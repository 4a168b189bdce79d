//go:build unix

package tokens

import "syscall"

// processCPUTime is the user+system CPU time this process has used, in
// nanoseconds. Benchmarks report it per op because on a shared machine wall
// time also counts time spent waiting for a CPU.
func processCPUTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
