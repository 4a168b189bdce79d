package consumer

import (
	"strings"
	"testing"

	"github.com/cairnhq/cairn/internal/errcode"
)

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
		{"sd-version", with("sd-version", "sd-v", func(m map[string]any) { m["v"] = 2 }),
			errcode.UnsupportedVersion, map[string]any{"field": "v", "supported": nil}},
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
