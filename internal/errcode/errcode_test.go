package errcode

import (
	"errors"
	"testing"
)

// Field names the subject in details; With adds to them, also on an
// Error built without details.
func TestFieldAndWith(t *testing.T) {
	e := Field(InvalidRequest, "compaction trigger is invalid", "trigger", "enum").With("value", "sometimes")
	if e.Code != InvalidRequest || e.Details["field"] != "trigger" || e.Details["rule"] != "enum" || e.Details["value"] != "sometimes" {
		t.Fatalf("%+v", e)
	}
	bare := (&Error{Code: Internal}).With("reason", "x")
	if bare.Details["reason"] != "x" {
		t.Fatalf("%+v", bare)
	}
	if !errors.Is(e, New(InvalidRequest, "")) || Code(e) != InvalidRequest {
		t.Fatalf("Is/Code do not match by code")
	}
}
