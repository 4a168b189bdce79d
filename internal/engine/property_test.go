package engine

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/cairnhq/cairn/events"

	"github.com/cairnhq/cairn/canonical"
	"github.com/cairnhq/cairn/semantic"
)

// referenceCut is a brute-force transcription of SplitTail's rules, written
// for clarity rather than speed (quadratic), working on ordinals like the
// contract. It returns the cut ordinal and the pre-expansion cut.
func referenceCut(laneEvents []events.InputEvent, budget int64, active []string) (cut, preExpansion int64) {
	protectedIDs := map[string]bool{}
	for _, id := range active {
		protectedIDs[id] = true
	}
	users := 0
	for i := len(laneEvents) - 1; i >= 0; i-- {
		if laneEvents[i].Protected {
			protectedIDs[laneEvents[i].EventID] = true
		}
		if laneEvents[i].Role == events.RoleUser && users < 2 {
			protectedIDs[laneEvents[i].EventID] = true
			users++
		}
	}
	var added []events.InputEvent
	var total int64
	for i := len(laneEvents) - 1; i >= 0; i-- {
		cost, _ := EstimatedTokens(laneEvents[i])
		if len(added) > 0 && total+cost > budget {
			break
		}
		added = append(added, laneEvents[i])
		total += cost
	}
	cut = added[len(added)-1].LaneEventOrdinal
	for _, e := range laneEvents {
		if protectedIDs[e.EventID] && e.LaneEventOrdinal < cut {
			cut = e.LaneEventOrdinal
		}
	}
	preExpansion = cut
	retainedCalls := map[string]bool{}
	for _, e := range laneEvents {
		if e.LaneEventOrdinal >= cut {
			for _, id := range callIDs(e) {
				retainedCalls[id] = true
			}
		}
	}
	for _, e := range laneEvents {
		shares := false
		for _, id := range callIDs(e) {
			shares = shares || retainedCalls[id]
		}
		if e.LaneEventOrdinal >= cut || shares {
			cut = e.LaneEventOrdinal
			break
		}
	}
	for i, e := range laneEvents {
		if e.LaneEventOrdinal != cut || e.Role != events.RoleTool {
			continue
		}
		for j := i; j >= 0; j-- {
			if laneEvents[j].Role != events.RoleTool {
				return laneEvents[j].LaneEventOrdinal, preExpansion
			}
		}
	}
	return cut, preExpansion
}

// randomLane builds a coding-agent-like lane: users, assistants issuing
// tool calls, tool results answering them (sometimes out of order or
// orphaned), protected flags and unset token counts.
func randomLane(r *rand.Rand) ([]events.InputEvent, []string) {
	n := 1 + r.IntN(40)
	laneEvents := make([]events.InputEvent, 0, n)
	var active []string
	ordinal := int64(0)
	for i := 0; i < n; i++ {
		ordinal += 1 + int64(r.IntN(3))
		e := events.InputEvent{
			EventID: fmt.Sprintf("e%d", ordinal), RunAgentID: "a", ChatSeq: ordinal, LaneEventOrdinal: ordinal,
			CheckpointNamespace: "root", Provenance: map[string]any{}, Content: ptr("x"), ArtifactIDs: []string{},
		}
		call := fmt.Sprintf("c%d", r.IntN(8))
		switch r.IntN(4) {
		case 0:
			e.Role = events.RoleUser
		case 1:
			e.Role = events.RoleAssistant
			if r.IntN(2) == 0 {
				calls := []any{map[string]any{"call_id": call}}
				if r.IntN(3) == 0 {
					calls = append(calls, map[string]any{"call_id": fmt.Sprintf("c%d", r.IntN(8))}, "not an object")
				}
				e.Tool = map[string]any{"calls": calls}
			}
		default:
			e.Role = events.RoleTool
			if r.IntN(5) > 0 {
				e.Tool = map[string]any{"call_id": call}
			}
		}
		if r.IntN(8) > 0 {
			e.TokenCount = ptr(int64(1 + r.IntN(50)))
		}
		e.Protected = r.IntN(12) == 0
		if r.IntN(15) == 0 {
			active = append(active, e.EventID)
		}
		laneEvents = append(laneEvents, e)
	}
	return laneEvents, active
}

// TestSplitTailProperties checks SplitTail against the reference on random
// lanes, and these properties:
//   - the tail is never empty and holds the newest event and every
//     protected event (active ids, Protected flag, last two user events);
//   - tool pairs: for every call id carried by an event at or after the
//     pre-expansion cut (budget and protection), no prefix event carries it
//     (expansion is single-pass, so pairs formed only by events that the
//     expansion itself pulled into the tail are not guaranteed);
//   - the tail starts with a tool event only if every event before it is a
//     tool event too;
//   - the result is deterministic.
func TestSplitTailProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for iter := 0; iter < 3000; iter++ {
		laneEvents, active := randomLane(r)
		budget := int64(1 + r.IntN(300))
		prefix, tail := SplitTail(laneEvents, budget, active)
		describe := func() string {
			return fmt.Sprintf("iteration %d budget %d active %v lane %s", iter, budget, active, laneString(laneEvents))
		}

		wantCut, preExpansion := referenceCut(laneEvents, budget, active)
		if len(tail) == 0 {
			t.Fatalf("empty tail: %s", describe())
		}
		if tail[0].LaneEventOrdinal != wantCut || len(prefix)+len(tail) != len(laneEvents) {
			t.Fatalf("cut %d, reference %d: %s", tail[0].LaneEventOrdinal, wantCut, describe())
		}
		prefix2, tail2 := SplitTail(laneEvents, budget, active)
		if len(prefix2) != len(prefix) || len(tail2) != len(tail) {
			t.Fatalf("not deterministic: %s", describe())
		}
		if tail[0].Role == events.RoleTool {
			for _, e := range prefix {
				if e.Role != events.RoleTool {
					t.Fatalf("tail starts with a tool event after non-tool history: %s", describe())
				}
			}
		}
		checkToolPairs(t, laneEvents, prefix, preExpansion, describe)
		checkProtectedRetained(t, laneEvents, prefix, active, describe)
	}
}

func checkToolPairs(t *testing.T, laneEvents, prefix []events.InputEvent, preExpansion int64, describe func() string) {
	t.Helper()
	retained := map[string]bool{}
	for _, e := range laneEvents {
		if e.LaneEventOrdinal >= preExpansion {
			for _, id := range callIDs(e) {
				retained[id] = true
			}
		}
	}
	for _, e := range prefix {
		for _, id := range callIDs(e) {
			if retained[id] {
				t.Fatalf("call %s split from its pair at %d: %s", id, e.LaneEventOrdinal, describe())
			}
		}
	}
}

func checkProtectedRetained(t *testing.T, laneEvents, prefix []events.InputEvent, active []string, describe func() string) {
	t.Helper()
	inPrefix := map[string]bool{}
	for _, e := range prefix {
		inPrefix[e.EventID] = true
	}
	for _, id := range active {
		if inPrefix[id] {
			t.Fatalf("active event %s cut: %s", id, describe())
		}
	}
	users := 0
	for i := len(laneEvents) - 1; i >= 0; i-- {
		e := laneEvents[i]
		isLastUser := e.Role == events.RoleUser && users < 2
		if isLastUser {
			users++
		}
		if (e.Protected || isLastUser || i == len(laneEvents)-1) && inPrefix[e.EventID] {
			t.Fatalf("protected event %s cut: %s", e.EventID, describe())
		}
	}
}

func laneString(laneEvents []events.InputEvent) string {
	s := ""
	for _, e := range laneEvents {
		cost, _ := EstimatedTokens(e)
		s += fmt.Sprintf(" %d:%s/%d%v%v", e.LaneEventOrdinal, e.Role[:1], cost, callIDs(e), map[bool]string{true: "P", false: ""}[e.Protected])
	}
	return s
}

// TestAppendViewMatchesCanonicalEncoding checks the hand-ordered view
// encoder against the generic canonical encoder on random and fixture
// events, and the canonical renderer against encoding the whole object.
func TestAppendViewMatchesCanonicalEncoding(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	laneEvents, _ := randomLane(r)
	laneEvents = append(laneEvents, fixtureEvents(t)...)
	laneEvents = append(laneEvents, event(t, 99, events.RoleUser, "quote \" backslash \\ control \x01 tab \t é \u2028 </>&"))
	for _, e := range laneEvents {
		want, err := canonical.Encode(View(e))
		if err != nil {
			t.Fatal(err)
		}
		got, err := appendView(nil, &e)
		if err != nil || string(got) != string(want) {
			t.Fatalf("appendView:\n%s\nwant\n%s (%v)", got, want, err)
		}
		wantHash, _ := canonical.Hash(map[string]any{"artifact_ids": stringsOrEmpty(e.ArtifactIDs),
			"content": stringOrNil(e.Content), "tool": mapOrNil(e.Tool), "truncated": e.Truncated})
		if gotHash, err := events.ContentHash(e.Content, e.Tool, e.ArtifactIDs, e.Truncated); err != nil || gotHash != wantHash {
			t.Fatalf("ContentHashOf %s, want %s (%v)", gotHash, wantHash, err)
		}
	}
	views := make([]any, len(laneEvents))
	for i := range laneEvents {
		views[i] = View(laneEvents[i])
	}
	sem := mustCompact(t, fixtureRequest(t), validSummarizer()).Checkpoint.Semantic
	for _, s := range []*semantic.Semantic{nil, sem} {
		want, _ := canonical.Encode(map[string]any{"events": views, "semantic": semanticValue(s)})
		got, err := canonicalRenderer{}.Render(s, laneEvents)
		if err != nil || string(got.Bytes) != string(want) {
			t.Fatalf("canonical renderer differs from the canonical encoding (%v)", err)
		}
	}
}

// mapOrNil is m, or nil for a nil map: a nil tool is null in the content
// hash's payload.
func mapOrNil(m map[string]any) any {
	if m == nil {
		return nil
	}
	return m
}
