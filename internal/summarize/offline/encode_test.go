package offline

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/internal/semantic"
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

// checkEncoding compares the package's encoding of s and of its entries
// with encoding/json.
func checkEncoding(t *testing.T, s *semantic.Semantic) {
	t.Helper()
	if got, want := appendSemantic(nil, s), encodingJSON(s); !bytes.Equal(got, want) {
		t.Fatalf("encoding differs:\n got %s\nwant %s", got, want)
	}
	checkEntries(t, s.Objective)
	checkEntries(t, s.UserRequests)
	checkEntries(t, s.Decisions)
	checkEntries(t, s.Progress.Completed)
	checkEntries(t, s.Errors)
	checkEntries(t, s.ArtifactRefs)
}

func checkEntries[T any](t *testing.T, list []T) {
	t.Helper()
	for i := range list {
		if got, want := entrySize(&list[i]), jsonSize(list[i]); got != want {
			t.Fatalf("entry %+v: size %d, want %d", list[i], got, want)
		}
	}
}

// hostile are strings with every kind of escape encoding/json writes.
var hostile = []string{
	"", "plain", "quote \" backslash \\ slash / <tag> & amp", "\x00\x01\b\f\n\r\t\x1f\x7f",
	"\xff\xfe invalid \xe4\xbd", "line\u2028para\u2029", "\ufffd literal", "中文。", "emoji 🎉 ẞ İ K",
}

func TestEncodeMatchesEncodingJSON(t *testing.T) {
	for _, h := range hostile {
		hp := h
		s := &semantic.Semantic{
			Version:      semantic.Version,
			Objective:    []semantic.Sourced{{Text: h, SourceEventIDs: []string{h, "e1"}}, {Text: h}},
			UserRequests: []semantic.UserRequest{{SourceEventID: h, ExactExcerpt: &hp, Status: h}, {SecretOmission: &semantic.SecretOmission{Class: h, SourceSpanHash: h}}},
			Decisions:    []semantic.Decision{{Text: h, Rationale: &hp, SourceEventIDs: []string{}}, {Text: h}},
			Progress: semantic.Progress{
				Completed: []semantic.ProgressItem{{Text: h, SourceEventIDs: []string{h}, VerificationEventIDs: []string{}}},
				Active:    []semantic.ProgressItem{},
			},
			CriticalContext: []semantic.Sourced{},
			Errors:          []semantic.ErrorEntry{{Message: h, Status: h, SourceEventIDs: []string{h}}},
			ArtifactRefs:    []semantic.ArtifactRef{{ArtifactID: h, Purpose: h, SourceEventIDs: nil}},
			Coverage:        semantic.Coverage{FirstChatSeq: -3, LastChatSeq: 1 << 40},
		}
		checkEncoding(t, s)
		checkEncoding(t, &semantic.Semantic{})
	}
}

// The encoding, and the size trimming measures list by list, follow every
// output the summarizer writes, before and during trimming (dropping one to
// several entries between measurements), on the golden lanes.
func TestEncodeMatchesEncodingJSONOnDrafts(t *testing.T) {
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
				checkEncoding(t, out.semantic())
				checkSize(t, out)
				ladder := out.ladder()
				for excess := 1; out.shed(ladder, excess); excess = excess%700 + 37 {
					checkEncoding(t, out.semantic())
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

// The encoding writes every field of the semantic types; a new field fails
// here until it is encoded too.
func TestEncodeKnowsEveryField(t *testing.T) {
	fields := map[reflect.Type]int{
		reflect.TypeFor[semantic.Semantic]():       10,
		reflect.TypeFor[semantic.Progress]():       4,
		reflect.TypeFor[semantic.Coverage]():       2,
		reflect.TypeFor[semantic.Sourced]():        2,
		reflect.TypeFor[semantic.UserRequest]():    4,
		reflect.TypeFor[semantic.SecretOmission](): 2,
		reflect.TypeFor[semantic.Decision]():       3,
		reflect.TypeFor[semantic.ProgressItem]():   3,
		reflect.TypeFor[semantic.ErrorEntry]():     3,
		reflect.TypeFor[semantic.ArtifactRef]():    3,
	}
	for typ, n := range fields {
		if typ.NumField() != n {
			t.Errorf("%v has %d fields, the encoding writes %d", typ, typ.NumField(), n)
		}
	}
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
	key := appendEntry(nil, &list[3])
	if !encodedIn(list, key) || encodedIn(list[:3], key) {
		t.Fatal("encodedIn does not find the entry by its encoding")
	}
}
