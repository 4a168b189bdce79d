package main

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"
)

// TestLifeEndsWhenALoopEnds: a loop that returns while serve should still
// run makes the life fatal, stops the other loops, and names the loop.
func TestLifeEndsWhenALoopEnds(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"with an error", errors.New("consumer gone")},
		{"without an error", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLife(context.Background(), slog.New(slog.DiscardHandler))
			defer l.stop()
			if err := l.check(context.Background()); err != nil {
				t.Fatalf("check before any failure: %v", err)
			}
			other := make(chan error, 1)
			go func() {
				other <- l.run("harvester", func(ctx context.Context) error { <-ctx.Done(); return nil })
			}()
			_ = l.run("processor", func(context.Context) error { return tc.err })
			select {
			case <-other:
			case <-time.After(10 * time.Second):
				t.Fatal("the other loop still runs after one ended")
			}
			err := l.check(context.Background())
			if err == nil || err.Error() != "processor stopped: "+errOr(tc.err, errLoopEnded).Error() {
				t.Fatalf("check = %v, want the processor named with its error", err)
			}
		})
	}
}

func errOr(err, otherwise error) error {
	if err != nil {
		return err
	}
	return otherwise
}

// TestLifeIgnoresFailuresWhileStopping: loops end and connections close as
// part of a requested shutdown; none of that is fatal.
func TestLifeIgnoresFailuresWhileStopping(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	l := newLife(ctx, slog.New(slog.DiscardHandler))
	defer l.stop()
	cancel()
	_ = l.run("processor", func(context.Context) error { return errors.New("stopped") })
	l.fail(errConnClosed)
	if err := l.err(); err != nil {
		t.Fatalf("err after a requested shutdown = %v, want nil", err)
	}
}
