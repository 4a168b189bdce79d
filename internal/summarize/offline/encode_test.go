package offline

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/semantic"
)

// jsonSize is the length of v's JSON encoding by encoding/json without HTML
// escaping, the reference for semanticSize.
func jsonSize(v any) int {
	return len(encodingJSON(v))
}

func encodingJSON(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// hostile are strings with every kind of escape encoding/json writes.
var hostile = []string{
	"", "plain", "quote \" backslash \\ slash / <tag> & amp", "\x00\x01\b\f\n\r\t\x1f\x7f",
	"\xff\xfe invalid \xe4\xbd", "line\u2028para\u2029", "\ufffd literal", "中文。", "emoji 🎉 ẞ İ K",
}

// The size trimming measures list by list, and keeps up to date as it drops
// entries, follows the size of every output the summarizer writes, before
// and during trimming (dropping one to several entries between
// measurements), on the golden lanes.
func TestSizeMatchesEncodingJSONOnDrafts(t *testing.T) {
	lanes := append(generated(t, []int{7, 24, 120, 400}, 4), proseLane(24), unicodeLane())
	for _, o := range []Options{DefaultOptions(), {MinBytes: minBudget, MaxBytes: 2 * minBudget, MaxCitations: 1, MaxTextBytes: 64}} {
		for _, chunks := range lanes {
			var prev *semantic.Semantic
			for _, c := range chunks {
				p := payload(c, chunks[0][0].ChatSeq, prev)
				d, err := summarizeDraft(context.Background(), o.normalized(), p)
				if err != nil {
					t.Fatal(err)
				}
				out := d.output()
				out.s.Coverage = p.CoveredRange
				checkSize(t, out)
				ladder := out.ladder()
				for excess := 1; out.shed(ladder, excess); excess = excess%700 + 37 {
					checkSize(t, out)
				}
				prev = summarizeOnce(t, o, p)
			}
		}
	}
}

// checkSize compares the output's measured size with encoding/json.
func checkSize(t *testing.T, o *output) {
	t.Helper()
	if got, want := o.size(), jsonSize(o.semantic()); got != want {
		t.Fatalf("size %d, want %d", got, want)
	}
}

func summarizeOnce(t *testing.T, o Options, p engine.Payload) *semantic.Semantic {
	got, err := New(o).Summarize(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	return got.Output.(*semantic.Semantic)
}

// uniqueByMarshal is the reference for unique: entries keyed by json.Marshal.
func uniqueByMarshal[T any](list []T) []T {
	seen := map[string]bool{}
	out := []T{}
	for _, e := range list {
		data, _ := json.Marshal(e)
		if !seen[string(data)] {
			seen[string(data)] = true
			out = append(out, e)
		}
	}
	return out
}

// unique keeps what keying by json.Marshal keeps, on lists with plain
// duplicates, distinct strings of one encoding ("\xfe" and "\xff" both
// encode as "\ufffd") and nil beside empty id lists.
func TestUniqueMatchesMarshalKeys(t *testing.T) {
	var list []semantic.Sourced
	for _, a := range append(hostile, "\xfe", "\xff", "\ufffd") {
		for _, ids := range [][]string{nil, {}, {a}, {"e1", a}} {
			list = append(list, semantic.Sourced{Text: a, SourceEventIDs: ids})
		}
	}
	list = append(list, list...)
	got, want := unique(list), uniqueByMarshal(list)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("unique kept %d entries, want %d", len(got), len(want))
	}
	if len(got) >= len(list)/2 {
		t.Fatalf("no entry equal by encoding was dropped: %d of %d kept", len(got), len(list))
	}
}
