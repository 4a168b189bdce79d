package consumer

import (
	"fmt"
	"testing"

	"github.com/cairnhq/cairn/internal/lanes"
	"github.com/cairnhq/cairn/internal/ledger"
)

var (
	allRoutes = []route{routeLedger, routeFirst, routeClaimed, routeLocalPlan, routeConflict}
	allTurns  = []turn{turnClaim, turnToLedger, turnAdoptPlan, turnConflict}
)

// The route changes a delivery can make, written out: every other turn
// of every route is refused.
func TestRouteTable(t *testing.T) {
	want := map[string]route{
		"first/claim":           routeClaimed,
		"first/to_ledger":       routeLedger,
		"ledger/adopt_plan":     routeLocalPlan,
		"ledger/conflict":       routeConflict,
		"local_plan/adopt_plan": routeLocalPlan,
		"local_plan/conflict":   routeConflict,
	}
	for _, r := range allRoutes {
		for _, tu := range allTurns {
			name := fmt.Sprintf("%s/%s", r, tu)
			to, ok := r.next(tu)
			w, allowed := want[name]
			if ok != allowed || (ok && to != w) {
				t.Errorf("%s: got %s (%v), want %s (%v)", name, to, ok, w, allowed)
			}
		}
	}
}

// A turn its route does not have panics rather than leaving the delivery
// on a route no write of the pipeline expects.
func TestRouteRefusesAnUnlistedTurn(t *testing.T) {
	d := &delivery{route: routeClaimed}
	defer func() {
		if recover() == nil {
			t.Fatal("a claimed delivery turned to the ledger")
		}
		if d.route != routeClaimed {
			t.Fatalf("route changed to %s by a refused turn", d.route)
		}
	}()
	d.take(turnToLedger)
}

// Turning to the ledger forgets what the first attempt learned: its
// made-up entry, its status and the head it held.
func TestTurnToLedgerForgetsTheFirstAttempt(t *testing.T) {
	d := &delivery{route: routeFirst, status: statusSkipped}
	d.setEntry(&ledger.Entry{RequestID: "r"}, 0)
	d.holdHead(&lanes.Head{CheckpointID: "p"}, 7, headKept)
	d.take(turnToLedger)
	if d.route != routeLedger || d.entry != nil || d.status != "" {
		t.Fatalf("after turning to the ledger: route %s entry %+v status %q", d.route, d.entry, d.status)
	}
	if head, rev, from := d.takeHead(); head != nil || rev != 0 || from != headNone {
		t.Fatalf("head kept across the turn: %+v %d %d", head, rev, from)
	}
}

// takeHead gives the held head once.
func TestTakeHeadOnce(t *testing.T) {
	d := &delivery{}
	d.holdHead(nil, 0, headAssumed)
	if _, _, from := d.takeHead(); from != headAssumed {
		t.Fatalf("first take: %d", from)
	}
	if _, _, from := d.takeHead(); from != headNone {
		t.Fatalf("second take: %d", from)
	}
}
