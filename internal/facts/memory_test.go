package facts

import (
	"context"
	"os"
	"testing"
)

// A fact's line says its text once: the heuristic makes the title a prefix
// of the body (the whole line when it is short), and "title: body" would
// repeat it.
func TestMemoryLineSaysTheTextOnce(t *testing.T) {
	long := "Remember that every deploy to production needs a second reviewer from the platform team and a written rollback plan"
	tests := []struct {
		name string
		fact Fact
		want string
	}{
		{"title equals body", Fact{Title: "Remember: never log customer emails.", Body: "Remember: never log customer emails."},
			"- Remember: never log customer emails."},
		{"equal after cleaning", Fact{Title: "Remember:  never log\tcustomer emails.", Body: " Remember: never log customer emails. "},
			"- Remember: never log customer emails."},
		{"body starts with title", Fact{Title: shortTitle(long, maxTitleRunes), Body: long}, "- " + long},
		{"distinct title and body", Fact{Title: "Editor", Body: "Alice uses vim"}, "- Editor: Alice uses vim"},
		{"title inside body, not at its start", Fact{Title: "vim", Body: "Alice uses vim"}, "- vim: Alice uses vim"},
		{"no body", Fact{Title: "Editor"}, "- Editor"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := MemoryLine(tt.fact); got != tt.want {
				t.Fatalf("MemoryLine = %q, want %q", got, tt.want)
			}
			trusted := tt.fact
			trusted.Provenance = "user"
			if got := memoryLine(trusted); got != tt.want {
				t.Fatalf("memoryLine = %q, want %q", got, tt.want)
			}
		})
	}
}

// The heuristic's facts, as the sink writes them, hold each user line once.
func TestHeuristicFactsRenderOnce(t *testing.T) {
	job := BuildJob("c", "h", Scope{Kind: "thread", ID: "c"}, []Entry{
		{Role: "user", Content: "Remember: never log customer emails.\n以后提交代码之前必须先运行 make lint 检查一下。"},
	})
	ext, err := Heuristic{}.Extract(context.Background(), job)
	if err != nil || len(ext.Candidates) != 2 {
		t.Fatalf("Extract = %+v, %v", ext, err)
	}
	for _, c := range ext.Candidates {
		line := MemoryLine(Fact{Title: c.Title, Body: c.Body})
		if line != "- "+c.Body {
			t.Fatalf("line %q repeats or changes %q", line, c.Body)
		}
	}
}

// A trusted fact whose title is its body enters the prompt once.
func TestRenderTrustedFactOnce(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	scope := Scope{Kind: "user", ID: "carol"}
	text := "Remember: never log customer emails."
	if _, err := e.store.Upsert(ctx, Fact{Slug: "a", Scope: scope, Title: text, Body: text, Provenance: "user"}); err != nil {
		t.Fatal(err)
	}
	got, err := Render(ctx, e.store, scope, 4096)
	if err != nil {
		t.Fatal(err)
	}
	if want := "<agent_memory>\n- " + text + "\n</agent_memory>"; got != want {
		t.Fatalf("Render =\n%s\nwant\n%s", got, want)
	}
}

// MEMORY.md groups facts by kind: a later flush adds to its kind's section
// and never changes, removes or reorders a line already there.
func TestSinkGroupsFactsByKind(t *testing.T) {
	s := &Sink{Dir: t.TempDir()}
	scope := Scope{Kind: "thread", ID: "c"}
	first := []Fact{
		{Kind: KindConstraint, Title: "Never log customer emails", Body: "Never log customer emails."},
		{Kind: KindPreference, Title: "pnpm, not npm", Body: "We use pnpm, not npm."},
	}
	if n, err := s.Append(scope, first); err != nil || n != 2 {
		t.Fatalf("Append = %d, %v", n, err)
	}
	second := []Fact{
		{Kind: KindPreference, Title: "Tabs", Body: "We indent with tabs."},
		{Kind: KindIdentity, Title: "Dana owns billing", Body: "I'm Dana and I own billing."},
		first[0],
	}
	if n, err := s.Append(scope, second); err != nil || n != 2 {
		t.Fatalf("second Append = %d, %v", n, err)
	}
	data, err := os.ReadFile(s.Path(scope))
	if err != nil {
		t.Fatal(err)
	}
	want := "## Preferences and conventions\n- We use pnpm, not npm.\n- Tabs: We indent with tabs.\n\n" +
		"## Constraints\n- Never log customer emails.\n\n" +
		"## People and ownership\n- Dana owns billing: I'm Dana and I own billing.\n"
	if string(data) != want {
		t.Fatalf("MEMORY.md =\n%s\nwant\n%s", data, want)
	}
}
