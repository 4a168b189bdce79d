package engine

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/cairnhq/cairn/events"

	"github.com/cairnhq/cairn/semantic"
)

// otherRenderer renders exactly as canonical_v1 but is not the engine's own
// renderer, so Compact measures through Renderer.Render, without the lane's
// encoded views.
type otherRenderer struct{}

func (otherRenderer) Render(sem *semantic.Semantic, laneEvents []events.InputEvent) (Rendered, error) {
	return canonicalRenderer{}.Render(sem, laneEvents)
}

// TestEncodedViewsMeasureAsRendering compacts lanes (pruned, compacted,
// with and without a given request size, with and without a previous
// semantic) with the engine's canonical_v1 path and through
// Renderer.Render, and requires the same Result or error.
func TestEncodedViewsMeasureAsRendering(t *testing.T) {
	previous := mustCompact(t, laneRequest(t, "0192b6e4-0000-7000-8000-00000000c000", codingLane(t, 300, 25), 60_000), extractive{})
	for _, tc := range []struct {
		n, largeEvery int
		maxInput      int64
	}{{24, 0, 4_000}, {60, 25, 40_000}, {120, 25, 60_000}, {300, 25, 60_000}, {300, 7, 400_000}, {1000, 25, 400_000}} {
		for _, sized := range []bool{false, true} {
			for _, withPrevious := range []bool{false, true} {
				name := fmt.Sprintf("n%d_large%d_max%d_sized%v_prev%v", tc.n, tc.largeEvery, tc.maxInput, sized, withPrevious)
				req := laneRequest(t, "0192b6e4-0000-7000-8000-00000000c001", codingLane(t, tc.n, tc.largeEvery), tc.maxInput)
				if sized {
					req.RenderedRequestBytes = ptr(int64(tc.maxInput * 9 / 10))
				}
				if withPrevious && previous.Checkpoint != nil {
					req.PreviousSemantic = previous.Checkpoint.Semantic
				}
				if tc.n == 24 {
					// An id outside canonical JSON passes validation but has no view.
					req.Events[5].EventID = "evt-\xff"
				}
				want, wantErr := compactWith(req, otherRenderer{})
				got, gotErr := Compact(context.Background(), req, extractive{}, fixedNow)
				if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || !reflect.DeepEqual(got, want) {
					t.Errorf("%s: got %v %v, want %v %v", name, resultStatus(got), gotErr, resultStatus(want), wantErr)
				}
			}
		}
	}
}

// compactWith is Compact with renderer in place of the request's.
func compactWith(req *Request, renderer Renderer) (*Result, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	c := &compaction{ctx: context.Background(), req: req, policy: req.Policy, summarizer: extractive{}, renderer: renderer, now: fixedNow}
	defer c.releaseViews()
	return c.run()
}

func resultStatus(r *Result) string {
	if r == nil {
		return "<nil>"
	}
	return r.Status
}
