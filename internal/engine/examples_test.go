package engine

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/events"

	"github.com/cairnhq/cairn/errcode"
)

const examplesDir = "../../examples"

// exampleRequests are the shipped example requests, written with -update:
// a ~300-event coding-agent lane that needs a summary, and a small lane
// whose one large tool log is enough to prune (no model call).
func exampleRequests(t *testing.T) map[string]*Request {
	coding := laneRequest(t, "0192b6e4-0000-7000-8000-0000000e0001", codingLane(t, 300, 24), 128_000)
	coding.Focus = ptr("keep the cache design decisions and the open CI flake")

	b := &laneBuilder{t: t}
	b.user("Why does `make test` fail on main? Log: https://ci.example.com/acme/shop/runs/4813")
	b.toolCall("Running the tests to reproduce.", "make test", largeOutput(1, 30_000))
	b.assistant("internal/store/cache_test.go:48 expects 2 entries after eviction but the LRU keeps 3; the capacity check is off by one.")
	b.user("Fix it and rerun.")
	b.toolCall("Applying the fix.", "apply_patch internal/store/cache.go", "patched internal/store/cache.go: 1 hunk, +1 -1")
	b.assistant("Fixed: evict when len >= capacity. Tests pass.")
	b.user("Thanks. Open a PR titled 'store: fix LRU eviction off-by-one'.")
	small := laneRequest(t, "0192b6e4-0000-7000-8000-0000000e0002", b.laneEvents, 40_000)
	return map[string]*Request{"coding-agent-lane.json": coding, "small-lane.json": small}
}

type noModel struct{}

func (noModel) Summarize(context.Context, Payload) (Summary, error) {
	return Summary{}, errcode.New(errcode.ProviderError, "no model in this test")
}

func TestExamples(t *testing.T) {
	if *update {
		for name, req := range exampleRequests(t) {
			writeFile(t, filepath.Join(examplesDir, name), indented(t, wireMap(req)))
		}
	}
	load := func(name string) *Request {
		data, err := os.ReadFile(filepath.Join(examplesDir, name))
		if err != nil {
			t.Fatalf("%v (run go test ./internal/engine -run Examples -update)", err)
		}
		req, err := DecodeRequest(data)
		if err != nil {
			t.Fatalf("%s does not decode: %v", name, err)
		}
		return req
	}
	coding := load("coding-agent-lane.json")
	if n := len(coding.Events); n < 280 || n > 320 {
		t.Fatalf("coding lane has %d events", n)
	}
	large := 0
	for _, e := range coding.Events {
		if e.Content != nil && len(*e.Content) > projectionThreshold {
			large++
			if len(e.ArtifactIDs) == 0 {
				t.Fatalf("large output %s without artifact", e.EventID)
			}
		}
	}
	if large < 2 || large > 3 {
		t.Fatalf("%d large tool outputs", large)
	}
	res, err := Compact(context.Background(), coding, extractive{}, fixedNow)
	if err != nil || res.Status != events.StatusCompacted {
		t.Fatalf("coding lane: %v %v", res, err)
	}
	t.Logf("coding lane: %d events, %d -> %d tokens, %d retained", len(coding.Events), res.TokensBefore, res.TokensAfter, res.RetainedEventCount)

	small := load("small-lane.json")
	res, err = Compact(context.Background(), small, noModel{}, fixedNow)
	if err != nil || res.Status != events.StatusPruned {
		t.Fatalf("small lane: %v %v", res, err)
	}
	if !strings.Contains(*small.Events[0].Content, "make test") {
		t.Fatal("unexpected small lane")
	}
}
