package engine

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/events"

	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/semantic"
)

// subjectCase is one failure and the subject its details must name: the
// field as its path in the request and the rule it broke, plus any other
// details entries the producer needs (values, limits).
type subjectCase struct {
	name        string
	run         func(t *testing.T) error
	code        string
	field, rule string
	extra       map[string]any
}

// wire decodes the fixture request with edit applied to its wire form and,
// when it decodes, compacts it.
func wire(edit func(m map[string]any)) func(t *testing.T) error {
	return func(t *testing.T) error {
		m := wireMap(fixtureRequest(t))
		edit(m)
		req, err := DecodeRequestValue(m)
		if err != nil {
			return err
		}
		_, err = Compact(context.Background(), req, validSummarizer(), fixedNow)
		return err
	}
}

// set returns an edit that sets the top-level field key.
func set(key string, value any) func(m map[string]any) {
	return func(m map[string]any) { m[key] = value }
}

// setEvent returns an edit that sets field key of event i.
func setEvent(i int, key string, value any) func(m map[string]any) {
	return func(m map[string]any) { m["events"].([]any)[i].(map[string]any)[key] = value }
}

// setPolicy returns an edit that sets one policy field.
func setPolicy(key string, value any) func(m map[string]any) {
	return func(m map[string]any) { m["policy"].(map[string]any)[key] = value }
}

func both(edits ...func(m map[string]any)) func(m map[string]any) {
	return func(m map[string]any) {
		for _, e := range edits {
			e(m)
		}
	}
}

// rawRequest decodes data as a request.
func rawRequest(data string) func(t *testing.T) error {
	return func(*testing.T) error {
		_, err := DecodeRequest([]byte(data))
		return err
	}
}

// brokenRenderer fails as its name says: it panics, errs, or returns no bytes.
type brokenRenderer string

func (f brokenRenderer) Render(*semantic.Semantic, []events.InputEvent) (Rendered, error) {
	switch f {
	case "panic":
		panic("renderer bug")
	case "error":
		return Rendered{}, errors.New("renderer failed")
	}
	return Rendered{}, nil
}

// withRenderer compacts the fixture with a failing renderer registered
// under its name, so the before budget renders through it.
func withRenderer(name string) func(t *testing.T) error {
	return func(t *testing.T) error {
		key := "test_" + name
		renderers[key] = brokenRenderer(name)
		t.Cleanup(func() { delete(renderers, key) })
		return wire(both(set("render", key), func(m map[string]any) { delete(m, "rendered_request_bytes") }))(t)
	}
}

// replay replays the fixture lane through a manifest edited by edit.
func replay(edit func(e *events.ManifestEntry)) func(t *testing.T) error {
	return func(t *testing.T) error {
		laneEvents := fixtureEvents(t)
		_, entry, err := projectEvent(laneEvents[1])
		if err != nil || entry == nil {
			t.Fatalf("projectEvent: %v %v", entry, err)
		}
		edit(entry)
		_, err = Replay(laneEvents, []events.ManifestEntry{*entry})
		return err
	}
}

func subjectCases() []subjectCase {
	hash := strings.Repeat("b", 64)
	return []subjectCase{
		{"request not JSON", rawRequest(`{"v":1,`), errcode.InvalidRequest, "$", "json", nil},
		{"request with a duplicate key", rawRequest(`{"v":1,"v":1}`), errcode.InvalidRequest, "$", "unique", nil},
		{"request not an object", rawRequest(`[1]`), errcode.InvalidRequest, "$", "type", map[string]any{"expected": "object"}},
		{"version 2", wire(set("v", int64(2))), errcode.UnsupportedVersion, "v", "enum", map[string]any{"value": int64(2)}},
		{"version as a string", wire(set("v", "1")), errcode.UnsupportedVersion, "v", "enum", map[string]any{"value": "1"}},
		{"unknown field", wire(set("colour", "red")), errcode.InvalidRequest, "colour", "unknown",
			map[string]any{"unknown_fields": []any{"colour"}}},
		{"missing field", wire(func(m map[string]any) { delete(m, "trigger") }), errcode.InvalidRequest, "trigger", "required",
			map[string]any{"missing_fields": []any{"trigger"}}},
		{"unknown policy field", wire(setPolicy("trigger", 0.5)), errcode.InvalidPolicy, "policy.trigger", "unknown", nil},
		{"unknown accounting field", wire(set("accounting", map[string]any{"methd": "x"})), errcode.InvalidRequest,
			"accounting", "unknown", map[string]any{"fields": []any{"methd"}}},
		{"unknown event field", wire(setEvent(2, "colour", "red")), errcode.InvalidEvent, "colour", "unknown",
			map[string]any{"event_id": uuid7(3)}},
		{"missing event field", wire(func(m map[string]any) { delete(m["events"].([]any)[2].(map[string]any), "role") }),
			errcode.InvalidEvent, "role", "required", map[string]any{"event_id": uuid7(3)}},
		{"thread_id a number", wire(set("thread_id", int64(3))), errcode.InvalidRequest, "thread_id", "type", nil},
		{"unknown trigger", wire(set("trigger", "sometimes")), errcode.InvalidRequest, "trigger", "enum",
			map[string]any{"value": "sometimes", "expected": []any{"auto", "manual", "overflow", "model_switch_preflight"}}},
		{"trigger a number", wire(set("trigger", int64(1))), errcode.InvalidRequest, "trigger", "type", nil},
		{"destination hash too short", wire(set("destination_identity_hash", "abc")), errcode.InvalidRequest,
			"destination_identity_hash", "pattern", map[string]any{"value": "abc"}},
		{"destination hash upper case", wire(set("destination_identity_hash", strings.Repeat("A", 64))), errcode.InvalidRequest,
			"destination_identity_hash", "pattern", nil},
		{"destination hash a number", wire(set("destination_identity_hash", int64(1))), errcode.InvalidRequest,
			"destination_identity_hash", "type", nil},
		{"auto trigger with the policy disabled", wire(both(set("trigger", events.TriggerAuto), setPolicy("enabled", false))),
			errcode.InvalidRequest, "policy.enabled", "conflict", nil},
		{"focus too long", wire(set("focus", strings.Repeat("f", 2001))), errcode.InvalidRequest, "focus", "range",
			map[string]any{"bytes": int64(2001), "limit": int64(2000)}},
		{"no events", wire(set("events", []any{})), errcode.InvalidRequest, "events", "range", map[string]any{"count": int64(0)}},
		{"events an object", wire(set("events", map[string]any{})), errcode.InvalidRequest, "events", "type", nil},
		{"chat_seq going back", wire(setEvent(3, "chat_seq", int64(1))), errcode.InvalidRequest, "events[3].chat_seq", "order",
			map[string]any{"value": int64(1), "expected": ">= 3"}},
		{"ordinal repeated", wire(setEvent(3, "lane_event_ordinal", int64(3))), errcode.InvalidRequest,
			"events[3].lane_event_ordinal", "order", map[string]any{"value": int64(3), "expected": "> 3"}},
		{"event id repeated", wire(setEvent(2, "event_id", uuid7(1))), errcode.InvalidRequest, "events[2].event_id", "unique", nil},
		{"event of another agent", wire(setEvent(1, "run_agent_id", "agent-2")), errcode.InvalidRequest,
			"events[1].run_agent_id", "lane", map[string]any{"value": "agent-2", "expected": "agent-1"}},
		{"event of another namespace", wire(setEvent(4, "checkpoint_namespace", "other")), errcode.InvalidRequest,
			"events[4].checkpoint_namespace", "lane", nil},
		{"event chat_seq a string", wire(setEvent(0, "chat_seq", "one")), errcode.InvalidEvent, "chat_seq",
			"type", map[string]any{"event_id": uuid7(1)}},
		{"active ids a string", wire(set("active_input_event_ids", "x")), errcode.InvalidRequest, "active_input_event_ids", "type", nil},
		{"active id repeated", wire(set("active_input_event_ids", []any{uuid7(6), uuid7(5), uuid7(6)})), errcode.InvalidRequest,
			"active_input_event_ids[2]", "unique", map[string]any{"value": uuid7(6)}},
		{"active id of no event", wire(set("active_input_event_ids", []any{uuid7(6), uuid7(99)})), errcode.InvalidRequest,
			"active_input_event_ids[1]", "reference", map[string]any{"value": uuid7(99)}},
		{"more active ids than events", wire(set("active_input_event_ids", []any{"a", "b", "c", "d", "e", "f", "g"})),
			errcode.InvalidRequest, "active_input_event_ids", "range", map[string]any{"count": int64(7), "max": int64(6)}},
		{"unknown renderer", wire(set("render", "html")), errcode.InvalidRequest, "render", "enum",
			map[string]any{"value": "html", "expected": []any{RenderCanonicalV1, RenderOpenAIChatV1}}},
		{"negative rendered bytes", wire(set("rendered_request_bytes", int64(-1))), errcode.InvalidRequest,
			"rendered_request_bytes", "range", nil},
		{"harvest a string", wire(set("harvest", "yes")), errcode.InvalidRequest, "harvest", "type", nil},
		{"deadline not RFC 3339", wire(set("deadline_at", "tomorrow")), errcode.InvalidRequest, "deadline_at", "format", nil},
		{"accounting a list", wire(set("accounting", []any{})), errcode.InvalidRequest, "accounting", "type", nil},
		{"policy a list", wire(set("policy", []any{})), errcode.InvalidPolicy, "policy", "type", nil},

		{"negative state count", wire(set("anti_thrash", map[string]any{"successful_auto_compactions": int64(-1)})),
			errcode.InvalidState, "anti_thrash.successful_auto_compactions", "range", map[string]any{"value": int64(-1)}},
		{"state count a string", wire(set("anti_thrash", map[string]any{"consecutive_ineffective_compactions": "1"})),
			errcode.InvalidState, "anti_thrash.consecutive_ineffective_compactions", "type", nil},
		{"unknown state method", wire(set("anti_thrash", map[string]any{"accounting_method": "guess", "accounting_version": int64(1)})),
			errcode.InvalidState, "anti_thrash.accounting_method", "enum", nil},
		{"state profile hash malformed", wire(set("anti_thrash", map[string]any{"accounting_method": events.MethodConservativeUTF8,
			"accounting_version": int64(1), "accounting_profile_hash": "x"})),
			errcode.InvalidState, "anti_thrash.accounting_profile_hash", "pattern", nil},
		{"unknown state field", wire(set("anti_thrash", map[string]any{"bogus": true})), errcode.InvalidState, "anti_thrash", "unknown",
			map[string]any{"fields": []any{"bogus"}}},
		{"state a list", wire(set("anti_thrash", []any{})), errcode.InvalidState, "anti_thrash", "type", nil},
		{"negative new tokens", wire(set("new_tokens_since_compaction", int64(-5))), errcode.InvalidState,
			"new_tokens_since_compaction", "range", map[string]any{"value": int64(-5)}},
		{"accounting profile hash malformed", wire(set("accounting", map[string]any{"profile_hash": "short"})),
			errcode.InvalidState, "accounting.profile_hash", "pattern", map[string]any{"value": "short"}},
		{"accounting profile hash a number", wire(set("accounting", map[string]any{"profile_hash": int64(1)})),
			errcode.InvalidState, "accounting.profile_hash", "type", nil},

		{"rehydration state a string", wire(set("rehydration_state", "x")), errcode.InvalidRehydrationState,
			"rehydration_state", "type", nil},
		{"rehydration state over 1 MiB", wire(set("rehydration_state", map[string]any{"blob": strings.Repeat("x", 1<<20)})),
			errcode.InvalidRehydrationState, "rehydration_state", "range", map[string]any{"limit": int64(1 << 20)}},

		{"profile a string", wire(set("model_profile", "big")), errcode.UnknownContextLimit, "model_profile", "type", nil},
		{"unknown limit kind", wire(set("model_profile", map[string]any{"context_limit_kind": "vibes", "max_input_tokens": int64(20_000)})),
			errcode.UnknownContextLimit, "model_profile.context_limit_kind", "enum", map[string]any{"value": "vibes"}},
		{"limit kind a number", wire(set("model_profile", map[string]any{"context_limit_kind": int64(1)})),
			errcode.UnknownContextLimit, "model_profile.context_limit_kind", "type", nil},
		{"no max_input_tokens", wire(set("model_profile", map[string]any{})), errcode.UnknownContextLimit,
			"model_profile.max_input_tokens", "required", nil},
		{"max_input_tokens a string", wire(set("model_profile", map[string]any{"max_input_tokens": "20k"})),
			errcode.UnknownContextLimit, "model_profile.max_input_tokens", "type", nil},
		{"reservation above the window", wire(set("model_profile", map[string]any{"max_input_tokens": int64(100),
			"provider_reserved_tokens": int64(100)})), errcode.UnknownContextLimit, "model_profile.max_input_tokens", "range",
			map[string]any{"value": int64(100), "min_exclusive": int64(100)}},
		{"negative reservation", wire(set("model_profile", map[string]any{"max_input_tokens": int64(100),
			"provider_reserved_tokens": int64(-1)})), errcode.UnknownContextLimit, "model_profile.provider_reserved_tokens", "range", nil},
		{"shared window without max_context_tokens", wire(set("model_profile", map[string]any{"context_limit_kind": events.LimitSharedInputOutput})),
			errcode.UnknownContextLimit, "model_profile.max_context_tokens", "required", nil},
		{"shared window below the output", wire(both(set("requested_max_output_tokens", int64(500)),
			set("model_profile", map[string]any{"context_limit_kind": events.LimitSharedInputOutput, "max_context_tokens": int64(400)}))),
			errcode.UnknownContextLimit, "model_profile.max_context_tokens", "range", map[string]any{"requested_max_output_tokens": int64(500)}},

		{"native mode", wire(setPolicy("mode", events.ModeNative)), errcode.NativeUnsupported, "policy.mode", "supported",
			map[string]any{"value": events.ModeNative}},

		{"negative category bytes", wire(set("accounting", map[string]any{"category_bytes": map[string]any{"x": int64(-1), "y": int64(2)}})),
			errcode.InvalidContextBudget, "accounting.category_bytes.x", "range", map[string]any{"value": int64(-1)}},
		{"category bytes a string", wire(set("accounting", map[string]any{"category_bytes": map[string]any{"b": "1", "a": int64(-1)}})),
			errcode.InvalidContextBudget, "accounting.category_bytes.a", "range", nil},
		{"category bytes a list", wire(set("accounting", map[string]any{"category_bytes": []any{}})),
			errcode.InvalidContextBudget, "accounting.category_bytes", "type", nil},
		{"negative reported usage", wire(set("accounting", map[string]any{"reported_input_tokens": int64(-3)})),
			errcode.InvalidContextBudget, "accounting.reported_input_tokens", "range", map[string]any{"value": int64(-3)}},
		{"reported usage a string", wire(set("accounting", map[string]any{"reported_input_tokens": "3"})),
			errcode.InvalidContextBudget, "accounting.reported_input_tokens", "type", nil},
		// A request's policy cannot carry a bad ratio (invalid_compaction_policy
		// comes first); a budget built in code can.
		{"budget ratio of 1.5", func(*testing.T) error {
			_, err := NewContextBudget(events.ModelProfile{MaxInputTokens: ptr(int64(100))}, nil, BudgetOptions{TriggerRatio: 1.5})
			return err
		}, errcode.InvalidContextBudget, "policy.trigger_ratio", "range", map[string]any{"value": 1.5}},
		// Request validation rejects negative rendered_request_bytes first;
		// the budget still names the field.
		{"negative rendered size", func(*testing.T) error {
			_, err := newBudget(events.ModelProfile{MaxInputTokens: ptr(int64(100))}, -1, nil, BudgetOptions{})
			return err
		}, errcode.InvalidRenderedRequest, "rendered_request_bytes", "range", map[string]any{"value": int64(-1)}},

		{"large tool output without artifact", wire(both(setEvent(1, "artifact_ids", []any{}), func(m map[string]any) {
			delete(m["events"].([]any)[1].(map[string]any), "content_hash") // Cairn computes it
		})), errcode.MissingArtifact, "events[1].artifact_ids", "required", map[string]any{"event_id": uuid7(2)}},

		{"window too small for the summary call", wire(set("model_profile", map[string]any{"max_input_tokens": int64(4100)})),
			errcode.InputTooLarge, "model_profile.max_input_tokens", "range", map[string]any{"effective_input_limit": int64(4100)}},
		{"one event over the call's input", wire(setEvent(0, "token_count", int64(16_000))),
			errcode.InputTooLarge, "events[0]", "range", map[string]any{"tokens": int64(16_000), "input_budget": int64(15_804)}},
		{"too many summary calls", wire(both(setEvent(0, "token_count", int64(15_000)), // with the projected event 1: two calls
			setPolicy("maximum_hierarchical_summary_calls", int64(1)))),
			errcode.InputTooLarge, "policy.maximum_hierarchical_summary_calls", "range",
			map[string]any{"needed_calls": int64(2), "limit": int64(1)}},

		{"renderer panics", withRenderer("panic"), errcode.RenderError, "render", "panic", map[string]any{"value": "test_panic"}},
		{"renderer errs", withRenderer("error"), errcode.RenderError, "render", "error", map[string]any{"value": "test_error"}},
		{"renderer returns nothing", withRenderer("nothing"), errcode.RenderError, "render", "result", nil},

		{"manifest version 2", replay(func(e *events.ManifestEntry) { e.ProjectionVersion = 2 }), errcode.InvalidProjection,
			"projection_manifest[0].projection_version", "enum", map[string]any{"value": int64(2)}},
		{"manifest hash malformed", replay(func(e *events.ManifestEntry) { e.OriginalContentHash = "x" }), errcode.InvalidProjection,
			"projection_manifest[0].original_content_hash", "pattern", nil},
		{"manifest of no event", replay(func(e *events.ManifestEntry) { e.EventID = uuid7(99) }), errcode.InvalidProjection,
			"projection_manifest[0].event_id", "reference", map[string]any{"event_id": uuid7(99)}},
		{"manifest byte length differs", replay(func(e *events.ManifestEntry) { e.OriginalBytes++ }), errcode.InvalidProjection,
			"projection_manifest[0].original_bytes", "match", nil},
		{"manifest source hash differs", replay(func(e *events.ManifestEntry) { e.OriginalContentHash = hash }), errcode.InvalidProjection,
			"projection_manifest[0].original_content_hash", "match", nil},
		{"manifest projected hash differs", replay(func(e *events.ManifestEntry) { e.ProjectedContentHash = hash }), errcode.InvalidProjection,
			"projection_manifest[0].projected_content_hash", "match", nil},
		{"manifest not a list", func(*testing.T) error {
			_, err := DecodeManifest("x")
			return err
		}, errcode.InvalidProjection, "projection_manifest", "type", nil},
		{"manifest entry without hashes", func(*testing.T) error {
			_, err := DecodeManifest([]any{map[string]any{"event_id": "e", "original_bytes": int64(1)}})
			return err
		}, errcode.InvalidProjection, "projection_manifest[0]", "required", nil},
	}
}

// Every validation failure the engine returns names its subject: the
// field's path in the request and the rule it broke, with the numbers that
// explain it, so a producer in any language can find and fix the value.
func TestErrorsNameTheirSubject(t *testing.T) {
	for _, c := range subjectCases() {
		t.Run(c.name, func(t *testing.T) {
			e := wantCode(t, c.run(t), c.code)
			if e.Details["field"] != c.field || e.Details["rule"] != c.rule {
				t.Fatalf("details %v, want field %q rule %q", e.Details, c.field, c.rule)
			}
			if _, listed := errcode.Rules[c.rule]; !listed {
				t.Errorf("rule %q is not in errcode.Rules", c.rule)
			}
			for k, want := range c.extra {
				if got := e.Details[k]; !reflect.DeepEqual(got, want) {
					t.Errorf("details[%q] = %#v, want %#v (details %v)", k, got, want, e.Details)
				}
			}
		})
	}
}
