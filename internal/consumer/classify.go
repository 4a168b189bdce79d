package consumer

import (
	"context"
	"errors"
	"time"

	"github.com/cairnhq/cairn/internal/errcode"
)

// Action is how a delivery is settled.
type Action int

// Actions.
const (
	// Ack: the request reached its outcome (or already had one).
	Ack Action = iota
	// Term: a permanent failure; a failed event is published first.
	Term
	// Nak: a transient failure; redeliver after Delay.
	Nak
	// Abandon: settle nothing (the processor stopped as if killed); the
	// server redelivers after AckWait.
	Abandon
)

func (a Action) String() string {
	return [...]string{"ack", "term", "nak", "abandon"}[a]
}

// Decision is what Classify decided for one delivery.
type Decision struct {
	Action Action
	// Err is the failure the failed event reports (Term only).
	Err *errcode.Error
	// Delay is the redelivery delay (Nak only).
	Delay time.Duration
}

// errCrashed marks a delivery stopped by a crash point.
var errCrashed = errors.New("consumer: stopped at a crash point")

// errShutdown marks a delivery interrupted by a graceful stop.
var errShutdown = errors.New("consumer: shutting down")

// attemptInFlight reports that an earlier attempt of the request may still
// be calling the model until the given time.
type attemptInFlight struct{ until time.Time }

func (e *attemptInFlight) Error() string {
	return "an earlier attempt may still be calling the model until " + e.until.Format(time.RFC3339)
}

// transientCodes are typed failures that a later delivery may not repeat
// (the model was unavailable). Every other typed error is permanent unless it
// says Retryable: bad input, contract violations, lost races, and a provider
// that refused the call (compaction_provider_error from a 400/401/403/404).
var transientCodes = map[string]bool{
	errcode.ProviderUnavailable: true,
}

// Classify maps the result of handling one delivery to how it is settled.
// It is the only place that decides between Term, Nak and Ack:
//
//   - nil: Ack.
//   - a crash point: Abandon. A graceful stop: Nak at once.
//   - an earlier attempt still in flight: Nak until its deadline.
//   - a typed permanent error: Term with a failed event carrying its code.
//   - anything else (model unavailable, timeouts, NATS errors): Nak after
//     backoff[delivered-1] (last entry repeats); on the last allowed
//     delivery, Term with provider_unavailable instead, so nothing is
//     retried forever and nothing ends silently.
//
// delivered is the delivery count (1 for the first), now is used for
// deadlines.
func Classify(err error, delivered uint64, maxDeliver int, backoff []time.Duration, now time.Time) Decision {
	if err == nil {
		return Decision{Action: Ack}
	}
	if errors.Is(err, errCrashed) {
		return Decision{Action: Abandon}
	}
	if errors.Is(err, errShutdown) {
		return Decision{Action: Nak}
	}
	last := delivered >= uint64(maxDeliver)
	var inFlight *attemptInFlight
	if errors.As(err, &inFlight) {
		if last {
			e := errcode.Wrap(errcode.ProviderAttemptUncertain,
				"an earlier model call may still be running and no deliveries are left", err)
			return Decision{Action: Term, Err: e}
		}
		return Decision{Action: Nak, Delay: max(inFlight.until.Sub(now), 0) + time.Second}
	}
	if e := errcode.As(err); e != nil && !e.Retryable && !transientCodes[e.Code] {
		return Decision{Action: Term, Err: e}
	}
	if last {
		e := errcode.Wrap(errcode.ProviderUnavailable, "gave up after the maximum number of deliveries", err)
		e.Retryable = true
		e.Details = map[string]any{"deliveries": delivered, "cause": causeCode(err)}
		return Decision{Action: Term, Err: e}
	}
	return Decision{Action: Nak, Delay: backoffFor(delivered, backoff)}
}

func backoffFor(delivered uint64, backoff []time.Duration) time.Duration {
	if len(backoff) == 0 {
		return 0
	}
	i := int(min(max(delivered, 1)-1, uint64(len(backoff)-1)))
	return backoff[i]
}

func causeCode(err error) string {
	if c := errcode.Code(err); c != "" {
		return c
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "timeout"
	}
	return "transient"
}
