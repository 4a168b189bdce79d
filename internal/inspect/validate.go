package inspect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cairnhq/cairn/events"

	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/internal/consumer"
	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/internal/topology"
	"github.com/nats-io/nats.go/jetstream"
)

// Validation is what `request validate` prints: whether the processor
// would accept the request and, when the events are at hand, the outcome
// the engine would reach before any model call.
type Validation struct {
	OK        bool   `json:"ok"`
	RequestID string `json:"request_id,omitempty"`
	// Status is the would-be outcome: compacted, pruned, skipped or
	// failed; empty when the events could not be read.
	Status       string         `json:"status,omitempty"`
	Reason       string         `json:"reason,omitempty"`
	TokensBefore *int64         `json:"tokens_before,omitempty"`
	TokensAfter  *int64         `json:"tokens_after,omitempty"`
	Summarize    *SummarizePlan `json:"summarize,omitempty"`
	Error        *ErrorView     `json:"error,omitempty"`
	Notes        []string       `json:"notes,omitempty"`
	// EventsObject names the object holding the events when they were not
	// read (no LoadEvents was given).
	EventsObject string `json:"-"`
}

// SummarizePlan is the first model call a compaction would make.
type SummarizePlan struct {
	Events       int   `json:"events"`
	FirstChatSeq int64 `json:"first_chat_seq"`
	LastChatSeq  int64 `json:"last_chat_seq"`
	OutputTokens int   `json:"maximum_output_tokens"`
}

// ErrorView is a typed error as Cairn prints it.
type ErrorView struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details"`
}

// EventsLoader reads the claim-checked events of an events_object.
type EventsLoader func(ctx context.Context, name string) ([]events.InputEvent, error)

// Validate runs the processor's checks on a request body in the order the
// processor makes them: the pipeline's envelope, the deadline, then the
// engine's decoding, validation and plan, up to the first model call.
// Without load, a request whose events are in an events_object is checked
// but for its events (a note says so).
func Validate(ctx context.Context, body []byte, load EventsLoader, now time.Time) *Validation {
	v := &Validation{RequestID: requestIDOf(body)} // named in the output when there is one
	env, err := consumer.CheckRequest(body, 0)
	if err != nil {
		return v.failed(err)
	}
	req, err := engine.DecodeRequest(body)
	if err != nil {
		return v.failed(err)
	}
	if req.Events == nil {
		if load == nil {
			v.OK, v.EventsObject = true, env.EventsObject
			v.Notes = append(v.Notes, fmt.Sprintf("the events are in events_object %q: only the envelope and the fields besides events were checked", env.EventsObject))
			return v
		}
		if req.Events, err = load(ctx, env.EventsObject); err != nil {
			return v.failed(err)
		}
	}
	if !env.Deadline.IsZero() && !now.Before(env.Deadline) {
		return v.failed(errcode.WithDetails(errcode.DeadlineExceeded, "the request's deadline passed before it completed",
			map[string]any{"deadline_at": env.Deadline.UTC().Format(time.RFC3339)}))
	}
	return v.plan(ctx, req, now)
}

// requestIDOf reads request_id without decoding the rest of the request
// ("" when there is none).
func requestIDOf(body []byte) string {
	var head struct {
		RequestID string `json:"request_id"`
	}
	_ = json.Unmarshal(body, &head)
	return head.RequestID
}

// errStopAtModel ends a planning compaction at its first model call.
var errStopAtModel = errors.New("validation stops before the model call")

// planSummarizer records the first model call a compaction asks for and
// refuses it, so that planning never reaches a model.
type planSummarizer struct{ first *engine.Payload }

func (s *planSummarizer) Summarize(_ context.Context, p engine.Payload) (engine.Summary, error) {
	if s.first == nil {
		s.first = &p
	}
	return engine.Summary{}, errStopAtModel
}

// plan runs the engine as `processor compact` does, up to the model call.
// The lane's head (anti-thrash state, active checkpoint) lives on the
// server, so the plan is the one for a lane whose state is the request's.
func (v *Validation) plan(ctx context.Context, req *engine.Request, now time.Time) *Validation {
	s := &planSummarizer{}
	res, err := engine.Compact(ctx, req, s, now)
	v.Notes = append(v.Notes, "the lane's head on the server is not consulted: its anti-thrash state and active checkpoint may change the outcome")
	if s.first != nil {
		p := s.first
		v.OK, v.Status = true, events.StatusCompacted
		v.Summarize = &SummarizePlan{Events: len(p.Events), FirstChatSeq: p.CoveredRange.FirstChatSeq,
			LastChatSeq: p.CoveredRange.LastChatSeq, OutputTokens: p.MaximumOutputTokens}
		v.Notes = append(v.Notes, "compacted if the model's summary validates and reclaims enough")
		return v
	}
	if err != nil {
		return v.failed(err)
	}
	v.OK, v.Status, v.Reason = true, res.Status, res.Suppression
	v.TokensBefore, v.TokensAfter = &res.TokensBefore, &res.TokensAfter
	return v
}

func (v *Validation) failed(err error) *Validation {
	e, details := TypedError(err)
	v.OK, v.Status = false, "failed"
	v.Error = &ErrorView{Code: e.Code, Message: e.Message, Details: details}
	return v
}

// TypedError is err as Cairn's typed error (internal_error when it has no
// code) and its details, never nil.
func TypedError(err error) (*errcode.Error, map[string]any) {
	e := errcode.As(err)
	if e == nil {
		e = errcode.Wrap(errcode.Internal, err.Error(), err)
	}
	details := e.Details
	if details == nil {
		details = map[string]any{}
	}
	return e, details
}

// MaxEventsObjectBytes is the processor's default bound on an events
// object (serve --max-events-object-bytes).
const MaxEventsObjectBytes = 64 << 20

// ObjectLoader reads events objects from the lanes object store as the
// processor does, up to MaxEventsObjectBytes.
func ObjectLoader(store jetstream.ObjectStore) EventsLoader {
	return func(ctx context.Context, name string) ([]events.InputEvent, error) {
		info, err := store.GetInfo(ctx, name)
		if errors.Is(err, jetstream.ErrObjectNotFound) {
			return nil, errcode.WithDetails(errcode.EventsObjectMissing, "events_object does not name a stored object",
				map[string]any{"field": "events_object", "rule": "reference", "events_object": name, "cause": err.Error()})
		}
		if err != nil {
			return nil, err
		}
		if int64(info.Size) > MaxEventsObjectBytes {
			return nil, errcode.WithDetails(errcode.PayloadTooLarge, "events_object is too large",
				map[string]any{"field": "events_object", "rule": "range", "events_object": name, "bytes": int64(info.Size), "limit": int64(MaxEventsObjectBytes)})
		}
		data, err := store.GetBytes(ctx, name)
		if err != nil {
			return nil, err
		}
		return engine.DecodeEvents(data)
	}
}

// OpenObjectLoader opens the lanes object store and returns its loader.
func OpenObjectLoader(ctx context.Context, js jetstream.JetStream) (EventsLoader, error) {
	store, err := js.ObjectStore(ctx, topology.ObjectLanes)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", topology.ObjectLanes, err)
	}
	return ObjectLoader(store), nil
}
