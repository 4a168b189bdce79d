package consumer

import (
	"bytes"
	"encoding/json"
	"reflect"
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

// envelopeBodies are requests whose events member sits in different places
// and shapes, and bodies the fast path must hand back to encoding/json.
var envelopeBodies = []string{
	`{"v":1,"request_id":"r","run_agent_id":"a","checkpoint_namespace":"n","events":[{"content":"x \"}] ,"}]}`,
	`{"events":[{"a":[1,{"b":"]"}]},2,"s",null],"v":1,"request_id":"r","run_agent_id":"a","checkpoint_namespace":"n","harvest":false}`,
	" {\n \"v\" : 1 , \"events\" :\t[ {} ] ,\"scope\":{\"kind\":\"user\",\"id\":\"u\"},\"request_id\":\"r\"}\n",
	`{"v":1,"request_id":"r","previous_semantic":{"events":[1]},"events":[{}],"new_tokens_since_compaction":12}`,
	`{"v":1,"request_id":"r","events_object":"o","deadline_at":"2026-01-01T00:00:00Z"}`,
	`{"v":1,"request_id":"r","events":"not an array"}`,
	`{"v":1,"request_id":"r","events":7,"run_agent_id":"a"}`,
	`{"v":1,"request_id":"r","Events":[{}],"events":[1]}`,            // case variant: encoding/json decides
	`{"v":1,"request_id":"r","ev\u0065nts":[{}],"run_agent_id":"a"}`, // escaped key: encoding/json decides
	`{"v":1,"request_id":5,"events":[{}]}`,                           // a type error stays encoding/json's
	`{"v":1,"request_id":"r","events":[{}],"unknown":{"x":[1,2,{"y":"}"}]}}`,
	`{"v":1,"request_id":"r"}`,
	`[]`,
	`{"v":1,"request_id":"r","events":[{}],"events":[{}]}`, // duplicate: not strict JSON
	// Backslash runs before quotes: odd escapes the quote, even does not.
	`{"events":[{"c":"a\\"},"\\\\",{"d":"\\\"}\\\\"}],"v":1,"request_id":"r","run_agent_id":"a"}`,
	`{"v":1,"events":["\\\\\\\"],\\\\"],"request_id":"r","run_agent_id":"a","checkpoint_namespace":"n"}`,
}

// The fast path (canonical decode plus a cut events member) reads exactly
// what encoding/json reads from the whole body.
func TestEnvelopeFastPathMatchesEncodingJSON(t *testing.T) {
	for _, body := range envelopeBodies {
		checkEnvelopePaths(t, []byte(body))
	}
}

func checkEnvelopePaths(t *testing.T, body []byte) {
	t.Helper()
	var fast, slow envelope
	ferr := fast.unmarshal(body)
	serr := json.Unmarshal(body, &slow)
	if (ferr == nil) != (serr == nil) {
		t.Fatalf("%s: fast error %v, encoding/json error %v", body, ferr, serr)
	}
	if ferr != nil {
		return
	}
	fast.decoded = nil
	if !reflect.DeepEqual(normalizeEnvelope(fast), normalizeEnvelope(slow)) {
		t.Fatalf("%s:\nfast %+v\njson %+v", body, fast, slow)
	}
}

// normalizeEnvelope drops what only differs in spelling: the raw members'
// surrounding space.
func normalizeEnvelope(e envelope) envelope {
	e.Events = bytes.TrimSpace(e.Events)
	e.PreviousSemantic = bytes.TrimSpace(e.PreviousSemantic)
	return e
}

func FuzzEnvelopeFastPath(f *testing.F) {
	for _, b := range envelopeBodies {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkEnvelopePaths(t, b)
	})
}

func TestEnvelopeKeepsDecodedBody(t *testing.T) {
	e, err := decodeEnvelope([]byte(`{"v":1,"request_id":"r","run_agent_id":"a","checkpoint_namespace":"n","events":[{},{}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if events, _ := e.decoded["events"].([]any); len(events) != 2 {
		t.Fatalf("decoded body %v", e.decoded)
	}
	if m := e.takeDecoded(); m == nil || e.decoded != nil {
		t.Fatal("takeDecoded did not hand the body on once")
	}
}

// skipValue must end a string only at an unescaped quote: one after an odd
// run of backslashes is part of the string. (The envelope tests cannot see a
// wrong cut: its rest fails to decode and the slow path takes over.)
func TestSkipValueBackslashRuns(t *testing.T) {
	for _, value := range []string{
		`"a\\"`,
		`"\\\\"`,
		`"\"}\\\\"`,
		`"x\\\"],\\"`,
		`["\\\"]",{"k":"\\\\\\\"}"}]`,
		`{"c":"a\\","d":"\\\"}\\\\"}`,
	} {
		body := value + `,"next":1}`
		if got := skipValue([]byte(body), 0); got != len(value) {
			t.Errorf("skipValue(%s) = %d, want %d", body, got, len(value))
		}
	}
}
