package engine_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/cairnhq/cairn/events"

	"github.com/cairnhq/cairn/internal/engine"
)

// A small lane whose one large tool log has an artifact is pruned: the log
// is replaced by an excerpt pointing at the artifact, and no model is called.
func ExampleCompact() {
	data, err := os.ReadFile("../../examples/small-lane.json")
	if err != nil {
		fmt.Println(err)
		return
	}
	req, err := engine.DecodeRequest(data)
	if err != nil {
		fmt.Println(err)
		return
	}
	now := time.Date(2026, 9, 2, 10, 11, 12, 0, time.UTC)
	res, err := engine.Compact(context.Background(), req, nil, now)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Status, res.Checkpoint.Representation, res.RetainedEventCount, "events retained")
	fmt.Println("projected:", res.Checkpoint.ProjectionManifest[0].OriginalBytes, "bytes ->", res.Checkpoint.ProjectionManifest[0].ArtifactIDs)
	fmt.Println("created_at:", res.Checkpoint.CreatedAt)
	// Output:
	// pruned pruned 9 events retained
	// projected: 30068 bytes -> [0192b6e4-a000-7000-9000-000000000001]
	// created_at: 2026-09-02T10:11:12Z
}

// SplitTail keeps the newest events that fit the budget, every protected
// event, and never separates a retained tool result from the call that
// asked for it.
func ExampleSplitTail() {
	say := func(id string) events.InputEvent {
		return events.InputEvent{EventID: id, Role: events.RoleAssistant, TokenCount: ptr(10)}
	}
	call := events.InputEvent{EventID: "a2", Role: events.RoleAssistant, TokenCount: ptr(10),
		Tool: map[string]any{"calls": []any{map[string]any{"call_id": "c1"}}}}
	result := events.InputEvent{EventID: "t3", Role: events.RoleTool, TokenCount: ptr(10),
		Tool: map[string]any{"call_id": "c1"}}
	laneEvents := []events.InputEvent{say("a1"), call, result, say("a4")}
	prefix, tail := engine.SplitTail(laneEvents, 20, nil)
	fmt.Println(len(prefix), "summarized;", len(tail), "kept, starting at", tail[0].EventID)
	// Output: 1 summarized; 3 kept, starting at a2
}

func ptr(n int64) *int64 { return &n }
