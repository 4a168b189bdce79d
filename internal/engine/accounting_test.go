package engine

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/cairnhq/cairn/events"

	"github.com/cairnhq/cairn/internal/lanegen"
	"github.com/cairnhq/cairn/internal/tokens"
)

// corpusDir holds the texts and js-tiktoken's counts of them
// (internal/tokens/testdata/corpus, written by gen.mjs).
const corpusDir = "../tokens/testdata/corpus"

// renderedCodingLane is the corpus copy of the canonical rendering of
// examples/coding-agent-lane.json: the bytes its before budget counts.
const renderedCodingLane = "coding-agent-lane.rendered.json"

func loadExample(t testing.TB, name string) *Request {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(examplesDir, name))
	if err != nil {
		t.Fatal(err)
	}
	req, err := DecodeRequest(data)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func referenceCount(t *testing.T, text, encoding string) int64 {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(corpusDir, "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var want struct {
		Texts map[string]map[string]int64 `json:"texts"`
	}
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatal(err)
	}
	n, ok := want.Texts[text][encoding]
	if !ok {
		t.Fatalf("expected.json has no %s count of %s (run node gen.mjs in %s)", encoding, text, corpusDir)
	}
	return n
}

// The corpus holds the example lane's rendering as it is now; -update
// rewrites it (then run gen.mjs for its reference counts).
func TestCorpusHoldsTheExampleRendering(t *testing.T) {
	req := loadExample(t, "coding-agent-lane.json")
	r, err := canonicalRenderer{}.Render(req.PreviousSemantic, req.Events)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(corpusDir, "texts", renderedCodingLane)
	if *update {
		writeFile(t, path, r.Bytes)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != string(r.Bytes) {
		t.Fatalf("%s is not the example's rendering; run go test ./internal/engine -run CorpusHolds -update, then node gen.mjs", path)
	}
}

// The example lane with "tokenizer": "o200k_base" is budgeted on the
// reference's count of its rendering plus the documented margin exactly.
func TestExampleLaneBudgetsTheReferenceCount(t *testing.T) {
	ref := referenceCount(t, renderedCodingLane, "o200k_base")
	req := loadExample(t, "coding-agent-lane.json")
	bytesRes := mustCompact(t, req, extractive{})
	req.ModelProfile.Tokenizer = ptr("o200k_base")
	res := mustCompact(t, req, extractive{})
	if want := (ref*11+9)/10 + 256; res.TokensBefore != want {
		t.Fatalf("tokens_before %d, want ceil(1.1 × %d) + 256 = %d", res.TokensBefore, ref, want)
	}
	cp := res.Checkpoint
	if cp.AccountingMethod != events.MethodLocalTokenizer || cp.AccountingCounter != "o200k_base" {
		t.Fatalf("accounting %s/%s", cp.AccountingMethod, cp.AccountingCounter)
	}
	t.Logf("tokens_before: %d bytes, %d o200k_base (reference %d tokens)", bytesRes.TokensBefore, res.TokensBefore, ref)
}

func TestTheTokenizerNamedDecidesTheCount(t *testing.T) {
	text := []byte(`{"events":[{"content":"hello, world"}],"semantic":null}`)
	o200k, _ := tokens.Lookup("o200k_base")
	counted := (o200k.Count(text)*11+9)/10 + 256
	cases := []struct {
		name              string
		tokenizer         *string
		method            string
		wantMethod, count string
		estimate          int64
	}{
		{"no tokenizer: bytes", nil, "", events.MethodConservativeUTF8, CounterUTF8Bytes, int64(len(text))},
		{"no tokenizer, local asked: bytes", nil, events.MethodLocalTokenizer, events.MethodConservativeUTF8, CounterUTF8Bytes, int64(len(text))},
		{"an encoding named: counted", ptr("o200k_base"), "", events.MethodLocalTokenizer, "o200k_base", counted},
		{"a model named: its encoding", ptr("gpt-4o-mini"), events.MethodLocalTokenizer, events.MethodLocalTokenizer, "o200k_base", counted},
		{"bytes asked for: bytes", ptr("gpt-4o"), events.MethodConservativeUTF8, events.MethodConservativeUTF8, CounterUTF8Bytes, int64(len(text))},
		{"an unknown model: the estimate", ptr("acme-large"), "", events.MethodLocalTokenizer, CounterApprox, (approxTokens(text)*11+9)/10 + 256},
	}
	for _, tc := range cases {
		p := sepProfile(100_000, 0)
		p.Tokenizer = tc.tokenizer
		b, err := NewContextBudget(p, text, BudgetOptions{AccountingMethod: tc.method})
		if err != nil {
			t.Fatal(err)
		}
		if b.Method != tc.wantMethod || b.Counter != tc.count || b.EstimatedTokens != tc.estimate {
			t.Errorf("%s: %s/%s %d, want %s/%s %d", tc.name, b.Method, b.Counter, b.EstimatedTokens, tc.wantMethod, tc.count, tc.estimate)
		}
	}
	p := sepProfile(100_000, 0)
	p.Tokenizer = ptr("o200k_base")
	baseline := baselineV2(100, map[string]any{"system": exact(4, hashA)})
	b, err := NewContextBudget(p, text, BudgetOptions{ReportedUsageBaseline: baseline, ComponentDescriptors: map[string]any{"system": exact(4, hashA)}})
	if err != nil || b.Method != events.MethodReportedUsageDeltaV2 || b.Counter != CounterReportedUsage || b.EstimatedTokens != 100 {
		t.Fatalf("v2 with a tokenizer: %+v %v", b, err)
	}
}

// generatedLane is a lanegen lane (the processor benchmark's lanes) as
// engine events.
func generatedLane(t testing.TB, laneEvents int, seed uint64) *Request {
	t.Helper()
	data := lanegen.RequestJSON(lanegen.RequestOptions{Lane: lanegen.Options{Events: laneEvents, Seed: seed}})
	req, err := DecodeRequest(data)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// Counting a rendering view by view, with cached view counts, gives the
// count of the whole rendering for every counter, both for the lane
// rendered in place and for a tail rendered into its own buffer.
func TestViewByViewCountIsTheWholeCount(t *testing.T) {
	lanes := map[string]*Request{
		"coding":    laneRequest(t, "0192b6e4-0000-7000-8000-00000000c001", codingLane(t, 200, 24), 400_000),
		"generated": generatedLane(t, 300, 7),
		"unicode": laneRequest(t, "0192b6e4-0000-7000-8000-00000000c002", []events.InputEvent{
			event(t, 1, events.RoleUser, "'s it's DON'T 中文 😀 \r\n\t\r\n  x"),
			event(t, 2, events.RoleAssistant, "ǅa ʰb \u0301 ½ Ⅻ\u00a0end'"),
			event(t, 3, events.RoleUser, "  "),
			event(t, 4, events.RoleAssistant, ""),
		}, 100_000),
	}
	names := []string{"o200k_base", "cl100k_base", "p50k_base", "r50k_base", "acme-large"}
	for laneName, req := range lanes {
		for _, name := range names {
			req.ModelProfile.Tokenizer = ptr(name)
			cnt, _ := counterFor(name)
			cache := NewCountCache(4 * len(req.Events))
			c := &compaction{req: req, counts: newViewCounts(cache, len(req.Events))}
			tail := len(req.Events) / 2
			for _, part := range []struct {
				laneEvents []events.InputEvent
				first      int
			}{{req.Events, 0}, {req.Events[tail:], tail}} {
				r, pooled, err := c.renderCanonical(req.PreviousSemantic, part.laneEvents, part.first)
				if err != nil {
					t.Fatal(err)
				}
				whole := cnt.count(r.Bytes)
				for round := range 2 { // cold, then from the cache
					if got := countRendering(cnt, r.Bytes, r.views, c.counts); got != whole {
						t.Fatalf("%s lane, %s, round %d: view by view %d, whole %d", laneName, name, round, got, whole)
					}
				}
				if pooled != nil {
					renderBuffers.put(pooled, r.Bytes)
				}
			}
			if n := cache.counts.Len(); n != len(req.Events) {
				t.Errorf("%s lane, %s: %d views cached, want all %d", laneName, name, n, len(req.Events))
			}
			c.releaseViews()
		}
	}
}

// A cache handed to CompactCounting is what the counts come from: a count
// planted in it changes the budget.
func TestCompactCountingReusesTheCache(t *testing.T) {
	req := laneRequest(t, "0192b6e4-0000-7000-8000-00000000c003", codingLane(t, 200, 24), 60_000)
	req.ModelProfile.Tokenizer = ptr("o200k_base")
	cache := NewCountCache(1_000)
	first, err := CompactCounting(context.Background(), req, extractive{}, fixedNow, cache)
	if err != nil {
		t.Fatal(err)
	}
	again, err := CompactCounting(context.Background(), req, extractive{}, fixedNow, cache)
	if err != nil || again.TokensBefore != first.TokensBefore || again.TokensAfter != first.TokensAfter {
		t.Fatalf("again: %d→%d, first %d→%d (%v)", again.TokensBefore, again.TokensAfter, first.TokensBefore, first.TokensAfter, err)
	}
	cnt, _ := counterFor("o200k_base")
	key := keyOf(cnt, &req.Events[0])
	n, ok := cache.counts.Get(key)
	if !ok {
		t.Fatal("the first event's view count is not cached")
	}
	cache.counts.Put(key, n+10_000)
	planted, err := CompactCounting(context.Background(), req, extractive{}, fixedNow, cache)
	if err != nil {
		t.Fatal(err)
	}
	if want := ((first.TokensBefore-256)*10/11+10_000)*11/10 + 256; planted.TokensBefore < want-2 || planted.TokensBefore > want+2 {
		t.Fatalf("with a planted count tokens_before is %d, want about %d", planted.TokensBefore, want)
	}
}

func TestCheckpointRecordsTheCounter(t *testing.T) {
	req := loadExample(t, "coding-agent-lane.json")
	for tokenizer, want := range map[string]string{"": CounterUTF8Bytes, "gpt-4.1": "o200k_base", "gpt-4": "cl100k_base", "static": CounterApprox} {
		req.ModelProfile.Tokenizer = nil
		if tokenizer != "" {
			req.ModelProfile.Tokenizer = ptr(tokenizer)
		}
		res := mustCompact(t, req, extractive{})
		m := res.Checkpoint.Map()
		if m["accounting_counter"] != want {
			t.Errorf("tokenizer %q: accounting_counter %v, want %s", tokenizer, m["accounting_counter"], want)
		}
		if wantMethod := map[bool]string{true: events.MethodConservativeUTF8, false: events.MethodLocalTokenizer}[tokenizer == ""]; m["accounting_method"] != wantMethod {
			t.Errorf("tokenizer %q: accounting_method %v", tokenizer, m["accounting_method"])
		}
	}
}
