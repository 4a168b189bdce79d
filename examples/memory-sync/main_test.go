package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/events"
)

func TestAppendFactsWritesEachLineOnce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), scopeDir(events.Scope{Kind: "thread", ID: "t/1"}))
	facts := []events.Fact{{Title: "Style", Body: "Always use\ttabs"}, {Title: "DB", Body: "Never touch prod"}}
	for run, want := range []int{2, 0} {
		added, err := appendFacts(dir, facts)
		if err != nil {
			t.Fatal(err)
		}
		if added != want {
			t.Fatalf("run %d added %d lines, want %d", run+1, added, want)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "MEMORY.md"))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(b); got != "- Style: Always use tabs\n- DB: Never touch prod\n" {
		t.Fatalf("MEMORY.md = %q", got)
	}
	if strings.Contains(dir, "t/1") {
		t.Fatalf("scope id not sanitised: %s", dir)
	}
}
