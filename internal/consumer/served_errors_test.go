package consumer

import (
	"reflect"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/internal/engine"
)

// A request whose envelope the pipeline cannot read fails on the served
// path with the error the engine gives offline for the same body (what
// processor compact prints), and that error names its subject: the field
// and the rule, or the missing fields.
func TestEnvelopeErrorsNameTheirSubject(t *testing.T) {
	e := singleEnv(t)
	e.realEngine = true
	e.start(t, testConfig(), nil, nil)
	with := func(id string, change func(m map[string]any)) []byte {
		var m map[string]any
		mustJSON(t, engineBody(t, id, id, "", 10, nil), &m)
		change(m)
		return mustMarshal(t, m)
	}
	set := func(key string, v any) func(map[string]any) { return func(m map[string]any) { m[key] = v } }
	drop := func(key string) func(map[string]any) { return func(m map[string]any) { delete(m, key) } }
	cases := []struct {
		name string
		body []byte
		code string
		want map[string]any // entries the details must hold
	}{
		{"v is a string", with("se-v", set("v", "1")), errcode.UnsupportedVersion,
			map[string]any{"field": "v", "supported": []any{1.0}}},
		{"v is missing", with("se-nov", drop("v")), errcode.UnsupportedVersion,
			map[string]any{"field": "v", "supported": []any{1.0}}},
		{"thread_id is a number", with("se-thread", set("thread_id", 5)), errcode.InvalidRequest,
			map[string]any{"field": "thread_id", "rule": "type", "expected": "string"}},
		{"scope is a string", with("se-scope", set("scope", "x")), errcode.InvalidRequest,
			map[string]any{"field": "scope", "rule": "type"}},
		{"harvest is a string", with("se-harvest", set("harvest", "yes")), errcode.InvalidRequest,
			map[string]any{"field": "harvest", "rule": "type"}},
		{"deadline_at is not RFC 3339", with("se-deadline", set("deadline_at", "tomorrow")), errcode.InvalidRequest,
			map[string]any{"field": "deadline_at"}},
		{"events and events_object", with("se-both", set("events_object", "o")), errcode.InvalidRequest,
			map[string]any{"field": "events_object", "rule": "exclusive"}},
		{"neither events nor events_object", with("se-neither", drop("events")), errcode.InvalidRequest,
			map[string]any{"missing_fields": []any{"events"}}},
		{"not an object", []byte(`[1,2]`), errcode.InvalidRequest,
			map[string]any{"field": "$", "rule": "type", "expected": "object"}},
		{"not JSON", []byte(`{"v":1,`), errcode.InvalidRequest,
			map[string]any{"field": "$"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ack := publishRaw(t, e.js, c.body, "")
			ev := awaitFailedSeq(t, e, ack.Sequence)
			errObj, _ := ev.Body["error"].(map[string]any)
			details := errorDetails(ev.event)
			if ev.code() != c.code {
				t.Fatalf("code %q, want %q: %v", ev.code(), c.code, errObj)
			}
			for k, v := range c.want {
				if !reflect.DeepEqual(details[k], v) {
					t.Fatalf("details[%q] = %v, want %v (details %v)", k, details[k], v, details)
				}
			}
			_, offline := engine.DecodeRequest(c.body)
			oe := errcode.As(offline)
			if oe == nil || oe.Code != ev.code() || oe.Message != errObj["message"] || !reflect.DeepEqual(asJSON(t, oe.Details), details) {
				t.Fatalf("served %v\noffline %v", errObj, offline)
			}
		})
	}
}

// asJSON is v as a failed event carries it, decoded.
func asJSON(t *testing.T, v any) map[string]any {
	t.Helper()
	var out map[string]any
	mustJSON(t, mustMarshal(t, v), &out)
	if out == nil {
		out = map[string]any{}
	}
	return out
}

// errorDetails is the details object of a failed event's error.
func errorDetails(ev event) map[string]any {
	errObj, _ := ev.Body["error"].(map[string]any)
	d, _ := errObj["details"].(map[string]any)
	return d
}

// Every failure the processor itself decides (not the engine, whose codes
// TestErrorsNameTheirSubject in package engine covers) names its subject in
// the failed event's details, as subjects.md's error table says.
func TestServedFailuresNameTheirSubject(t *testing.T) {
	e := singleEnv(t)
	e.realEngine = true
	e.start(t, testConfig(), nil, nil)
	e.publish(t, engineBody(t, "sd-first", "sd", "", 40, nil), "sd-first")
	if ev := onlyEvent(t, e.awaitOutcome(t, "sd-first")); ev.str("kind") != "activated" {
		t.Fatalf("first request: %v", ev.Body)
	}
	with := func(id, lane string, change func(m map[string]any)) []byte {
		var m map[string]any
		mustJSON(t, engineBody(t, id, lane, "", 40, nil), &m)
		change(m)
		return mustMarshal(t, m)
	}
	cases := []struct {
		id   string
		body []byte
		code string
		want map[string]any // details entries; nil values only need to be present
	}{
		{"sd-stale", with("sd-stale", "sd", func(m map[string]any) { m["parent_checkpoint_id"] = "sd-nope" }),
			errcode.StaleHead, map[string]any{"parent_checkpoint_id": "sd-nope", "active_checkpoint_id": "sd-first"}},
		{"sd-object", with("sd-object", "sd-o", func(m map[string]any) { delete(m, "events"); m["events_object"] = "sd-absent" }),
			errcode.EventsObjectMissing, map[string]any{"events_object": "sd-absent", "cause": nil}},
		{"sd-deadline", with("sd-deadline", "sd-d", func(m map[string]any) { m["deadline_at"] = "2001-01-01T00:00:00Z" }),
			errcode.DeadlineExceeded, map[string]any{"deadline_at": "2001-01-01T00:00:00Z"}},
		{"sd-rehydration", with("sd-rehydration", "sd-r", func(m map[string]any) {
			m["rehydration_state"] = map[string]any{"blob": strings.Repeat("x", 600<<10)}
		}), errcode.PayloadTooLarge, map[string]any{"field": "rehydration_state", "rule": nil, "bytes": nil, "limit": nil}},
		{"sd-nothing", engineBody(t, "sd-nothing", "sd-n", "", 2, nil),
			errcode.NothingToCompact, map[string]any{"recent_tail_tokens": nil, "recent_tail_min_tokens": nil, "tail_events": nil}},
	}
	for _, c := range cases {
		e.publish(t, c.body, c.id)
		ev := onlyEvent(t, e.awaitOutcome(t, c.id))
		if ev.code() != c.code {
			t.Fatalf("%s: failed with %q, want %q (%v)", c.id, ev.code(), c.code, ev.Body["error"])
		}
		d := errorDetails(ev)
		for k, v := range c.want {
			got, ok := d[k]
			if !ok || (v != nil && got != v) {
				t.Errorf("%s: details[%s] = %v, want %v (details %v)", c.id, k, got, v, d)
			}
		}
	}
}
