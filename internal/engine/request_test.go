package engine

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/cairnhq/cairn/events"

	"github.com/cairnhq/cairn/errcode"
)

func TestActiveInputEventIDs(t *testing.T) {
	laneEvents := fixtureEvents(t)
	ids := func(ns ...int) []string {
		out := make([]string, len(ns))
		for i, n := range ns {
			out[i] = uuid7(n)
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		ids   []string
		valid bool
	}{
		{"none", nil, true},
		{"empty", []string{}, true},
		{"the last", ids(6), true},
		{"all, out of order", ids(6, 1, 5, 2, 4, 3), true},
		{"absent", ids(7), false},
		{"present then absent", ids(1, 7), false},
		{"duplicate", ids(2, 2), false},
		{"duplicate of an absent id", ids(7, 7), false},
		{"more than the events", ids(1, 2, 3, 4, 5, 6, 1), false},
	} {
		req := fixtureRequest(t)
		req.Events, req.ActiveInputEventIDs = laneEvents, tc.ids
		err := req.Validate()
		if tc.valid && err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !tc.valid {
			if e := wantCode(t, err, errcode.InvalidRequest); e.Message != "active input event IDs are invalid" {
				t.Fatalf("%s: %q", tc.name, e.Message)
			}
		}
	}
}

func TestValidName(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    string
		ok   bool
	}{
		{"plain", "req-1", true},
		{"200 bytes", strings.Repeat("r", 200), true},
		{"non-ASCII", "résumé-ü", true},
		{"empty", "", false},
		{"201 bytes", strings.Repeat("r", 201), false},
		{"4 KiB", strings.Repeat("n", 4096), false},
		{"NUL", "a\x00b", false},
		{"line break", "a\r\nb", false},
		{"DEL", "a\x7fb", false},
		{"C1 control", "a\u0085b", false},
		{"invalid UTF-8", "a\xffb", false},
	} {
		if got := events.ValidName(tc.s); got != tc.ok {
			t.Errorf("%s: ValidName = %v, want %v", tc.name, got, tc.ok)
		}
	}
}

// A name that breaks the rule fails with details naming the field and the
// rule, for every identity, events_object and the scope.
func TestDecodeRequestNamesTheInvalidField(t *testing.T) {
	for _, field := range []string{"request_id", "thread_id", "run_id", "root_turn_id", "run_agent_id",
		"provider_connection_id", "checkpoint_namespace", "parent_checkpoint_id", "events_object", "scope"} {
		for _, bad := range []string{strings.Repeat("n", 4096), "a\nb"} {
			m := wireMap(fixtureRequest(t))
			switch field {
			case "events_object":
				delete(m, "events")
				m[field] = bad
			case "scope":
				m[field] = map[string]any{"kind": "thread", "id": bad}
			default:
				m[field] = bad
			}
			_, err := DecodeRequestValue(m)
			e := wantCode(t, err, errcode.InvalidRequest)
			if e.Details["field"] != field || e.Details["rule"] != "name" || e.Details["expected"] != events.NameRule {
				t.Fatalf("%s %.10q: details %v", field, bad, e.Details)
			}
		}
	}
}

// Unknown fields are echoed bounded: a few names, each cut short, and
// their count.
func TestUnknownFieldsAreListedBounded(t *testing.T) {
	m := wireMap(fixtureRequest(t))
	for i := range 1000 {
		m[strings.Repeat("<", 300)+strconv.Itoa(i)] = int64(i)
	}
	_, err := DecodeRequestValue(m)
	e := wantCode(t, err, errcode.InvalidRequest)
	listed, _ := e.Details["unknown_fields"].([]any)
	if len(listed) != maxListedNames || e.Details["unknown_fields_count"] != int64(1000) {
		t.Fatalf("listed %d, count %v", len(listed), e.Details["unknown_fields_count"])
	}
	for _, n := range listed {
		if s := n.(string); len(s) > maxListedNameSize || !strings.HasSuffix(s, "…") {
			t.Fatalf("name not cut: %d bytes", len(s))
		}
	}
}

func TestTruncateUTF8(t *testing.T) {
	if got := TruncateUTF8("short", 10); got != "short" {
		t.Fatal(got)
	}
	got := TruncateUTF8(strings.Repeat("\u2028", 100), 20)
	if len(got) > 20 || !utf8.ValidString(got) || !strings.HasSuffix(got, "…") {
		t.Fatalf("%q", got)
	}
}
