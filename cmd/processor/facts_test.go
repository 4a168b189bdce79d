package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/internal/facts"
	"github.com/cairnhq/cairn/testenv"
)

// runFactsCmd runs `processor args...` in-process.
func runFactsCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, stdio{in: strings.NewReader(""), out: &out, err: &errOut})
	return code, out.String(), errOut.String()
}

func TestFactsListAndMemoryRender(t *testing.T) {
	srv := testenv.NATS(t, testenv.Options{})
	js := srv.JetStream(t)
	ctx := context.Background()
	stores := testenv.Stores(t, js, 1)
	store := facts.NewStore(stores.Facts, nil)
	scope := facts.Scope{Kind: "user", ID: "alice"}
	for _, f := range []facts.Fact{
		{Slug: "s1", Scope: scope, Title: "Staging is read-only", Body: "Remember that staging is read-only", Topics: []string{}, Provenance: facts.ProvenanceCompaction},
		{Slug: "s2", Scope: scope, Title: "Editor", Body: "Alice uses vim", Topics: []string{"tools"}, Provenance: "user"},
	} {
		if _, err := store.Upsert(ctx, f); err != nil {
			t.Fatal(err)
		}
	}

	code, out, errOut := runFactsCmd(t, "facts", "list", "--scope", "user:alice", "--json", "--nats-url", srv.URL())
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var list []facts.Fact
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list) != 2 || list[0].Slug != "s2" {
		t.Fatalf("facts list --json = %s (%v)", out, err)
	}

	code, out, _ = runFactsCmd(t, "facts", "list", "--scope", "user:alice", "--nats-url", srv.URL())
	if code != 0 || !strings.Contains(out, "SLUG") || !strings.Contains(out, "Staging is read-only") || !strings.Contains(out, " tools ") {
		t.Fatalf("facts list table (exit %d):\n%s", code, out)
	}

	code, out, errOut = runFactsCmd(t, "memory", "render", "--scope", "user:alice", "--nats-url", srv.URL())
	want := "<agent_memory>\n- Editor: Alice uses vim\n- Staging is read-only\n</agent_memory>\n"
	if code != 0 || out != want {
		t.Fatalf("memory render (exit %d, %s) =\n%s", code, errOut, out)
	}
}

func TestFactsUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"facts"},
		{"facts", "list"},
		{"facts", "list", "--scope", "nocolon"},
		{"memory", "render", "--scope", "user:a", "--max-bytes", "1"},
		{"memory", "show"},
	} {
		if code, _, _ := runFactsCmd(t, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}

// facts extract shows offline what the example lane's cut yields, with
// the rule that kept each fact, and explains every sentence on request.
func TestFactsExtract(t *testing.T) {
	lane := filepath.Join("..", "..", "examples", "coding-agent-lane.json")
	code, out, errOut := runFactsCmd(t, "facts", "extract", "--explain", "--json", lane)
	if code != 0 {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	var rep extractReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if rep.Status != "compacted" || rep.Cut == 0 || !rep.Coverage.Complete || rep.Coverage.EntriesRead != rep.Cut {
		t.Fatalf("report %+v", rep)
	}
	found := false
	for _, f := range rep.Facts {
		found = found || f.Kind == "constraint" && f.Rule == "constraint/never" && f.Body == "Remember: never log customer emails."
	}
	if !found || len(rep.Explain) == 0 || rep.Skipped["assistant"] == 0 || rep.Skipped["task"] == 0 {
		t.Fatalf("facts %+v, %d entries explained, skipped %v", rep.Facts, len(rep.Explain), rep.Skipped)
	}
	// A lane that would not compact cuts nothing; --whole-lane reads it all.
	code, out, _ = runFactsCmd(t, "facts", "extract", "--whole-lane", "--json", lane)
	if code != 0 || !strings.Contains(out, `"status":"whole_lane"`) {
		t.Fatalf("--whole-lane: exit %d: %s", code, out)
	}
	if code, _, _ := runFactsCmd(t, "facts", "extract"); code != 2 {
		t.Fatalf("no FILE: exit %d, want 2", code)
	}
}
