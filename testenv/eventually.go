package testenv

import (
	"testing"
	"time"
)

// pollInterval is how often Eventually retries; short so tests stay fast.
const pollInterval = 10 * time.Millisecond

// Eventually calls f until it returns nil or timeout passes, then fails the
// test with f's last error. It is the one way Cairn's tests wait for
// something; they never sleep. Call it from the test's own goroutine, as
// it may end the test with t.Fatalf.
func Eventually(t testing.TB, timeout time.Duration, f func() error) {
	t.Helper()
	if err := poll(timeout, f); err != nil {
		t.Fatalf("eventually (after %s): %v", timeout, err)
	}
}

// poll is Eventually without the test: it returns f's last error on timeout.
func poll(timeout time.Duration, f func() error) error {
	deadline := time.Now().Add(timeout)
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	for {
		err := f()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		<-ticker.C
	}
}
