package engine

import (
	"reflect"
	"slices"
	"testing"

	"github.com/cairnhq/cairn/internal/errcode"
)

// The key set and the required fields come from WireRequest's tags; these
// are the lists Request v1 had when they were written by hand (subjects.md),
// the required ones in the struct's order.
func TestRequestFieldsFollowWireRequest(t *testing.T) {
	want := []string{"v", "request_id", "trigger", "thread_id", "run_id", "root_turn_id",
		"run_agent_id", "provider_connection_id", "checkpoint_namespace", "destination_identity_hash",
		"parent_checkpoint_id", "model_profile", "requested_max_output_tokens", "rendered_request_bytes",
		"render", "events", "events_object", "active_input_event_ids", "previous_semantic",
		"rehydration_state", "policy", "focus", "structural_pressure", "accounting",
		"new_tokens_since_compaction", "anti_thrash", "deadline_at", "scope", "harvest"}
	if !reflect.DeepEqual(requestFields, keySet(want...)) {
		t.Fatalf("requestFields = %v, want %v", requestFields, want)
	}
	required := []string{"v", "request_id", "trigger", "thread_id", "run_agent_id", "checkpoint_namespace",
		"run_id", "root_turn_id", "provider_connection_id", "destination_identity_hash", "model_profile", "rehydration_state"}
	if !slices.Equal(requiredRequestFields, required) {
		t.Fatalf("requiredRequestFields = %v, want %v", requiredRequestFields, required)
	}
	for name := range decodedFields {
		if !requestFields[name] {
			t.Errorf("decodedFields names %q, which Request v1 does not have", name)
		}
	}
}

// A member no decode step reads is checked against its Go type, so that a
// field added to Correlation or WireRequest is type-checked with no step.
func TestCheckTypesOfOtherFields(t *testing.T) {
	type wire struct {
		Correlation
		Labels map[string]string `json:"labels,omitempty"`
	}
	fields := wireFields(reflect.TypeFor[wire]())
	if got := fields[len(fields)-1]; got.name != "labels" || got.required {
		t.Fatalf("last field = %+v, want labels, optional", got)
	}
	for _, tc := range []struct {
		name  string
		value any
		ok    bool
	}{
		{"object of strings", map[string]any{"team": "search"}, true},
		{"empty object", map[string]any{}, true},
		{"null", nil, true},
		{"a string", "team", false},
		{"a number inside", map[string]any{"team": int64(1)}, false},
	} {
		err := checkTypes(fields, map[string]any{"thread_id": int64(1), "labels": tc.value})
		if tc.ok && err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
		if !tc.ok {
			e, _ := err.(*errcode.Error)
			if e == nil || e.Code != errcode.InvalidRequest || e.Details["field"] != "labels" || e.Details["rule"] != "type" {
				t.Errorf("%s: err = %v, want invalid_compaction_request {field: labels, rule: type}", tc.name, err)
			}
		}
	}
}
