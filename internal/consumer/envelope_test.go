package consumer

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/errcode"
)

func TestDecodeEnvelope(t *testing.T) {
	cases := []struct {
		name, body, code string
	}{
		{"ok", `{"v":1,"request_id":"r","run_agent_id":"a","checkpoint_namespace":"n","events":[{}]}`, ""},
		{"ok claim check", `{"v":1,"request_id":"r","run_agent_id":"a","checkpoint_namespace":"n","events_object":"o"}`, ""},
		{"not json", `{`, errcode.InvalidRequest},
		{"array", `[]`, errcode.InvalidRequest},
		{"no version", `{"request_id":"r"}`, errcode.UnsupportedVersion},
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

// envelopeBodies are requests whose members sit in different places and
// shapes, and bodies only encoding/json reads.
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
	`{"v":1,"request_id":5,"events":[{}]}`,                           // a type error names its field either way
	`{"v":1.5,"scope":{"kind":3}}`, `{"harvest":"yes"}`, `{"scope":"x"}`, `{"scope":{"kind":"k","id":[]}}`,
	`{"v":1,"request_id":"r","events":[{}],"unknown":{"x":[1,2,{"y":"}"}]}}`,
	`{"v":1,"request_id":"r"}`,
	`[]`,
	`{"v":1,"request_id":"r","events":[{}],"events":[{}]}`, // duplicate: not strict JSON
	// Backslash runs before quotes: odd escapes the quote, even does not.
	`{"events":[{"c":"a\\"},"\\\\",{"d":"\\\"}\\\\"}],"v":1,"request_id":"r","run_agent_id":"a"}`,
	`{"v":1,"events":["\\\\\\\"],\\\\"],"request_id":"r","run_agent_id":"a","checkpoint_namespace":"n"}`,
}

// The envelope read from the canonical decode of a body is what
// encoding/json reads from it.
func TestEnvelopeFromMapMatchesEncodingJSON(t *testing.T) {
	for _, body := range envelopeBodies {
		checkEnvelopePaths(t, []byte(body))
	}
}

func checkEnvelopePaths(t *testing.T, body []byte) {
	t.Helper()
	m, strict := decodeStrict(body)
	if !strict || !exactKeys(m) {
		return // encoding/json reads such a body alone
	}
	var fromMap, fromJSON envelope
	merr := fromMap.fromMap(m)
	jerr := fromJSON.fromJSON(body)
	if (merr == nil) != (jerr == nil) {
		t.Fatalf("%s: map error %v, encoding/json error %v", body, merr, jerr)
	}
	if merr != nil {
		return
	}
	if !reflect.DeepEqual(normalizeEnvelope(fromMap), normalizeEnvelope(fromJSON)) {
		t.Fatalf("%s:\nmap  %+v\njson %+v", body, fromMap, fromJSON)
	}
}

// exactKeys reports whether every top-level key of m is spelled as the
// envelope's json tags or not like any of them: encoding/json also matches
// keys that differ only in case, the engine refuses them as unknown.
func exactKeys(m map[string]any) bool {
	fields := reflect.VisibleFields(reflect.TypeFor[envelope]()) // with engine.Correlation's
	for k := range m {
		for _, f := range fields {
			tag := f.Tag.Get("json")
			if tag != "" && tag != k && strings.EqualFold(tag, k) {
				return false
			}
		}
	}
	return true
}

// normalizeEnvelope drops what only differs in representation: the
// decoded members' number types (json.Number, float64).
func normalizeEnvelope(e envelope) envelope {
	canon := func(v any) any {
		if v == nil {
			return nil
		}
		b, _ := json.Marshal(v)
		var out any
		_ = json.Unmarshal(b, &out)
		return out
	}
	e.Events, e.PreviousSemantic, e.RehydrationState = canon(e.Events), canon(e.PreviousSemantic), canon(e.RehydrationState)
	return e
}

func FuzzEnvelopeFromMap(f *testing.F) {
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

// fromMap reads the envelope by its fields' json tags, embedded
// events.Correlation's included, so that a field added there needs no edit
// of the envelope; null is absent, and a member of the wrong type is a type
// error naming it.
func TestEnvelopeFromMapByTag(t *testing.T) {
	var e envelope
	if err := e.fromMap(map[string]any{"v": json.Number("1"), "request_id": "r", "thread_id": "t", "harvest": false, "parent_checkpoint_id": nil}); err != nil {
		t.Fatal(err)
	}
	if *e.V != 1 || e.RequestID != "r" || e.ThreadID != "t" || e.Harvest == nil || *e.Harvest || e.ParentCheckpointID != nil {
		t.Fatalf("read %+v", e)
	}
	for _, m := range []map[string]any{{"thread_id": json.Number("1")}, {"harvest": "yes"}, {"scope": "team"}} {
		err := (&envelope{}).fromMap(m)
		if e, _ := err.(*errcode.Error); e == nil || e.Details["rule"] != "type" {
			t.Errorf("%v: err = %v, want a type error", m, err)
		}
	}
	if err := (&envelope{}).fromMap(map[string]any{"v": "1"}); errcode.Code(err) != errcode.UnsupportedVersion {
		t.Errorf(`v "1": err = %v, want unsupported_version`, err)
	}
}
