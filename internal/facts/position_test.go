package facts

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cairnhq/cairn/internal/lanegen"
	"github.com/cairnhq/cairn/testenv"
)

// longCut returns the entries of a generated coding-agent lane of at least
// minBytes of content, as a compaction would cut them.
func longCut(t testing.TB, minBytes int) []Entry {
	t.Helper()
	var out []Entry
	size := 0
	for seed := uint64(1); size < minBytes; seed++ {
		for _, ev := range lanegen.Lane(lanegen.Options{Events: 200, Seed: seed}) {
			e := Entry{ID: fmt.Sprintf("s%d-%s", seed, ev.EventID), Role: ev.Role, Content: *ev.Content}
			e.ToolName, _ = ev.Tool["name"].(string)
			size += len(e.Content)
			out = append(out, e)
		}
	}
	return out
}

// withFactAt returns cut with one user entry stating fact inserted at
// the start, the middle or the end.
func withFactAt(cut []Entry, where, fact string) []Entry {
	at := map[string]int{"start": 0, "middle": len(cut) / 2, "end": len(cut)}[where]
	out := make([]Entry, 0, len(cut)+1)
	out = append(out, cut[:at]...)
	out = append(out, Entry{ID: "fact-" + where, Role: "user", Content: "Thanks, that helps. " + fact + " Now let's look at the failing test."})
	return append(out, cut[at:]...)
}

const positionFact = "For this repo we use pnpm, not npm."

// A fact is stored alike from the start, the middle and the end of a
// 300 KB cut: the heuristic reads every entry.
func TestHeuristicReadsAWholeLongCut(t *testing.T) {
	cut := longCut(t, 300_000)
	for _, where := range []string{"start", "middle", "end"} {
		job := Job{V: PointerJobVersion, ConversationID: "c", HeadEntryID: "h", Scope: Scope{Kind: "thread", ID: "c"},
			Entries: withFactAt(cut, where, positionFact), RequestSeq: 1}
		p := PreviewHeuristic(context.Background(), job, DefaultConfig().MaxFacts)
		if !p.Coverage.Complete || p.Coverage.EntriesRead != len(job.Entries) {
			t.Fatalf("%s: coverage %+v of %d entries", where, p.Coverage, len(job.Entries))
		}
		found := false
		for _, f := range p.Facts {
			found = found || f.Body == positionFact && f.EntryID == "fact-"+where
		}
		if !found {
			t.Fatalf("%s of a %d-entry cut: the fact is not stored; facts: %+v", where, len(job.Entries), p.Facts)
		}
	}
}

// The model extractor reads a 300 KB cut in windows, oldest first, so a
// fact is proposed wherever it stands; with fewer calls than windows it
// reads what it can and says how far it got.
func TestModelReadsAWholeLongCutInWindows(t *testing.T) {
	fake := testenv.OpenAI(t)
	var calls atomic.Int32
	fake.SetHandler(func(r testenv.RecordedRequest) testenv.Reply {
		calls.Add(1)
		user, _ := r.Message("user")
		facts := []map[string]any{}
		if strings.Contains(user, positionFact) {
			facts = append(facts, map[string]any{"kind": "preference", "title": "pnpm, not npm", "body": positionFact, "topics": []string{"pnpm"}})
		}
		return testenv.ReplyJSON(map[string]any{"facts": facts}, testenv.Usage{PromptTokens: 6000, CompletionTokens: 20})
	})
	m := newModel(t, fake)
	cut := longCut(t, 300_000)
	windows := len(Windows(cut, MaxTranscriptRunes))
	if windows < 3 {
		t.Fatalf("a 300 KB cut makes only %d windows", windows)
	}
	m.maxCalls = windows + 1
	for _, where := range []string{"start", "middle", "end"} {
		calls.Store(0)
		job := Job{Entries: withFactAt(cut, where, positionFact)}
		ext, err := m.Extract(context.Background(), job)
		if err != nil {
			t.Fatal(err)
		}
		if len(ext.Candidates) != 1 || ext.Candidates[0].Body != positionFact || ext.Candidates[0].Kind != KindPreference {
			t.Fatalf("%s: candidates %+v", where, ext.Candidates)
		}
		if !ext.Coverage.Complete || int(calls.Load()) != ext.Coverage.ModelCalls || ext.Coverage.ModelCalls < 3 {
			t.Fatalf("%s: coverage %+v after %d calls", where, ext.Coverage, calls.Load())
		}
	}

	m.maxCalls = 2
	ext, err := m.Extract(context.Background(), Job{Entries: withFactAt(cut, "end", positionFact)})
	if err != nil {
		t.Fatal(err)
	}
	if ext.Coverage.Complete || ext.Coverage.ModelCalls != 2 || ext.Coverage.EntriesRead == 0 || ext.Coverage.EntriesRead >= ext.Coverage.EntriesCut || len(ext.Candidates) != 0 {
		t.Fatalf("bounded read: coverage %+v, candidates %d", ext.Coverage, len(ext.Candidates))
	}
}

// BenchmarkHeuristicLongCut is the heuristic's cost on a 300 KB cut.
func BenchmarkHeuristicLongCut(b *testing.B) {
	cut := longCut(b, 300_000)
	job := Job{V: PointerJobVersion, ConversationID: "c", HeadEntryID: "h", Scope: Scope{Kind: "thread", ID: "c"}, Entries: cut, RequestSeq: 1}
	b.SetBytes(300_000)
	for b.Loop() {
		PreviewHeuristic(context.Background(), job, DefaultConfig().MaxFacts)
	}
}
