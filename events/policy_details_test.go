package events

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/jsonwire"
)

// Every policy error names the field as its path in the request and the
// rule it broke, so the producer sees which value to change.
func TestPolicyErrorsNameTheField(t *testing.T) {
	cases := []struct {
		policy, field, rule, expected string
	}{
		{`{"trigger_ratio":1.5}`, "policy.trigger_ratio", "range", ratioBounds},
		{`{"trigger_ratio":"high"}`, "policy.trigger_ratio", "type", ratioBounds},
		{`{"prune_release_ratio":0.9}`, "policy.prune_release_ratio", "order", "prune_release_ratio < trigger_ratio"},
		{`{"post_compaction_target_ratio":0.8}`, "policy.post_compaction_target_ratio", "order", "post_compaction_target_ratio <= prune_release_ratio"},
		{`{"recent_tail_max_tokens":10}`, "policy.recent_tail_max_tokens", "order", "recent_tail_max_tokens >= recent_tail_min_tokens"},
		{`{"semantic_max_bytes":0}`, "policy.semantic_max_bytes", "range", positiveBounds},
		{`{"provider_timeout_ms":1.5}`, "policy.provider_timeout_ms", "type", positiveBounds},
		{`{"mode":"turbo"}`, "policy.mode", "enum", `"portable" or "native"`},
		{`{"version":2}`, "policy.version", "enum", "1"},
		{`{"enabled":"yes"}`, "policy.enabled", "type", "a boolean"},
	}
	for _, c := range cases {
		var p Policy
		err := json.Unmarshal([]byte(c.policy), &p)
		e := errcode.As(err)
		if e == nil || e.Code != errcode.InvalidPolicy {
			t.Errorf("%s: err = %v, want %s", c.policy, err, errcode.InvalidPolicy)
			continue
		}
		if e.Details["field"] != c.field || e.Details["rule"] != c.rule || e.Details["expected"] != c.expected {
			t.Errorf("%s: details = %v, want field %s rule %q expected %q", c.policy, e.Details, c.field, c.rule, c.expected)
		}
	}
}

func TestPolicyErrorEchoIsBounded(t *testing.T) {
	var p Policy
	err := json.Unmarshal([]byte(`{"mode":"`+strings.Repeat("<", 300000)+`"}`), &p)
	e := errcode.As(err)
	if e == nil {
		t.Fatalf("err = %v", err)
	}
	if v, _ := e.Details["value"].(string); len(v) > jsonwire.MaxEchoBytes+len("…") {
		t.Fatalf("echoed value of %d bytes", len(v))
	}
}
