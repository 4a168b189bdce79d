package engine

import (
	"context"
	"testing"

	"github.com/cairnhq/cairn/events"
)

// A projected copy of a lane view is counted as exactly as the rest of a
// rendering, and only the parts projection replaced are counted again:
// the parts it keeps take the counts of the lane view's, so a compaction
// that measures the projected lane counts nothing twice but the framing.
func TestProjectedCopiesCountOnlyWhatProjectionReplaced(t *testing.T) {
	lanes := map[string]*Request{
		"coding":    laneRequest(t, "0192b6e4-0000-7000-8000-00000000c004", codingLane(t, 200, 24), 400_000),
		"generated": generatedLane(t, 100, 3),
		"example":   loadExample(t, "coding-agent-lane.json"),
	}
	for laneName, req := range lanes {
		for _, name := range []string{"o200k_base", "cl100k_base", "p50k_base", "acme-large"} {
			cnt, _ := counterFor(name)
			c := &compaction{req: req, counts: newViewCounts(nil, len(req.Events))}
			c.counts.laneView = c.laneView
			checkCount(t, c, cnt, req.Events, laneName+" lane, "+name)

			c.prefix = req.Events[:len(req.Events)*3/4]
			projectedPrefix, manifest, err := projectPrefix(c.prefix)
			if err != nil || len(manifest) == 0 {
				t.Fatalf("%s lane: %d events projected (%v); the test needs some", laneName, len(manifest), err)
			}
			c.manifest, c.projected = manifest, projectedFlags(c.prefix, manifest)
			projected := append(append([]events.InputEvent{}, projectedPrefix...), req.Events[len(c.prefix):]...)
			counted := c.counts.counted
			r := checkCount(t, c, cnt, projected, laneName+" lane projected, "+name)
			if got, want := c.counts.counted-counted, replacedBytes(t, r); got != want {
				t.Errorf("%s lane, %s: the projected lane counted %d bytes again, want %d (framing and the parts projection replaced)",
					laneName, name, got, want)
			}
			c.releaseViews()
		}
	}
}

// checkCount renders events with the previous semantic as c does, checks that counting it
// view by view gives the count of the whole, and returns the rendering
// (its bytes valid until c renders again).
func checkCount(t *testing.T, c *compaction, cnt counter, laneEvents []events.InputEvent, what string) Rendered {
	t.Helper()
	r, pooled, err := c.renderCanonical(c.req.PreviousSemantic, laneEvents, 0)
	if err != nil {
		t.Fatal(err)
	}
	if pooled != nil {
		t.Cleanup(func() { renderBuffers.put(pooled, r.Bytes) })
	}
	if got, whole := countRendering(cnt, r.Bytes, r.views, c.counts), cnt.count(r.Bytes); got != whole {
		t.Fatalf("%s: view by view %d, whole %d", what, got, whole)
	}
	return r
}

// replacedBytes is what a rendering of the projected lane has to count
// when every lane view is counted: the framing around the views and, of
// each projected copy, the parts projection replaced.
func replacedBytes(t *testing.T, r Rendered) int64 {
	t.Helper()
	n := int64(len(r.Bytes))
	for _, v := range r.views {
		inner := r.Bytes[v.start+len(`{"`) : v.end-len(`}`)]
		n -= int64(len(inner))
		if v.copyOf < 0 {
			continue
		}
		parts, ok := splitView(inner)
		if !ok {
			t.Fatalf("the projected copy of lane event %d cannot be split at its keys", v.copyOf)
		}
		n += int64(len(parts[1]) + len(parts[3]))
	}
	return n
}

// When no projected lane could reclaim minimum_prune_reclaim_tokens (the
// processor benchmark's lanes, which always summarize), a compaction counts
// the lane once and then only the framing and semantic of the retained
// tail: it neither renders nor counts the projected lane it would not
// prune with.
func TestALaneThatCannotBePrunedIsCountedOnce(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		req := generatedLane(t, 100, seed)
		req.ModelProfile.Tokenizer = ptr("o200k_base")
		if err := req.Validate(); err != nil {
			t.Fatal(err)
		}
		c := &compaction{ctx: context.Background(), req: req, policy: req.Policy, summarizer: extractive{},
			renderer: canonicalRenderer{}, now: fixedNow, counts: newViewCounts(nil, len(req.Events))}
		c.counts.laneView = c.laneView
		res, err := c.run()
		lane := int64(len(c.laneViews().enc)) + int64(len(`],"semantic":null}`))
		c.releaseViews()
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != events.StatusCompacted || len(res.Checkpoint.ProjectionManifest) == 0 {
			t.Fatalf("seed %d: %s with %d projected; the test needs a summary of a lane with tool output", seed, res.Status, len(res.Checkpoint.ProjectionManifest))
		}
		sem, err := res.Checkpoint.Semantic.AppendCanonical(nil)
		if err != nil {
			t.Fatal(err)
		}
		framing := int64(len(sem) + 4*res.RetainedEventCount + 32)
		if extra := c.counts.counted - lane; extra < 0 || extra > framing {
			t.Errorf("seed %d: counted %d bytes for a lane of %d: %d more, want at most the tail's framing and semantic, %d",
				seed, c.counts.counted, lane, extra, framing)
		}
	}
}
