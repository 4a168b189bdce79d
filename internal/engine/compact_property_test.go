package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/events"

	"github.com/cairnhq/cairn/canonical"
	"github.com/cairnhq/cairn/errcode"
)

// randomRequest turns a random lane into a valid request: sealed events,
// some large tool outputs (most with an artifact), a random window.
func randomRequest(t *testing.T, r *rand.Rand) *Request {
	laneEvents, active := randomLane(r)
	for i := range laneEvents {
		e := &laneEvents[i]
		e.EventID = fmt.Sprintf("0190aaaa-0000-7000-8000-%012d", e.LaneEventOrdinal)
		e.RunAgentID = "agent-1"
		size := 1 + r.IntN(400)
		if e.Role == events.RoleTool && r.IntN(4) == 0 {
			size = 2049 + r.IntN(8000)
			if r.IntN(6) > 0 {
				e.ArtifactIDs = []string{fmt.Sprintf("0190bbbb-0000-7000-8000-%012d", e.LaneEventOrdinal)}
			}
		}
		e.Content = ptr(strings.Repeat(string(rune('a'+r.IntN(26))), size))
		if e.TokenCount != nil {
			e.TokenCount = ptr(int64(size))
		}
		*e = seal(t, *e)
	}
	for i := range active {
		active[i] = fmt.Sprintf("0190aaaa-0000-7000-8000-%012s", strings.TrimPrefix(active[i], "e"))
	}
	req := fixtureRequest(t)
	req.Events, req.ActiveInputEventIDs = laneEvents, active
	req.RenderedRequestBytes = nil
	req.ModelProfile.MaxInputTokens = ptr(int64(6_000 + r.IntN(40_000)))
	req.Policy.RecentTailMinTokens, req.Policy.RecentTailMaxTokens = 200, 2_000
	req.Policy.MinimumPruneReclaimTokens = int64(1 + r.IntN(5_000))
	req.Policy.MaximumHierarchicalSummaryCalls = int64(1 + r.IntN(3))
	if r.IntN(3) == 0 {
		req.Trigger = events.TriggerAuto
	}
	return req
}

// TestCompactProperties runs random valid lanes through Compact: it never
// fails with compaction_failed (a recovered panic), the same input gives the
// same output, a checkpoint's request fits the post-compaction target (or
// the prune release ratio), and the retained events are a suffix of the
// lane (pruned: all of it) that never starts with a tool result after
// non-tool history.
func TestCompactProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	statuses := map[string]int{}
	for iter := 0; iter < 300; iter++ {
		req := randomRequest(t, r)
		res, err := Compact(context.Background(), req, extractive{}, fixedNow)
		if err != nil {
			e := errcode.As(err)
			if e == nil || e.Code == errcode.CompactionFailed {
				t.Fatalf("iteration %d: %v", iter, err)
			}
			statuses[e.Code]++
			continue
		}
		statuses[res.Status]++
		again, err := Compact(context.Background(), req, extractive{}, fixedNow)
		a, _ := canonical.Encode(res.Map())
		b, _ := canonical.Encode(again.Map())
		if err != nil || string(a) != string(b) {
			t.Fatalf("iteration %d: not deterministic", iter)
		}
		checkResultShape(t, iter, req, res)
	}
	t.Logf("outcomes: %v", statuses)
	if statuses[events.StatusCompacted] == 0 || statuses[events.StatusPruned] == 0 || statuses[StatusSkipped] == 0 {
		t.Fatalf("random requests do not reach every status: %v", statuses)
	}
}

func checkResultShape(t *testing.T, iter int, req *Request, res *Result) {
	t.Helper()
	limit, _ := req.ModelProfile.EffectiveInputLimit(0)
	switch res.Status {
	case events.StatusCompacted:
		if res.TokensAfter > floorRatio(limit, req.Policy.PostCompactionTargetRatio) {
			t.Fatalf("iteration %d: compacted to %d, above the target", iter, res.TokensAfter)
		}
	case events.StatusPruned:
		if res.TokensAfter > floorRatio(limit, req.Policy.PruneReleaseRatio) || len(res.RetainedEvents) != len(req.Events) {
			t.Fatalf("iteration %d: pruned to %d with %d events", iter, res.TokensAfter, len(res.RetainedEvents))
		}
	default:
		return
	}
	offset := len(req.Events) - len(res.RetainedEvents)
	for i, e := range res.RetainedEvents {
		if e.EventID != req.Events[offset+i].EventID {
			t.Fatalf("iteration %d: retained events are not a suffix", iter)
		}
	}
	if res.RetainedEvents[0].Role == events.RoleTool {
		for _, e := range req.Events[:offset] {
			if e.Role != events.RoleTool {
				t.Fatalf("iteration %d: tail starts with a tool result", iter)
			}
		}
	}
}
