package semantic

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/canonical"
)

func TestParseBase(t *testing.T) {
	s := base(t)
	if s.Version != 1 || len(s.Objective) != 1 || s.UserRequests[0].ExactExcerpt == nil ||
		s.Decisions[0].Rationale != nil || s.Coverage != (Coverage{1, 4}) ||
		len(s.Progress.Pending[0].VerificationEventIDs) != 0 {
		t.Fatalf("parsed = %+v", s)
	}
	// The typed value re-encodes to exactly the canonical form of its input.
	want, err := canonical.Encode(baseMap(t))
	if err != nil {
		t.Fatal(err)
	}
	got, err := canonical.Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("re-encoded\n%s\nwant\n%s", got, want)
	}
	h, err := s.Hash()
	if err != nil || h != canonical.HashBytes(want) {
		t.Fatalf("Hash = %s, %v; want %s", h, err, canonical.HashBytes(want))
	}
}

func TestParseShapeErrors(t *testing.T) {
	long := strings.Repeat("x", 4001)
	tests := []struct {
		name   string
		mutate func(t *testing.T, m map[string]any)
		want   string // "" means the value is valid
	}{
		{"unknown field", func(t *testing.T, m map[string]any) { m["extra"] = 1 }, msgUnknownFields},
		{"missing field", func(t *testing.T, m map[string]any) { delete(m, "coverage") }, msgMissingFields},
		{"unknown reported before missing", func(t *testing.T, m map[string]any) { delete(m, "errors"); m["x"] = 1 }, msgUnknownFields},
		{"version 2", func(t *testing.T, m map[string]any) { m["version"] = json.Number("2") }, msgVersion},
		{"version as string", func(t *testing.T, m map[string]any) { m["version"] = "1" }, msgVersion},
		{"version null", func(t *testing.T, m map[string]any) { m["version"] = nil }, msgVersion},
		{"version 1.0 accepted", func(t *testing.T, m map[string]any) { m["version"] = json.Number("1.0") }, ""},
		{"version Go int accepted", func(t *testing.T, m map[string]any) { m["version"] = 1 }, ""},
		{"version Go float accepted", func(t *testing.T, m map[string]any) { m["version"] = 1.0 }, ""},
		{"objective not a list", func(t *testing.T, m map[string]any) { m["objective"] = map[string]any{} }, msgCollection},
		{"objective null", func(t *testing.T, m map[string]any) { m["objective"] = nil }, msgCollection},
		{"objective 9 entries", func(t *testing.T, m map[string]any) {
			m["objective"] = repeat(9, func(i int) any { return sourcedEntry(fmt.Sprint("goal ", i)) })
		}, msgCollection},
		{"objective 8 entries", func(t *testing.T, m map[string]any) {
			m["objective"] = repeat(8, func(i int) any { return sourcedEntry(fmt.Sprint("goal ", i)) })
		}, ""},
		{"entry not an object", func(t *testing.T, m map[string]any) { m["objective"] = []any{"text"} }, msgObject},
		{"entry extra key", func(t *testing.T, m map[string]any) { entry(t, m, "objective.0")["why"] = "x" }, msgUnexpected},
		{"entry missing key", func(t *testing.T, m map[string]any) { delete(entry(t, m, "objective.0"), "text") }, msgUnexpected},
		{"text empty", func(t *testing.T, m map[string]any) { entry(t, m, "objective.0")["text"] = "" }, msgText},
		{"text 4001 bytes", func(t *testing.T, m map[string]any) { entry(t, m, "objective.0")["text"] = long }, msgText},
		{"text 4000 bytes", func(t *testing.T, m map[string]any) { entry(t, m, "objective.0")["text"] = long[:4000] }, ""},
		{"text 4000 bytes of 2-byte characters over", func(t *testing.T, m map[string]any) {
			entry(t, m, "objective.0")["text"] = strings.Repeat("é", 2001)
		}, msgText},
		{"text invalid UTF-8", func(t *testing.T, m map[string]any) { entry(t, m, "objective.0")["text"] = "a\xffb" }, msgText},
		{"text number", func(t *testing.T, m map[string]any) { entry(t, m, "objective.0")["text"] = json.Number("1") }, msgText},
		{"ids empty", func(t *testing.T, m map[string]any) { entry(t, m, "objective.0")["source_event_ids"] = []any{} }, msgIDs},
		{"ids not a list", func(t *testing.T, m map[string]any) { entry(t, m, "objective.0")["source_event_ids"] = evUser1 }, msgIDs},
		{"ids 33", func(t *testing.T, m map[string]any) {
			entry(t, m, "objective.0")["source_event_ids"] = repeat(33, func(i int) any { return fmt.Sprint("e", i) })
		}, msgIDs},
		{"ids 32", func(t *testing.T, m map[string]any) {
			entry(t, m, "objective.0")["source_event_ids"] = repeat(32, func(i int) any { return fmt.Sprint("e", i) })
		}, ""},
		{"ids duplicate", func(t *testing.T, m map[string]any) {
			entry(t, m, "objective.0")["source_event_ids"] = []any{evUser1, evUser1}
		}, msgIDs},
		{"id not a string", func(t *testing.T, m map[string]any) {
			entry(t, m, "objective.0")["source_event_ids"] = []any{json.Number("7")}
		}, msgIDs},
		{"id empty", func(t *testing.T, m map[string]any) { entry(t, m, "objective.0")["source_event_ids"] = []any{""} }, msgIDs},
		{"id 201 bytes", func(t *testing.T, m map[string]any) {
			entry(t, m, "objective.0")["source_event_ids"] = []any{strings.Repeat("a", 201)}
		}, msgIDs},
		{"id 200 bytes, not a UUID", func(t *testing.T, m map[string]any) {
			entry(t, m, "objective.0")["source_event_ids"] = []any{strings.Repeat("a", 200)}
		}, ""},
		{"uuid with wrong version nibble is a valid id", func(t *testing.T, m map[string]any) {
			entry(t, m, "objective.0")["source_event_ids"] = []any{"01890a5d-ac96-474b-bcce-b302099a8057"}
		}, ""},
		{"request id empty", func(t *testing.T, m map[string]any) { entry(t, m, "user_requests.0")["source_event_id"] = "" }, msgUUID},
		{"request id list", func(t *testing.T, m map[string]any) {
			entry(t, m, "user_requests.0")["source_event_id"] = []any{evUser1}
		}, msgUUID},
		{"request status unknown", func(t *testing.T, m map[string]any) { entry(t, m, "user_requests.0")["status"] = "done" }, msgEnum},
		{"request uuid checked before status", func(t *testing.T, m map[string]any) {
			r := entry(t, m, "user_requests.0")
			r["status"], r["source_event_id"] = "done", nil
		}, msgUUID},
		{"request excerpt and omission", func(t *testing.T, m map[string]any) {
			entry(t, m, "user_requests.0")["secret_omission"] = omission("password", strings.Repeat("a", 64))
		}, msgExclusive},
		{"request neither excerpt nor omission", func(t *testing.T, m map[string]any) {
			entry(t, m, "user_requests.0")["exact_excerpt"] = nil
		}, msgText},
		{"request omission only", func(t *testing.T, m map[string]any) {
			r := entry(t, m, "user_requests.0")
			r["exact_excerpt"], r["secret_omission"] = nil, omission("password", strings.Repeat("a", 64))
		}, ""},
		{"omission uppercase hash", func(t *testing.T, m map[string]any) {
			r := entry(t, m, "user_requests.0")
			r["exact_excerpt"], r["secret_omission"] = nil, omission("password", strings.Repeat("A", 64))
		}, msgOmissionHash},
		{"omission short hash", func(t *testing.T, m map[string]any) {
			r := entry(t, m, "user_requests.0")
			r["exact_excerpt"], r["secret_omission"] = nil, omission("password", "abc")
		}, msgOmissionHash},
		{"omission class 65 bytes", func(t *testing.T, m map[string]any) {
			r := entry(t, m, "user_requests.0")
			r["exact_excerpt"], r["secret_omission"] = nil, omission(strings.Repeat("c", 65), strings.Repeat("a", 64))
		}, msgText},
		{"omission extra key", func(t *testing.T, m map[string]any) {
			o := omission("password", strings.Repeat("a", 64))
			o["span"] = "x"
			r := entry(t, m, "user_requests.0")
			r["exact_excerpt"], r["secret_omission"] = nil, o
		}, msgUnexpected},
		{"omission not an object", func(t *testing.T, m map[string]any) {
			r := entry(t, m, "user_requests.0")
			r["exact_excerpt"], r["secret_omission"] = nil, "password"
		}, msgObject},
		{"user_requests 65", func(t *testing.T, m map[string]any) {
			m["user_requests"] = repeat(65, func(i int) any { return path(t, baseMap(t), "user_requests.0") })
		}, msgCollection},
		{"constraints 65", func(t *testing.T, m map[string]any) {
			m["constraints"] = repeat(65, func(i int) any { return sourcedEntry(fmt.Sprint(i)) })
		}, msgCollection},
		{"decision rationale empty", func(t *testing.T, m map[string]any) { entry(t, m, "decisions.0")["rationale"] = "" }, msgText},
		{"decision rationale text", func(t *testing.T, m map[string]any) { entry(t, m, "decisions.0")["rationale"] = "simpler" }, ""},
		{"decisions 65", func(t *testing.T, m map[string]any) {
			m["decisions"] = repeat(65, func(i int) any { return path(t, baseMap(t), "decisions.0") })
		}, msgCollection},
		{"progress not an object", func(t *testing.T, m map[string]any) { m["progress"] = []any{} }, msgObject},
		{"progress missing list", func(t *testing.T, m map[string]any) { delete(entry(t, m, "progress"), "blocked") }, msgUnexpected},
		{"progress completed 129", func(t *testing.T, m map[string]any) {
			entry(t, m, "progress")["completed"] = repeat(129, func(i int) any { return progressEntry(fmt.Sprint(i)) })
		}, msgCollection},
		{"progress completed 128", func(t *testing.T, m map[string]any) {
			entry(t, m, "progress")["completed"] = repeat(128, func(i int) any { return progressEntry(fmt.Sprint(i)) })
		}, ""},
		{"progress active 65", func(t *testing.T, m map[string]any) {
			entry(t, m, "progress")["active"] = repeat(65, func(i int) any { return progressEntry(fmt.Sprint(i)) })
		}, msgCollection},
		{"verification ids duplicate", func(t *testing.T, m map[string]any) {
			entry(t, m, "progress.completed.0")["verification_event_ids"] = []any{evTool, evTool}
		}, msgIDs},
		{"verification ids null", func(t *testing.T, m map[string]any) {
			entry(t, m, "progress.completed.0")["verification_event_ids"] = nil
		}, msgIDs},
		{"critical_context 129", func(t *testing.T, m map[string]any) {
			m["critical_context"] = repeat(129, func(i int) any { return sourcedEntry(fmt.Sprint(i)) })
		}, msgCollection},
		{"critical_context 128", func(t *testing.T, m map[string]any) {
			m["critical_context"] = repeat(128, func(i int) any { return sourcedEntry(fmt.Sprint(i)) })
		}, ""},
		{"error status unknown", func(t *testing.T, m map[string]any) { entry(t, m, "errors.0")["status"] = "closed" }, msgEnum},
		{"error message empty", func(t *testing.T, m map[string]any) { entry(t, m, "errors.0")["message"] = "" }, msgText},
		{"artifact id 201 bytes", func(t *testing.T, m map[string]any) {
			entry(t, m, "artifact_refs.0")["artifact_id"] = strings.Repeat("a", 201)
		}, msgUUID},
		{"artifact purpose missing", func(t *testing.T, m map[string]any) { delete(entry(t, m, "artifact_refs.0"), "purpose") }, msgUnexpected},
		{"artifact_refs 129", func(t *testing.T, m map[string]any) {
			m["artifact_refs"] = repeat(129, func(i int) any { return path(t, baseMap(t), "artifact_refs.0") })
		}, msgCollection},
		{"coverage first 0", func(t *testing.T, m map[string]any) { entry(t, m, "coverage")["first_chat_seq"] = json.Number("0") }, msgCoverage},
		{"coverage last before first", func(t *testing.T, m map[string]any) {
			entry(t, m, "coverage")["last_chat_seq"] = json.Number("0")
		}, msgCoverage},
		{"coverage float", func(t *testing.T, m map[string]any) { entry(t, m, "coverage")["first_chat_seq"] = json.Number("1.0") }, msgCoverage},
		{"coverage beyond int64", func(t *testing.T, m map[string]any) {
			entry(t, m, "coverage")["last_chat_seq"] = json.Number("99999999999999999999")
		}, msgCoverage},
		{"coverage Go ints", func(t *testing.T, m map[string]any) {
			m["coverage"] = map[string]any{"first_chat_seq": 1, "last_chat_seq": int64(4)}
		}, ""},
		{"coverage not an object", func(t *testing.T, m map[string]any) { m["coverage"] = []any{1, 4} }, msgObject},
		{"coverage extra key", func(t *testing.T, m map[string]any) { entry(t, m, "coverage")["x"] = 1 }, msgUnexpected},
		{"order: version before objective", func(t *testing.T, m map[string]any) {
			m["version"], m["objective"] = json.Number("3"), nil
		}, msgVersion},
		{"order: objective before coverage", func(t *testing.T, m map[string]any) {
			m["objective"], m["coverage"] = nil, nil
		}, msgCollection},
		{"order: errors before artifact refs", func(t *testing.T, m map[string]any) {
			entry(t, m, "errors.0")["status"] = "x"
			entry(t, m, "artifact_refs.0")["artifact_id"] = ""
		}, msgEnum},
		{"hand-built typed lists", func(t *testing.T, m map[string]any) {
			m["objective"] = []map[string]any{{"text": "t", "source_event_ids": []string{evUser1}}}
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := baseMap(t)
			tt.mutate(t, m)
			s, err := Parse(m)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				if err := s.Validate(); err != nil {
					t.Fatalf("Validate of parsed value: %v", err)
				}
				return
			}
			wantInvalid(t, err, tt.want)
			if s != nil {
				t.Fatal("Parse returned a value with an error")
			}
		})
	}
}

func sourcedEntry(text string) map[string]any {
	return map[string]any{"text": text, "source_event_ids": []any{evUser1}}
}

func progressEntry(text string) map[string]any {
	return map[string]any{"text": text, "source_event_ids": []any{evTool}, "verification_event_ids": []any{}}
}

func omission(class, hash string) map[string]any {
	return map[string]any{"class": class, "source_span_hash": hash}
}

func TestParseDetails(t *testing.T) {
	m := baseMap(t)
	m["zeta"], m["alpha"] = 1, 2
	e := wantInvalid(t, func() error { _, err := Parse(m); return err }(), msgUnknownFields)
	if !reflect.DeepEqual(e.Details["fields"], []string{"alpha", "zeta"}) {
		t.Fatalf("details = %v", e.Details)
	}
	m = baseMap(t)
	delete(m, "errors")
	delete(m, "version")
	e = wantInvalid(t, func() error { _, err := Parse(m); return err }(), msgMissingFields)
	if !reflect.DeepEqual(e.Details["fields"], []string{"version", "errors"}) {
		t.Fatalf("details = %v", e.Details)
	}
}

func TestParseNonMaps(t *testing.T) {
	for _, v := range []any{nil, "{}", []any{}, json.Number("1"), (*Semantic)(nil), []byte(baseJSON)} {
		_, err := Parse(v)
		wantInvalid(t, err, msgNotMap)
	}
}

func TestParseTyped(t *testing.T) {
	s := base(t)
	got, err := Parse(s)
	if err != nil || got != s {
		t.Fatalf("Parse(*Semantic) = %p, %v; want the same value", got, err)
	}
	if v, err := Parse(*s); err != nil || v.Objective[0].Text != s.Objective[0].Text {
		t.Fatalf("Parse(Semantic) = %v, %v", v, err)
	}
	s.Objective[0].SourceEventIDs = nil
	_, err = Parse(*s)
	wantInvalid(t, err, msgIDs)
	_, err = Parse(s)
	wantInvalid(t, err, msgIDs)
	wantInvalid(t, (&Semantic{}).Validate(), msgVersion)
	wantInvalid(t, (*Semantic)(nil).Validate(), msgNotMap)
}

// Duplicate fields are rejected, at the top level and inside entries, as in
// every message Cairn reads (docs/canonical-json.md).
func TestParseJSONDuplicateFields(t *testing.T) {
	top := strings.Replace(baseJSON, `"version": 1,`, `"version": 1, "version": 1,`, 1)
	_, err := ParseJSON([]byte(top))
	wantInvalid(t, err, msgDuplicateFields)
	nested := strings.Replace(baseJSON, `"status": "active"`, `"status": "active", "status": "active"`, 1)
	_, err = ParseJSON([]byte(nested))
	wantInvalid(t, err, msgDuplicateFields)
}

func TestParseJSONRejects(t *testing.T) {
	for _, doc := range []string{``, `{`, `[]`, `"text"`, `{} {}`, "{\"version\":\"\xff\"}"} {
		_, err := ParseJSON([]byte(doc))
		wantInvalid(t, err, msgNotMap)
	}
	_, err := ParseJSON([]byte(`{"version": 1}`))
	wantInvalid(t, err, msgMissingFields)
	huge := make([]byte, MaxJSONBytes+1)
	_, err = ParseJSON(huge)
	wantInvalid(t, err, msgTooLarge)
}

func TestMapOfZeroValueHasEveryKey(t *testing.T) {
	enc, err := canonical.Encode(&Semantic{Version: 1})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"artifact_refs":[],"constraints":[],"coverage":{"first_chat_seq":0,"last_chat_seq":0},"critical_context":[],"decisions":[],"errors":[],"objective":[],"progress":{"active":[],"blocked":[],"completed":[],"pending":[]},"user_requests":[],"version":1}`
	if string(enc) != want {
		t.Fatalf("encoding = %s\nwant %s", enc, want)
	}
	if (*Semantic)(nil).Map() != nil {
		t.Fatal("nil Map is not nil")
	}
	if enc, _ := canonical.Encode((*Semantic)(nil)); string(enc) != "null" {
		t.Fatalf("nil encodes as %s", enc)
	}
}

// A shape error names the field in details.path, whether the structure or
// the value is wrong, so that a repair prompt can point at it.
func TestParseErrorPaths(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(t *testing.T, m map[string]any)
		msg    string
		path   string
	}{
		{"version", func(t *testing.T, m map[string]any) { m["version"] = "1" }, msgVersion, "version"},
		{"list", func(t *testing.T, m map[string]any) { m["constraints"] = "x" }, msgCollection, "constraints"},
		{"oversized list", func(t *testing.T, m map[string]any) {
			m["objective"] = repeat(9, func(i int) any { return sourcedEntry(fmt.Sprint(i)) })
		}, msgCollection, "objective"},
		{"entry", func(t *testing.T, m map[string]any) { m["objective"] = []any{"x"} }, msgObject, "objective[0]"},
		{"entry fields", func(t *testing.T, m map[string]any) { entry(t, m, "errors.0")["x"] = 1 }, msgUnexpected, "errors[0]"},
		{"text type", func(t *testing.T, m map[string]any) { entry(t, m, "decisions.0")["text"] = 5 }, msgText, "decisions[0].text"},
		{"text value", func(t *testing.T, m map[string]any) { entry(t, m, "decisions.0")["rationale"] = "" }, msgText, "decisions[0].rationale"},
		{"id type", func(t *testing.T, m map[string]any) {
			entry(t, m, "progress.completed.0")["verification_event_ids"] = []any{evTool, 7}
		}, msgIDs, "progress.completed[0].verification_event_ids[1]"},
		{"id repeated", func(t *testing.T, m map[string]any) {
			entry(t, m, "progress.pending.0")["source_event_ids"] = []any{evUser2, evUser2}
		}, msgIDs, "progress.pending[0].source_event_ids[1]"},
		{"ids empty", func(t *testing.T, m map[string]any) {
			entry(t, m, "artifact_refs.0")["source_event_ids"] = []any{}
		}, msgIDs, "artifact_refs[0].source_event_ids"},
		{"omission", func(t *testing.T, m map[string]any) {
			r := entry(t, m, "user_requests.0")
			r["exact_excerpt"], r["secret_omission"] = nil, omission("password", "abc")
		}, msgOmissionHash, "user_requests[0].secret_omission.source_span_hash"},
		{"enum", func(t *testing.T, m map[string]any) { entry(t, m, "errors.0")["status"] = "closed" }, msgEnum, "errors[0].status"},
		{"coverage type", func(t *testing.T, m map[string]any) {
			entry(t, m, "coverage")["last_chat_seq"] = json.Number("4.0")
		}, msgCoverage, "coverage.last_chat_seq"},
		{"coverage value", func(t *testing.T, m map[string]any) {
			entry(t, m, "coverage")["last_chat_seq"] = json.Number("0")
		}, msgCoverage, "coverage"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := baseMap(t)
			tt.mutate(t, m)
			_, err := Parse(m)
			if e := wantInvalid(t, err, tt.msg); e.Details["path"] != tt.path {
				t.Fatalf("path = %v, want %s", e.Details["path"], tt.path)
			}
		})
	}
}

// The structure of a document is checked before its values: a value of the
// wrong JSON type is reported before a bad value earlier in the document.
func TestParseStructureBeforeValues(t *testing.T) {
	m := baseMap(t)
	entry(t, m, "objective.0")["text"] = ""
	m["coverage"] = "1..4"
	_, err := Parse(m)
	wantInvalid(t, err, msgObject)
}
