package consumer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cairnhq/cairn/errcode"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Action is how a delivery is settled.
type Action int

// Actions.
const (
	// Ack: the request reached its outcome (or already had one).
	Ack Action = iota
	// Fail: a permanent failure. It is recorded as the request's outcome
	// and published as a failed event, and then the message is acked: the
	// request is settled, its outcome exists.
	Fail
	// Nak: a transient failure; redeliver after Delay.
	Nak
	// Abandon: settle nothing (the processor stopped as if killed); the
	// server redelivers after AckWait.
	Abandon
	// Term: the message cannot be settled (its failure cannot be recorded);
	// terminating it stops its redeliveries and puts it in the dead-letter
	// stream, which holds only what Cairn could not settle.
	Term
)

func (a Action) String() string {
	return [...]string{"ack", "fail", "nak", "abandon", "term"}[a]
}

// Decision is what Classify decided for one delivery.
type Decision struct {
	Action Action
	// Err is the failure the failed event reports (Fail only).
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
// It and ClassifyUnsettled are the only places that decide between Ack,
// Fail, Nak and Term:
//
//   - nil: Ack.
//   - a crash point: Abandon. A graceful stop: Nak at once.
//   - an earlier attempt still in flight: Nak until its deadline.
//   - a write larger than the server or a stream accepts: Fail with
//     payload_too_large; every delivery would write the same bytes.
//   - a typed permanent error: Fail with a failed event carrying its code.
//   - anything else (model unavailable, timeouts, NATS errors): Nak after
//     backoff[delivered-1] (last entry repeats); on the last allowed
//     delivery, Fail with provider_unavailable instead, so nothing is
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
			return Decision{Action: Fail, Err: e}
		}
		return Decision{Action: Nak, Delay: max(inFlight.until.Sub(now), 0) + time.Second}
	}
	if exceedsServerLimit(err) {
		e := errcode.Wrap(errcode.PayloadTooLarge, "a record of this request exceeds the server's size limits", err)
		e.Details = map[string]any{"cause": limitCause(err)}
		return Decision{Action: Fail, Err: e}
	}
	if e := errcode.As(err); e != nil && !e.Retryable && !transientCodes[e.Code] {
		return Decision{Action: Fail, Err: e}
	}
	if last {
		e := errcode.Wrap(errcode.ProviderUnavailable, "gave up after the maximum number of deliveries", err)
		e.Retryable = true
		e.Details = map[string]any{"deliveries": delivered, "cause": causeCode(err)}
		// The last cause's own details (a model's HTTP status, its attempts)
		// say what kept failing.
		if cause := errcode.As(err); cause != nil {
			for k, v := range cause.Details {
				if _, taken := e.Details[k]; !taken {
					e.Details[k] = v
				}
			}
		}
		return Decision{Action: Fail, Err: e}
	}
	return Decision{Action: Nak, Delay: backoffFor(delivered, backoff)}
}

// Redelivery delays of a message whose failure could not be recorded for a
// reason that may pass: short, because a Nak'd message keeps its slot of
// the consumer's MaxAckPending until it is redelivered.
const (
	unsettledRetryFirst = 500 * time.Millisecond
	unsettledRetryMax   = 5 * time.Second
)

// ClassifyUnsettled decides what becomes of a delivery whose failure could
// not be recorded or published (err is why). No message may hold a worker,
// or for long a slot of MaxAckPending, for a failure it cannot record:
//
//   - a cause that a retry cannot change (the event or ledger entry is
//     larger than the server or the stream accepts, a header the server
//     refuses, a value that cannot be encoded): Term at once.
//   - any other cause (timeouts, a stream that refuses writes for now,
//     a lost compare-and-swap): Nak after a short delay (500 ms, doubling
//     up to 5 s); on the last allowed delivery, Term.
//
// A terminated message is in the dead-letter stream: Cairn could not settle it.
func ClassifyUnsettled(err error, delivered uint64, maxDeliver int) Decision {
	if permanentSettleError(err) || delivered >= uint64(maxDeliver) {
		return Decision{Action: Term}
	}
	d := unsettledRetryFirst << min(max(delivered, 1)-1, 4)
	return Decision{Action: Nak, Delay: min(d, unsettledRetryMax)}
}

// permanentSettleError reports whether recording a failure failed for a
// reason the same message meets again on every delivery.
func permanentSettleError(err error) bool {
	if exceedsServerLimit(err) || errors.Is(err, nats.ErrBadHeaderMsg) {
		return true
	}
	// A typed error that is not retryable is Cairn's own verdict on the
	// record (say, it cannot be encoded).
	e := errcode.As(err)
	return e != nil && !e.Retryable
}

// exceedsServerLimit reports whether a write failed because what it
// wrote is larger than the server or the stream accepts: the same request
// writes the same bytes on every delivery, so this is permanent.
func exceedsServerLimit(err error) bool {
	if errors.Is(err, nats.ErrMaxPayload) {
		return true
	}
	var api *jetstream.APIError
	if errors.As(err, &api) {
		switch api.ErrorCode {
		case jetstream.JSErrCodeStreamMessageExceedsMaximum, jsErrCodeStreamHeaderExceedsMaximum:
			return true
		}
	}
	return false
}

// limitCause names the limit a write exceeded, for a failure's details.
func limitCause(err error) string {
	var api *jetstream.APIError
	if errors.As(err, &api) {
		return fmt.Sprintf("jetstream %d: %s", api.ErrorCode, api.Description)
	}
	return "max_payload"
}

// jsErrCodeStreamHeaderExceedsMaximum is JetStream's "header size exceeds
// maximum allowed of 64k" (nats.go names no constant for it).
const jsErrCodeStreamHeaderExceedsMaximum jetstream.ErrorCode = 10097

// termReason is the reason a terminated message's advisory carries: the
// code of the failure it could not record and a bounded cause.
func termReason(code string, err error) string {
	cause := "transient"
	var api *jetstream.APIError
	switch {
	case errors.As(err, &api):
		cause = fmt.Sprintf("jetstream %d", api.ErrorCode)
	case errors.Is(err, nats.ErrMaxPayload):
		cause = "max payload"
	case permanentSettleError(err):
		cause = causeCode(err)
	}
	return "unsettled " + code + ": " + cause
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
