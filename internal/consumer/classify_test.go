package consumer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/internal/lanes"
	"github.com/cairnhq/cairn/internal/ledger"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
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
		{"bad input", errcode.New(errcode.InvalidRequest, "x"), 1, Fail, errcode.InvalidRequest, 0},
		{"unknown version", errcode.New(errcode.UnsupportedVersion, "x"), 1, Fail, errcode.UnsupportedVersion, 0},
		{"invalid event", errcode.New(errcode.InvalidEvent, "x"), 1, Fail, errcode.InvalidEvent, 0},
		{"stale head", errcode.New(errcode.StaleHead, "x"), 1, Fail, errcode.StaleHead, 0},
		{"checkpoint conflict", errcode.New(errcode.CheckpointConflict, "x"), 1, Fail, errcode.CheckpointConflict, 0},
		{"request id conflict", errcode.New(errcode.RequestIDConflict, "x"), 1, Fail, errcode.RequestIDConflict, 0},
		{"deadline", errcode.New(errcode.DeadlineExceeded, "x"), 1, Fail, errcode.DeadlineExceeded, 0},
		{"too large", errcode.New(errcode.PayloadTooLarge, "x"), 1, Fail, errcode.PayloadTooLarge, 0},
		{"object missing", errcode.New(errcode.EventsObjectMissing, "x"), 1, Fail, errcode.EventsObjectMissing, 0},
		{"uncertain fail mode", errcode.New(errcode.ProviderAttemptUncertain, "x"), 1, Fail, errcode.ProviderAttemptUncertain, 0},
		{"ineffective", errcode.New(errcode.Ineffective, "x"), 1, Fail, errcode.Ineffective, 0},
		{"internal", errcode.New(errcode.Internal, "x"), 1, Fail, errcode.Internal, 0},
		{"provider refused (401, 400)", errcode.New(errcode.ProviderError, "x"), 1, Fail, errcode.ProviderError, 0},
		{"provider failed first", retryableProvider, 1, Nak, "", time.Second},
		{"provider failed second", retryableProvider, 2, Nak, "", 5 * time.Second},
		{"provider failed later repeats last", retryableProvider, 3, Nak, "", 5 * time.Second},
		{"provider unavailable", errcode.New(errcode.ProviderUnavailable, "x"), 1, Nak, "", time.Second},
		{"retryable typed", retryable, 1, Nak, "", time.Second},
		{"nats hiccup", errors.New("nats: timeout"), 1, Nak, "", time.Second},
		{"model timeout", context.DeadlineExceeded, 2, Nak, "", 5 * time.Second},
		{"ledger race", fmt.Errorf("w: %w", ledger.ErrConflict), 1, Nak, "", time.Second},
		{"head contention", fmt.Errorf("w: %w", lanes.ErrConflict), 1, Nak, "", time.Second},
		{"transient on last delivery", errors.New("nats: timeout"), 4, Fail, errcode.ProviderUnavailable, 0},
		{"provider failed on last delivery", retryableProvider, 4, Fail, errcode.ProviderUnavailable, 0},
		{"attempt in flight", &attemptInFlight{until: now.Add(30 * time.Second)}, 2, Nak, "", 31 * time.Second},
		{"attempt in flight, past", &attemptInFlight{until: now.Add(-time.Second)}, 2, Nak, "", time.Second},
		{"ledger write over max_payload", fmt.Errorf("ledger: write: %w", nats.ErrMaxPayload), 1, Fail, errcode.PayloadTooLarge, 0},
		{"max_payload inside a typed error", errcode.Wrap(errcode.Internal, "store", nats.ErrMaxPayload), 1, Fail, errcode.PayloadTooLarge, 0},
		{"stream refuses the message size", fmt.Errorf("w: %w", &jetstream.APIError{ErrorCode: jetstream.JSErrCodeStreamMessageExceedsMaximum}), 1, Fail, errcode.PayloadTooLarge, 0},
		{"stream refuses the header size", &jetstream.APIError{ErrorCode: 10097}, 1, Fail, errcode.PayloadTooLarge, 0},
		{"attempt in flight on last delivery", &attemptInFlight{until: now.Add(time.Minute)}, 4, Fail, errcode.ProviderAttemptUncertain, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := Classify(c.err, c.delivered, 4, backoff, now)
			if d.Action != c.action {
				t.Fatalf("action %s, want %s", d.Action, c.action)
			}
			if c.action == Fail && (d.Err == nil || d.Err.Code != c.code) {
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
	if d.Action != Fail || !d.Err.Retryable || d.Err.Details["cause"] != "transient" {
		t.Fatalf("got %+v", d.Err)
	}
}

// A failure that cannot be recorded for a reason a retry cannot change is
// terminated on the delivery that met it; any other is redelivered soon,
// never with the request backoff, and terminated on the last delivery.
func TestClassifyUnsettled(t *testing.T) {
	api := func(code jetstream.ErrorCode) error {
		return fmt.Errorf("outbox: publish: nats: %w", &jetstream.APIError{Code: 400, ErrorCode: code, Description: "x"})
	}
	cases := []struct {
		name      string
		err       error
		delivered uint64
		action    Action
		delay     time.Duration
	}{
		{"header over 64 KiB", api(10097), 1, Term, 0},
		{"message over the stream's max", api(jetstream.JSErrCodeStreamMessageExceedsMaximum), 1, Term, 0},
		{"over the server's max payload", fmt.Errorf("ledger: %w", nats.ErrMaxPayload), 1, Term, 0},
		{"cannot be encoded", errcode.Wrap(errcode.Internal, "encode event", errors.New("bad")), 1, Term, 0},
		{"timeout, first", fmt.Errorf("publish: %w", context.DeadlineExceeded), 1, Nak, 500 * time.Millisecond},
		{"timeout, third", nats.ErrTimeout, 3, Nak, 2 * time.Second},
		{"store refused for now, later", api(10077), 5, Nak, 5 * time.Second},
		{"ledger race", fmt.Errorf("w: %w", ledger.ErrConflict), 2, Nak, time.Second},
		{"retryable typed", &errcode.Error{Code: errcode.Internal, Retryable: true}, 1, Nak, 500 * time.Millisecond},
		{"transient on the last delivery", nats.ErrTimeout, 6, Term, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := ClassifyUnsettled(c.err, c.delivered, 6)
			if d.Action != c.action || d.Delay != c.delay {
				t.Fatalf("got %s after %s, want %s after %s", d.Action, d.Delay, c.action, c.delay)
			}
		})
	}
}

func TestTermReasonIsBounded(t *testing.T) {
	long := fmt.Errorf("publish %s: %w", strings.Repeat("x", 70000), &jetstream.APIError{ErrorCode: 10097, Description: "header size exceeds maximum allowed of 64k"})
	if r := termReason(errcode.InvalidRequest, long); r != "unsettled invalid_compaction_request: jetstream 10097" {
		t.Fatalf("reason %q", r)
	}
	if r := termReason(errcode.StaleHead, nats.ErrTimeout); r != "unsettled stale_head: transient" {
		t.Fatalf("reason %q", r)
	}
}
