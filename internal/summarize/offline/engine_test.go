package offline

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/internal/lanegen"
	"github.com/cairnhq/cairn/semantic"
)

// recording wraps the offline summarizer and counts calls and repairs.
type recording struct {
	s       *Summarizer
	mu      sync.Mutex
	calls   int
	repairs int
}

func (r *recording) Summarize(ctx context.Context, p engine.Payload) (engine.Summary, error) {
	r.mu.Lock()
	r.calls++
	if p.Repair != nil {
		r.repairs++
	}
	r.mu.Unlock()
	return r.s.Summarize(ctx, p)
}

var now = time.Date(2026, 9, 2, 10, 11, 12, 0, time.UTC)

// compact runs the real engine on a generated request.
func compact(t testing.TB, o lanegen.RequestOptions) (*engine.Request, *engine.Result, *recording) {
	t.Helper()
	req, err := engine.DecodeRequest(lanegen.RequestJSON(o))
	if err != nil {
		t.Fatalf("generated request rejected: %v", err)
	}
	rec := &recording{s: New(DefaultOptions())}
	res, err := engine.Compact(context.Background(), req, rec, now)
	if err != nil {
		t.Fatalf("compact: %v", err)
	}
	return req, res, rec
}

// TestEngineCompactsGeneratedLanes is the property: on every generated lane
// (varied seeds, sizes and chunk counts) the engine accepts the offline
// summary on the first try and the compaction is effective.
func TestEngineCompactsGeneratedLanes(t *testing.T) {
	cases := []struct {
		events int
		fill   float64
		calls  int // maximum_hierarchical_summary_calls
	}{
		{40, 0.9, 3}, {80, 0.9, 3}, {150, 0.9, 3}, {300, 0.9, 3}, {700, 0.9, 3},
		{150, 2.5, 6}, {400, 3, 8}, {900, 2, 4},
	}
	seeds := []uint64{1, 2, 3, 17, 42, 1234}
	if testing.Short() {
		seeds = seeds[:2]
	}
	for _, c := range cases {
		for _, seed := range seeds {
			o := lanegen.RequestOptions{
				Lane:   lanegen.Options{Events: c.events, Seed: seed},
				Fill:   c.fill,
				Policy: map[string]any{"maximum_hierarchical_summary_calls": c.calls},
			}
			_, res, rec := compact(t, o)
			if res.Status != "compacted" || rec.repairs != 0 || rec.calls == 0 {
				t.Fatalf("%d events seed %d fill %v: status %s after %d calls, %d repairs", c.events, seed, c.fill, res.Status, rec.calls, rec.repairs)
			}
			if c.fill > 1 && rec.calls < 2 {
				t.Errorf("%d events seed %d fill %v: %d summary calls, want several chunks", c.events, seed, c.fill, rec.calls)
			}
		}
	}
}

// TestEngineCompactsASecondGeneration compacts a lane, continues it, and
// compacts again with the first checkpoint as previous semantic: carried
// entries (lineage) must validate too.
func TestEngineCompactsASecondGeneration(t *testing.T) {
	for _, seed := range []uint64{5, 6, 7} {
		first := lanegen.RequestOptions{Lane: lanegen.Options{Events: 300, Seed: seed}}
		req, res, _ := compact(t, first)
		last := req.Events[len(req.Events)-1]
		more := lanegen.Lane(lanegen.Options{Events: 250, Seed: seed + 100, FirstChatSeq: last.ChatSeq + 1, FirstOrdinal: last.LaneEventOrdinal + 1})
		second := lanegen.RequestOptions{
			Lane:               lanegen.Options{Seed: seed},
			Events:             append(res.RetainedEvents, more...),
			RequestID:          "req-second",
			ParentCheckpointID: res.Checkpoint.CheckpointID,
			PreviousSemantic:   res.Checkpoint.Semantic,
			Fill:               1.5,
			Policy:             map[string]any{"maximum_hierarchical_summary_calls": 4},
		}
		_, res2, rec := compact(t, second)
		if res2.Status != "compacted" || rec.repairs != 0 {
			t.Fatalf("seed %d second generation: %s, %d repairs", seed, res2.Status, rec.repairs)
		}
		if got := len(res2.Checkpoint.Semantic.UserRequests); got == 0 {
			t.Errorf("seed %d: second checkpoint lost every user request", seed)
		}
	}
}

// semanticOf returns the checkpoint semantic of a compacted result.
func semanticOf(t testing.TB, res *engine.Result) *semantic.Semantic {
	t.Helper()
	if res.Checkpoint == nil || res.Checkpoint.Semantic == nil {
		t.Fatalf("result %s has no semantic", res.Status)
	}
	return res.Checkpoint.Semantic
}

// TestEngineRepairShrinksToThePolicyByteLimit: the payload does not carry
// semantic_max_bytes, so a too-large first output is repaired once, to the
// limit the validator reports.
func TestEngineRepairShrinksToThePolicyByteLimit(t *testing.T) {
	const limit = 3000
	_, res, rec := compact(t, lanegen.RequestOptions{
		Lane:   lanegen.Options{Events: 300, Seed: 3},
		Policy: map[string]any{"semantic_max_bytes": limit},
	})
	if res.Status != "compacted" || rec.repairs != 1 {
		t.Fatalf("status %s with %d repairs, want compacted after one repair", res.Status, rec.repairs)
	}
	if n := jsonSize(semanticOf(t, res)); n > limit {
		t.Fatalf("semantic is %d bytes, over the %d-byte limit", n, limit)
	}
}
