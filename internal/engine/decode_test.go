package engine

import (
	"strings"
	"testing"

	"github.com/cairnhq/cairn/events"

	"github.com/cairnhq/cairn/canonical"
	"github.com/cairnhq/cairn/errcode"
)

func TestDecodeRequestRoundTrip(t *testing.T) {
	want := fixtureRequest(t)
	want.Focus = ptr("tests")
	want.Scope = &events.Scope{Kind: "project", ID: "cairn"}
	want.Harvest = ptr(false)
	want.Accounting = events.Accounting{Method: events.MethodLocalTokenizer, ProfileHash: ptr(hashA), ReportedInputTokens: 7,
		CategoryBytes: map[string]int64{"system": 3}}
	data := fixtureJSON(t, want, nil)
	got, err := DecodeRequest(data)
	if err != nil {
		t.Fatal(err)
	}
	again := fixtureJSON(t, got, nil)
	if string(again) != string(data) {
		t.Fatalf("round trip differs:\n%s\n%s", data, again)
	}
	if got.EffectiveScope().Kind != "project" || got.HarvestEnabled() {
		t.Fatalf("scope %+v harvest %v", got.EffectiveScope(), got.HarvestEnabled())
	}
	// Integers stay integers: a policy count given as 8000.0 is rejected.
	_, err = DecodeRequest(fixtureJSON(t, want, func(m map[string]any) {
		m["policy"] = map[string]any{"recent_tail_min_tokens": canonicalNumber("8000.0")}
	}))
	wantCode(t, err, errcode.InvalidPolicy)
	// ...while the policy version may be 1.0.
	if _, err = DecodeRequest(fixtureJSON(t, want, func(m map[string]any) {
		m["policy"] = map[string]any{"version": canonicalNumber("1.0")}
	})); err != nil {
		t.Fatal(err)
	}
}

func TestDecodeRequestDefaults(t *testing.T) {
	req := fixtureRequest(t)
	data := fixtureJSON(t, req, func(m map[string]any) {
		m["policy"] = map[string]any{}
		for _, k := range []string{"anti_thrash", "structural_pressure", "focus", "previous_semantic", "parent_checkpoint_id", "requested_max_output_tokens", "active_input_event_ids"} {
			delete(m, k)
		}
	})
	got, err := DecodeRequest(data)
	if err != nil {
		t.Fatal(err)
	}
	if got.Policy != events.DefaultPolicy() || got.EffectiveScope() != (events.Scope{Kind: "thread", ID: "thread-1"}) || !got.HarvestEnabled() || got.Render != "" {
		t.Fatalf("defaults %+v", got)
	}
	// An absent or null policy is every default too.
	for _, policy := range []any{nil, "absent"} {
		data := fixtureJSON(t, req, func(m map[string]any) {
			if policy == nil {
				m["policy"] = nil
			} else {
				delete(m, "policy")
			}
		})
		if got, err := DecodeRequest(data); err != nil || got.Policy != events.DefaultPolicy() {
			t.Fatalf("policy %v: %v, %+v", policy, err, got)
		}
	}
}

func TestDecodeRequestErrors(t *testing.T) {
	req := fixtureRequest(t)
	set := func(key string, v any) func(map[string]any) { return func(m map[string]any) { m[key] = v } }
	drop := func(key string) func(map[string]any) { return func(m map[string]any) { delete(m, key) } }
	eventEdit := func(i int, key string, v any) func(map[string]any) {
		return func(m map[string]any) { m["events"].([]any)[i].(map[string]any)[key] = v }
	}
	cases := []struct {
		name    string
		edit    func(map[string]any)
		code    string
		message string
	}{
		{"missing v", drop("v"), errcode.UnsupportedVersion, "unsupported request version"},
		{"v 2", set("v", int64(2)), errcode.UnsupportedVersion, "unsupported request version"},
		{"unknown field", set("colour", "red"), errcode.InvalidRequest, "compaction request has unknown fields"},
		{"missing field", drop("thread_id"), errcode.InvalidRequest, "required compaction request fields are missing"},
		{"no events", drop("events"), errcode.InvalidRequest, "required compaction request fields are missing"},
		{"events and events_object", set("events_object", "lane-1"), errcode.InvalidRequest, "compaction request is invalid"},
		{"empty id", set("run_id", ""), errcode.InvalidRequest, "compaction request identities are invalid"},
		{"numeric id", set("run_id", int64(4)), errcode.InvalidRequest, "compaction request identities are invalid"},
		{"long parent", set("parent_checkpoint_id", strings.Repeat("p", 201)), errcode.InvalidRequest, "compaction request identities are invalid"},
		{"trigger", set("trigger", "sometimes"), errcode.InvalidRequest, "compaction trigger is invalid"},
		{"destination", set("destination_identity_hash", strings.ToUpper(hashA)), errcode.InvalidRequest, "destination identity hash is invalid"},
		{"policy unknown", set("policy", map[string]any{"speed": int64(1)}), errcode.InvalidPolicy, "unknown policy fields"},
		{"policy ratios", set("policy", map[string]any{"prune_release_ratio": 0.9}), errcode.InvalidPolicy, "compaction ratios are invalid"},
		{"policy ranges", set("policy", map[string]any{"recent_tail_max_tokens": int64(10)}), errcode.InvalidPolicy, "compaction ranges are invalid"},
		{"policy counts", set("policy", map[string]any{"maximum_schema_repairs": int64(0)}), errcode.InvalidPolicy, "compaction limits must be positive integers"},
		{"policy version", set("policy", map[string]any{"version": int64(2)}), errcode.InvalidPolicy, "compaction policy is invalid"},
		{"auto disabled", func(m map[string]any) {
			m["trigger"] = "auto"
			m["policy"] = map[string]any{"enabled": false}
		}, errcode.InvalidRequest, "compaction request is invalid"},
		{"focus too long", set("focus", strings.Repeat("f", 2001)), errcode.InvalidRequest, "compaction request is invalid"},
		{"rehydration not a map", set("rehydration_state", []any{}), errcode.InvalidRehydrationState, "rehydration state must be a map"},
		{"previous semantic", set("previous_semantic", map[string]any{"version": int64(1)}), errcode.InvalidSemantic, ""},
		{"state", set("anti_thrash", map[string]any{"accounting_method": "untrusted_counter", "accounting_version": int64(1)}), errcode.InvalidState, ""},
		{"new tokens", set("new_tokens_since_compaction", int64(-1)), errcode.InvalidState, "new-token count must be non-negative"},
		{"events empty", set("events", []any{}), errcode.InvalidRequest, "compaction event sequence is empty or oversized"},
		{"event unknown field", eventEdit(0, "mood", "happy"), errcode.InvalidEvent, "unknown event fields"},
		{"event role", eventEdit(0, "role", "system"), errcode.InvalidEvent, "event role is invalid"},
		{"event chat seq", eventEdit(0, "chat_seq", int64(0)), errcode.InvalidEvent, "chat sequence is invalid"},
		{"event content hash", eventEdit(0, "content", "changed"), errcode.InvalidEvent, "content hash does not match"},
		{"event provenance hash", eventEdit(0, "provenance", "changed"), errcode.InvalidEvent, "provenance hash does not match"},
		{"event flags", eventEdit(0, "protected", "yes"), errcode.InvalidEvent, "event flags are invalid"},
		{"event namespace", eventEdit(0, "checkpoint_namespace", "other"), errcode.InvalidRequest, "compaction events are not one ordered lane"},
		{"chat seq decreases", eventEdit(2, "chat_seq", int64(1)), errcode.InvalidRequest, "compaction events are not one ordered lane"},
		{"active ids", set("active_input_event_ids", []any{"nope"}), errcode.InvalidRequest, "active input event IDs are invalid"},
		{"active duplicates", set("active_input_event_ids", []any{uuid7(6), uuid7(6)}), errcode.InvalidRequest, "active input event IDs are invalid"},
		{"render", set("render", "mustache"), errcode.InvalidRequest, "compaction request is invalid"},
		{"rendered bytes", set("rendered_request_bytes", int64(-1)), errcode.InvalidRequest, "compaction request is invalid"},
		{"output tokens", set("requested_max_output_tokens", "many"), errcode.InvalidRequest, "compaction request is invalid"},
		{"structural pressure", set("structural_pressure", "yes"), errcode.InvalidRequest, "compaction request is invalid"},
		{"deadline", set("deadline_at", "tomorrow"), errcode.InvalidRequest, "compaction request is invalid"},
		{"scope", set("scope", map[string]any{"kind": "thread"}), errcode.InvalidRequest, "compaction request is invalid"},
		{"accounting", set("accounting", "lots"), errcode.InvalidRequest, "compaction request is invalid"},
		{"accounting categories", set("accounting", map[string]any{"category_bytes": map[string]any{"x": int64(-1)}}), errcode.InvalidContextBudget, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeRequest(fixtureJSON(t, req, tc.edit))
			e := wantCode(t, err, tc.code)
			if tc.message != "" && e.Message != tc.message {
				t.Fatalf("message %q, want %q", e.Message, tc.message)
			}
		})
	}
}

func TestDecodeRequestRejectsMalformedJSON(t *testing.T) {
	for name, data := range map[string]string{
		"not JSON":       `{"v":1`,
		"not an object":  `[1]`,
		"duplicate keys": `{"v":1,"v":1}`,
		"empty":          ``,
	} {
		_, err := DecodeRequest([]byte(data))
		wantCode(t, err, errcode.InvalidRequest)
		_ = name
	}
}

func TestChatSeqMustNotDecrease(t *testing.T) {
	req := fixtureRequest(t)
	req.Events[2] = event(t, 3, events.RoleUser, "continue with tests", func(e *events.InputEvent) { e.ChatSeq = 1 })
	e := wantCode(t, req.Validate(), errcode.InvalidRequest)
	if e.Message != "compaction events are not one ordered lane" {
		t.Fatalf("message %q", e.Message)
	}
}

func TestEventsObjectIsValidatedOnceLoaded(t *testing.T) {
	full := fixtureRequest(t)
	data := fixtureJSON(t, full, func(m map[string]any) {
		delete(m, "events")
		m["events_object"] = "lanes/agent-1/root/100"
	})
	req, err := DecodeRequest(data)
	if err != nil || req.Events != nil || req.EventsObject != "lanes/agent-1/root/100" {
		t.Fatalf("%+v %v", req, err)
	}
	wantCode(t, req.Validate(), errcode.InvalidRequest)
	eventsJSON, _ := canonical.Encode(eventList(full.Events))
	laneEvents, err := DecodeEvents(eventsJSON)
	if err != nil {
		t.Fatal(err)
	}
	req.Events = laneEvents
	if err := req.Validate(); err != nil {
		t.Fatal(err)
	}
	mustCompact(t, req, validSummarizer())
	_, err = DecodeEvents([]byte(`[]`))
	wantCode(t, err, errcode.InvalidRequest)
	_, err = DecodeEvents([]byte(`[{"event_id":"x"}]`))
	wantCode(t, err, errcode.InvalidEvent)
}

// canonicalNumber is a JSON number literal as the decoder produces it.
func canonicalNumber(s string) any {
	v, err := canonical.Decode([]byte(s))
	if err != nil {
		panic(err)
	}
	return v
}
