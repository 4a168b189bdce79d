package facts

import (
	"context"
	"slices"
	"testing"
)

// From a lane written by a team integrating Cairn: a request for work
// after a semicolon makes its statement a task, an assistant's paraphrase
// of a rule the user stated is no second fact, a long title ends at a
// clause, and everyday words are no topics.
func TestHeuristicOnAnIntegratorsLane(t *testing.T) {
	job := Job{Entries: []Entry{
		{ID: "e1", Role: "user", Content: "I'm Priya, and I own the checkout service. The LRU cache tests in src/cache are flaky on CI; please find out why and fix it."},
		{ID: "e2", Role: "user", Content: "For this repo we use pnpm, not npm."},
		{ID: "e3", Role: "assistant", Content: "Noted: the repo uses pnpm. I'll start by running the cache tests to reproduce."},
		{ID: "e4", Role: "assistant", Content: "Noted: the repo uses pnpm workspaces."},
		{ID: "e5", Role: "user", Content: "The staging database lives at db.staging.internal:5432, in case the integration tests need it."},
		{ID: "e6", Role: "user", Content: "Deploys go out with `make release` from the main branch only."},
	}}
	ext, err := Heuristic{}.Extract(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	byEntry := map[string][]Candidate{}
	for _, c := range ext.Candidates {
		byEntry[c.EntryID] = append(byEntry[c.EntryID], c)
	}
	if n := len(byEntry["e1"]); n != 1 {
		t.Errorf("e1: %d facts %+v, want the identity alone", n, byEntry["e1"])
	}
	if n := len(byEntry["e3"]); n != 0 {
		t.Errorf("e3, a paraphrase of e2: %d facts %+v", n, byEntry["e3"])
	}
	if n := len(byEntry["e4"]); n != 1 {
		t.Errorf("e4 says more than e2 (workspaces): %d facts, want 1", n)
	}
	if c := byEntry["e5"]; len(c) != 1 || c[0].Title != "The staging database lives at db.staging.internal:5432" {
		t.Errorf("e5: %+v, want the title cut before ', in case'", c)
	} else if slices.Contains(c[0].Topics, "at db") {
		t.Errorf("e5 topics %q hold 'at db'", c[0].Topics)
	}
	if c := byEntry["e6"]; len(c) != 1 || slices.Contains(c[0].Topics, "go") || slices.Contains(c[0].Topics, "make") {
		t.Errorf("e6: %+v, want one fact without the topics go and make", c)
	}
}
