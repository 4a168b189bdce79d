package engine

import (
	"math"

	"github.com/cairnhq/cairn/events"
)

// SplitTail chooses the cut point of a lane: tail is the
// recent suffix kept verbatim, prefix the older part to summarize. It is
// deterministic and linear in the lane. The tail is never empty for a
// non-empty lane; it holds at least the newest event, every protected event
// (active input, Protected, the last two user events) and everything after
// the oldest of them. Tool-pair expansion is one pass: an event older than
// the budget/protection cut that shares a tool call id with an event at or
// after that cut pulls the cut back to it. Finally a cut landing on a tool
// event moves back to the nearest older non-tool event, if any.
func SplitTail(laneEvents []events.InputEvent, budget int64, activeIDs []string) (prefix, tail []events.InputEvent) {
	cut := cutIndex(laneEvents, budget, activeIDs, func(i int) (int64, error) { return EstimatedTokens(laneEvents[i]) })
	return laneEvents[:cut], laneEvents[cut:]
}

// cutIndex is SplitTail's cut; cost(i) is events[i].EstimatedTokens().
func cutIndex(laneEvents []events.InputEvent, budget int64, activeIDs []string, cost func(i int) (int64, error)) int {
	if len(laneEvents) == 0 {
		return 0
	}
	cut := min(budgetFirst(laneEvents, budget, cost), protectedFirst(laneEvents, activeIDs))
	cut = expandToolPairs(laneEvents, cut)
	return safeBoundary(laneEvents, cut)
}

// budgetFirst scans from the newest event back, adding events while they fit
// the budget (the newest always), and returns the index of the oldest added.
// The first event that does not fit closes the scan.
func budgetFirst(laneEvents []events.InputEvent, budget int64, eventCost func(i int) (int64, error)) int {
	first := len(laneEvents) - 1
	var total int64
	for i := len(laneEvents) - 1; i >= 0; i-- {
		cost, err := eventCost(i)
		if err != nil {
			cost = math.MaxInt64 // an unmeasurable event never fits
		}
		if i == len(laneEvents)-1 {
			total = cost
			continue
		}
		if cost > budget-total {
			break
		}
		total += cost
		first = i
	}
	return first
}

// protectedFirst returns the index of the oldest protected event, or
// len(events) if there is none.
func protectedFirst(laneEvents []events.InputEvent, activeIDs []string) int {
	active := make(map[string]bool, len(activeIDs))
	for _, id := range activeIDs {
		active[id] = true
	}
	lastUsers := make(map[int]bool, 2)
	for i := len(laneEvents) - 1; i >= 0 && len(lastUsers) < 2; i-- {
		if laneEvents[i].Role == events.RoleUser {
			lastUsers[i] = true
		}
	}
	for i, e := range laneEvents {
		if e.Protected || active[e.EventID] || lastUsers[i] {
			return i
		}
	}
	return len(laneEvents)
}

// expandToolPairs moves cut back to the first event that shares a tool call
// id with any event at or after cut (single pass).
func expandToolPairs(laneEvents []events.InputEvent, cut int) int {
	retained := map[string]bool{}
	for _, e := range laneEvents[cut:] {
		for _, id := range callIDs(e) {
			retained[id] = true
		}
	}
	if len(retained) == 0 {
		return cut
	}
	for i := 0; i < cut; i++ {
		for _, id := range callIDs(laneEvents[i]) {
			if retained[id] {
				return i
			}
		}
	}
	return cut
}

// safeBoundary keeps the tail from starting with a tool result: a cut on a
// tool event moves back to the nearest non-tool event; if every event up to
// the cut is a tool event the cut stays.
func safeBoundary(laneEvents []events.InputEvent, cut int) int {
	if cut >= len(laneEvents) || laneEvents[cut].Role != events.RoleTool {
		return cut
	}
	for i := cut; i >= 0; i-- {
		if laneEvents[i].Role != events.RoleTool {
			return i
		}
	}
	return cut
}
