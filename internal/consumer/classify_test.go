package consumer

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/errcode"
	"github.com/cairnhq/cairn/internal/lanes"
	"github.com/cairnhq/cairn/internal/ledger"
)

func TestClassify(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	backoff := []time.Duration{time.Second, 5 * time.Second}
	retryable := errcode.New(errcode.Internal, "x")
	retryableProvider := errcode.New(errcode.ProviderError, "x")
	retryableProvider.Retryable = true
	retryable.Retryable = true
	cases := []struct {
		name      string
		err       error
		delivered uint64
		action    Action
		code      string
		delay     time.Duration
	}{
		{"success", nil, 1, Ack, "", 0},
		{"crash point", fmt.Errorf("x: %w", errCrashed), 1, Abandon, "", 0},
		{"shutdown", errors.Join(errShutdown, context.Canceled), 1, Nak, "", 0},
		{"bad input", errcode.New(errcode.InvalidRequest, "x"), 1, Term, errcode.InvalidRequest, 0},
		{"unknown version", errcode.New(errcode.UnsupportedVersion, "x"), 1, Term, errcode.UnsupportedVersion, 0},
		{"invalid event", errcode.New(errcode.InvalidEvent, "x"), 1, Term, errcode.InvalidEvent, 0},
		{"stale head", errcode.New(errcode.StaleHead, "x"), 1, Term, errcode.StaleHead, 0},
		{"checkpoint conflict", errcode.New(errcode.CheckpointConflict, "x"), 1, Term, errcode.CheckpointConflict, 0},
		{"request id conflict", errcode.New(errcode.RequestIDConflict, "x"), 1, Term, errcode.RequestIDConflict, 0},
		{"deadline", errcode.New(errcode.DeadlineExceeded, "x"), 1, Term, errcode.DeadlineExceeded, 0},
		{"too large", errcode.New(errcode.PayloadTooLarge, "x"), 1, Term, errcode.PayloadTooLarge, 0},
		{"object missing", errcode.New(errcode.EventsObjectMissing, "x"), 1, Term, errcode.EventsObjectMissing, 0},
		{"uncertain fail mode", errcode.New(errcode.ProviderAttemptUncertain, "x"), 1, Term, errcode.ProviderAttemptUncertain, 0},
		{"ineffective", errcode.New(errcode.Ineffective, "x"), 1, Term, errcode.Ineffective, 0},
		{"internal", errcode.New(errcode.Internal, "x"), 1, Term, errcode.Internal, 0},
		{"provider refused (401, 400)", errcode.New(errcode.ProviderError, "x"), 1, Term, errcode.ProviderError, 0},
		{"provider failed first", retryableProvider, 1, Nak, "", time.Second},
		{"provider failed second", retryableProvider, 2, Nak, "", 5 * time.Second},
		{"provider failed later repeats last", retryableProvider, 3, Nak, "", 5 * time.Second},
		{"provider unavailable", errcode.New(errcode.ProviderUnavailable, "x"), 1, Nak, "", time.Second},
		{"retryable typed", retryable, 1, Nak, "", time.Second},
		{"nats hiccup", errors.New("nats: timeout"), 1, Nak, "", time.Second},
		{"model timeout", context.DeadlineExceeded, 2, Nak, "", 5 * time.Second},
		{"ledger race", fmt.Errorf("w: %w", ledger.ErrConflict), 1, Nak, "", time.Second},
		{"head contention", fmt.Errorf("w: %w", lanes.ErrConflict), 1, Nak, "", time.Second},
		{"transient on last delivery", errors.New("nats: timeout"), 4, Term, errcode.ProviderUnavailable, 0},
		{"provider failed on last delivery", retryableProvider, 4, Term, errcode.ProviderUnavailable, 0},
		{"attempt in flight", &attemptInFlight{until: now.Add(30 * time.Second)}, 2, Nak, "", 31 * time.Second},
		{"attempt in flight, past", &attemptInFlight{until: now.Add(-time.Second)}, 2, Nak, "", time.Second},
		{"attempt in flight on last delivery", &attemptInFlight{until: now.Add(time.Minute)}, 4, Term, errcode.ProviderAttemptUncertain, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := Classify(c.err, c.delivered, 4, backoff, now)
			if d.Action != c.action {
				t.Fatalf("action %s, want %s", d.Action, c.action)
			}
			if c.action == Term && (d.Err == nil || d.Err.Code != c.code) {
				t.Fatalf("code %+v, want %s", d.Err, c.code)
			}
			if c.action == Nak && d.Delay != c.delay {
				t.Fatalf("delay %s, want %s", d.Delay, c.delay)
			}
		})
	}
}

func TestClassifyProviderUnavailableIsRetryable(t *testing.T) {
	d := Classify(errors.New("down"), 6, 6, []time.Duration{time.Second}, time.Now())
	if d.Action != Term || !d.Err.Retryable || d.Err.Details["cause"] != "transient" {
		t.Fatalf("got %+v", d.Err)
	}
}
