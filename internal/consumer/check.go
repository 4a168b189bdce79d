package consumer

import "time"

// Envelope is what CheckRequest learned of a request that passed: where
// its events are and when it stops being worth doing.
type Envelope struct {
	// EventsObject names the claim-checked events in cairn_lanes; "" when
	// the events are inline.
	EventsObject string
	// Deadline is deadline_at; zero when the request has none.
	Deadline time.Time
}

// CheckRequest makes the checks the processor makes on a request body
// before any NATS call or compaction, in its order: the envelope (a JSON
// object, the version, the names and ids it puts in keys, subjects and
// headers, one source of events, a parseable deadline; a body that fails
// them gets the engine's error for it, as a failed event would) and the
// rehydration state's bound under a server whose max_payload is maxPayload
// (0: the default 1 MiB). `processor request validate` calls it so that
// its verdict is the processor's own.
func CheckRequest(body []byte, maxPayload int64) (Envelope, error) {
	req, err := decodeEnvelope(body)
	if err != nil {
		return Envelope{}, err
	}
	if err := checkRehydrationSize(req, maxPayload); err != nil {
		return Envelope{}, err
	}
	return Envelope{EventsObject: deref(req.EventsObject), Deadline: req.deadline}, nil
}
