//go:build unix

package consumer

import (
	"syscall"
	"time"
)

// processCPU is the user and system CPU time this process used so far, to
// report CPU per request beside throughput: unlike wall time it does not
// depend on what else the machine runs.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
