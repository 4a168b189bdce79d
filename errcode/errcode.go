// Package errcode defines Cairn's one error type and its stable, documented codes.
//
// Every failure a user can see carries a Code from this package; the codes are
// listed in subjects.md and are never renamed or reused. Messages are for
// people and may be refined; codes are for programs.
package errcode

import (
	"errors"
	"fmt"
)

// Codes of the compaction contract (subjects.md, Error codes).
const (
	InvalidRequest           = "invalid_compaction_request"
	InvalidPolicy            = "invalid_compaction_policy"
	InvalidEvent             = "invalid_compaction_event"
	InvalidState             = "invalid_compaction_state"
	InvalidRehydrationState  = "invalid_rehydration_state"
	InvalidSemantic          = "invalid_compaction_semantic"
	NativeUnsupported        = "native_compaction_unsupported"
	UnknownContextLimit      = "unknown_context_limit"
	InvalidContextBudget     = "invalid_context_budget"
	InvalidRenderedRequest   = "invalid_rendered_request"
	MissingArtifact          = "missing_compaction_artifact"
	InvalidProjection        = "invalid_compaction_projection"
	RenderError              = "compaction_render_error"
	ProviderError            = "compaction_provider_error"
	InputTooLarge            = "compaction_input_too_large"
	NothingToCompact         = "nothing_to_compact"
	Ineffective              = "ineffective_compaction"
	CurrentInputItemTooLarge = "current_input_item_too_large"
	CompactionFailed         = "compaction_failed"
	StaleHead                = "stale_head"
	CheckpointConflict       = "checkpoint_conflict"
	RequestIDConflict        = "request_id_conflict"
	UnsupportedVersion       = "unsupported_version"
	PayloadTooLarge          = "payload_too_large"
	EventsObjectMissing      = "events_object_missing"
	DeadlineExceeded         = "deadline_exceeded"
	ProviderAttemptUncertain = "provider_attempt_uncertain"
	ProviderUnavailable      = "provider_unavailable"
	HarvestBadReply          = "bad_reply"
	HarvestFailed            = "harvest_failed"
	Internal                 = "internal_error"
)

// Codes of the answers of Cairn's NATS service (subjects.md, Service).
const (
	InvalidServiceRequest = "invalid_service_request"
	LaneNotFound          = "lane_not_found"
)

// Rules are the values details.rule may take, each a short word for the
// kind of rule a value broke, with what it means. The list is closed:
// subjects.md lists exactly these (a test compares them), and every error
// that names a rule names one of them; details.expected, when present,
// says the particular rule in words.
var Rules = map[string]string{
	"required":  "a member that must be present is missing",
	"type":      "a value has the wrong JSON type",
	"enum":      "a value is not one of those allowed",
	"pattern":   "a string does not have the required form (64 lowercase hex digits, ...)",
	"format":    "a time does not parse as RFC 3339",
	"range":     "a number, length, size or count is out of its bounds",
	"name":      "an id or name is not 1..200 bytes of UTF-8 without control characters",
	"unknown":   "a member the contract does not define",
	"unique":    "a value repeats where each must be unique",
	"order":     "values are out of their required order",
	"lane":      "an event belongs to another lane than the request's",
	"reference": "a value names something the request does not hold",
	"exclusive": "two members that exclude each other are both present",
	"match":     "a value differs from the one it must equal (Nats-Msg-Id and request_id, a manifest and its event)",
	"conflict":  "two members contradict each other",
	"hash":      "a hash is not the hash of what it covers",
	"canonical": "a value is outside canonical JSON",
	"json":      "the body is not one JSON object with unique keys",
	"schema":    "a semantic summary breaks the semantic schema (details.path says where)",
	"supported": "a value Cairn knows but does not support",
	"error":     "the renderer returned an error",
	"panic":     "the renderer panicked",
	"result":    "the renderer returned an unusable result",
	"size":      "a fact extractor's reply is over its size bound",
	"facts":     "a fact extractor's reply holds no JSON facts",
}

// Error is a typed, user-visible failure.
//
// Code is stable and machine-readable; Message is human-readable; Details holds
// structured context (event ids, token counts). Retryable says whether sending
// the same request again can help; it is false for bad input. Err, when set, is
// the underlying cause and is reachable through errors.Unwrap.
type Error struct {
	Code      string         `json:"code" doc:"stable error code (subjects.md)"`
	Message   string         `json:"message" doc:"human-readable"`
	Details   map[string]any `json:"details" doc:"what failed: field paths, limits, values"`
	Retryable bool           `json:"retryable" doc:"whether a resend of the same request can succeed"`
	Err       error          `json:"-"`
}

// New returns an Error with the given code and message and empty details.
func New(code, message string) *Error {
	return &Error{Code: code, Message: message, Details: map[string]any{}}
}

// WithDetails returns an Error with the given code, message and details.
func WithDetails(code, message string, details map[string]any) *Error {
	if details == nil {
		details = map[string]any{}
	}
	return &Error{Code: code, Message: message, Details: details}
}

// Field returns an Error whose details name the subject of the failure:
// field is its path in the request (trigger, events[17].chat_seq,
// policy.trigger_ratio, accounting.category_bytes.x) and rule a short,
// stable word for what it broke (type, enum, pattern, required, range,
// order, unique, ...). Add values and limits with With.
func Field(code, message, field, rule string) *Error {
	return WithDetails(code, message, map[string]any{"field": field, "rule": rule})
}

// With sets one details entry and returns e, so that details read as one
// expression where the error is made.
func (e *Error) With(key string, value any) *Error {
	if e.Details == nil {
		e.Details = map[string]any{}
	}
	e.Details[key] = value
	return e
}

// Wrap returns an Error with the given code and message whose cause is err.
func Wrap(code, message string, err error) *Error {
	e := New(code, message)
	e.Err = err
	return e
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Err)
	}
	return e.Code + ": " + e.Message
}

// Unwrap returns the underlying cause, if any.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is an *Error with the same code, so that
// errors.Is(err, errcode.New(errcode.StaleHead, "")) matches by code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Code returns the code of the first *Error in err's chain, or "" if none.
func Code(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// As returns the first *Error in err's chain, or nil.
func As(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return nil
}
