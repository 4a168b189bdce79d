package consumer

import (
	"testing"

	"github.com/cairnhq/cairn/internal/errcode"
)

func TestDecodeEnvelope(t *testing.T) {
	cases := []struct {
		name, body, code string
	}{
		{"ok", `{"v":1,"request_id":"r","run_agent_id":"a","checkpoint_namespace":"n","events":[{}]}`, ""},
		{"ok claim check", `{"v":1,"request_id":"r","run_agent_id":"a","checkpoint_namespace":"n","events_object":"o"}`, ""},
		{"not json", `{`, errcode.InvalidRequest},
		{"array", `[]`, errcode.InvalidRequest},
		{"no version", `{"request_id":"r"}`, errcode.InvalidRequest},
		{"version 2", `{"v":2,"request_id":"r"}`, errcode.UnsupportedVersion},
		{"no request id", `{"v":1,"run_agent_id":"a","checkpoint_namespace":"n","events":[{}]}`, errcode.InvalidRequest},
		{"no lane", `{"v":1,"request_id":"r","events":[{}]}`, errcode.InvalidRequest},
		{"both event sources", `{"v":1,"request_id":"r","run_agent_id":"a","checkpoint_namespace":"n","events":[{}],"events_object":"o"}`, errcode.InvalidRequest},
		{"no events", `{"v":1,"request_id":"r","run_agent_id":"a","checkpoint_namespace":"n","events":null}`, errcode.InvalidRequest},
		{"bad deadline", `{"v":1,"request_id":"r","run_agent_id":"a","checkpoint_namespace":"n","events":[{}],"deadline_at":"soon"}`, errcode.InvalidRequest},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := decodeEnvelope([]byte(c.body))
			if got := errcode.Code(err); got != c.code {
				t.Fatalf("code %q, want %q (%v)", got, c.code, err)
			}
		})
	}
}

func FuzzDecodeEnvelope(f *testing.F) {
	f.Add([]byte(`{"v":1,"request_id":"r","run_agent_id":"a","checkpoint_namespace":"n","events":[{}]}`))
	f.Add([]byte(`{"v":1,"deadline_at":"2026-01-01T00:00:00Z"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := decodeEnvelope(b)
		if err != nil && errcode.As(err) == nil {
			t.Fatalf("untyped error %v", err)
		}
		if err == nil && (e.RequestID == "" || e.RunAgentID == "") {
			t.Fatal("accepted an envelope without identities")
		}
	})
}
