package offline

import (
	"fmt"
	"strings"
	"testing"
	"unicode"

	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/semantic"
)

// sameRequest is this test's own idea of two requests saying the same thing:
// equal excerpts once case, runs of white space and trailing punctuation
// are ignored, or equal secret omissions.
func sameRequest(r semantic.UserRequest) string {
	if r.ExactExcerpt == nil {
		if r.SecretOmission == nil {
			return "event " + r.SourceEventID
		}
		return "omission " + r.SecretOmission.Class + " " + r.SecretOmission.SourceSpanHash
	}
	text := strings.Join(strings.Fields(strings.ToLower(*r.ExactExcerpt)), " ")
	return "excerpt " + strings.TrimRightFunc(text, func(r rune) bool { return unicode.IsPunct(r) || unicode.IsSpace(r) })
}

// repeatedRequests returns a message per group of user requests that say
// the same thing, or nil.
func repeatedRequests(reqs []semantic.UserRequest) []string {
	first := map[string]int{}
	var out []string
	for i, r := range reqs {
		k := sameRequest(r)
		if j, ok := first[k]; ok {
			out = append(out, fmt.Sprintf("user_requests[%d] (%s) repeats [%d] (%s): %s", i, r.SourceEventID, j, reqs[j].SourceEventID, k))
			continue
		}
		first[k] = i
	}
	return out
}

// TestExampleLaneRequestsAreUnique: the shipped coding-agent lane asks for
// the same things twice; the checkpoint lists each once.
func TestExampleLaneRequestsAreUnique(t *testing.T) {
	req := exampleRequest(t, "coding-agent-lane.json")
	rec := &recording{s: New(DefaultOptions())}
	res, err := engine.Compact(t.Context(), req, rec, now)
	if err != nil {
		t.Fatalf("compact: %v", err)
	}
	reqs := semanticOf(t, res).UserRequests
	if len(reqs) == 0 {
		t.Fatal("no user requests")
	}
	for _, msg := range repeatedRequests(reqs) {
		t.Error(msg)
	}
}

// TestRepeatedInstructionIsOneRequest: a user who repeats an instruction,
// in another case, with other spacing or punctuation, gets one entry, the
// newest, whose status follows what came after it; other requests keep
// their order.
func TestRepeatedInstructionIsOneRequest(t *testing.T) {
	events := chunk(1,
		user("Add a retry to the uploader."),
		assistant("Done: added a retry. All tests pass."),
		user("Also log the upload size."),
		assistant("Will do."),
		user("add a retry to the   uploader!"),
		assistant("Looking at it."),
		user("Add a retry to the uploader"),
	)
	s := rollingSummary(t, New(DefaultOptions()), [][]engine.EventView{events}, nil)
	for _, msg := range repeatedRequests(s.UserRequests) {
		t.Error(msg)
	}
	var got []string
	for _, r := range s.UserRequests {
		got = append(got, r.SourceEventID+" "+r.Status+" "+*r.ExactExcerpt)
	}
	want := []string{
		eventID(3) + " active Also log the upload size.",
		eventID(7) + " active Add a retry to the uploader",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("user_requests =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestRepeatedInstructionAcrossGenerations: a request the previous semantic
// carries, asked again in this chunk, is listed once, citing the new event;
// near-duplicates inside the carried list go too.
func TestRepeatedInstructionAcrossGenerations(t *testing.T) {
	old := chunk(1,
		user("Never log customer emails."),
		assistant("Understood."),
		user("never log customer emails"),
		assistant("Noted."),
		user("Keep the cache under 64 MiB."),
	)
	first := rollingSummary(t, New(DefaultOptions()), [][]engine.EventView{old}, nil)
	// A lineage written before requests were deduplicated.
	first.UserRequests = append([]semantic.UserRequest{{SourceEventID: eventID(1), Status: "completed", ExactExcerpt: ptr("Never log customer emails.")}},
		first.UserRequests...)
	next := chunk(6,
		assistant("Cache is in."),
		user("Never log customer emails!"),
	)
	s := rollingSummary(t, New(DefaultOptions()), [][]engine.EventView{next}, first)
	for _, msg := range repeatedRequests(s.UserRequests) {
		t.Error(msg)
	}
	last := s.UserRequests[len(s.UserRequests)-1]
	if last.SourceEventID != eventID(7) {
		t.Fatalf("newest request cites %s, want %s:\n%s", last.SourceEventID, eventID(7), dump(s))
	}
}
