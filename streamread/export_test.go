package streamread

import "time"

// SetStall shortens the stall timeout for a test and returns a function
// that restores it.
func SetStall(d time.Duration) (restore func()) {
	old := stall
	stall = d
	return func() { stall = old }
}
