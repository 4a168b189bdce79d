package consumer

import (
	"fmt"

	"github.com/cairnhq/cairn/internal/lanes"
)

// route is the way a delivery reaches its outcome, which decides what
// records it: the request ledger, or the request's record in the
// checkpoints bucket. A delivery starts on routeLedger, or on routeFirst
// when firstDelivery takes it, and changes route only through
// (*delivery).take, along routeTable (docs/architecture.md, "The commit
// path", lists what each write of each route leaves after a crash).
type route uint8

const (
	// routeLedger: the ledger entry was read (or found absent) and
	// decides; the outcome is recorded in the ledger.
	routeLedger route = iota
	// routeFirst: the first delivery of a local summarizer's request,
	// run without reading the ledger (firstDelivery). Its first write in
	// the checkpoints bucket must create the id's key (turnClaim); any
	// other answer is turnToLedger. Kept by the speed rule on
	// `processor bench --events 100` and BenchmarkOpsPerRequest
	// (docs/architecture.md, "Speed work").
	routeFirst
	// routeClaimed: a first delivery whose checkpoint with its plan, or
	// whose marker (lanes.Checkpoint.OutcomeInLedger), created the id's
	// record. That record stands in for the ledger entry: an activation
	// writes no ledger entry, and a failure or skip writes no second
	// marker.
	routeClaimed
	// routeLocalPlan: on the ledger route, the plan activated is the one
	// a local summarizer stored with the request's checkpoint; the ledger
	// records the outcome by reference (outcome_in_checkpoint).
	routeLocalPlan
	// routeConflict: another body holds the request id (in the ledger or
	// in the plan stored with the checkpoint). The ledger and the
	// checkpoint record are the original's and stay untouched; the
	// failed event is named after this body (failedRecord).
	routeConflict
)

var routeNames = [...]string{routeLedger: "ledger", routeFirst: "first", routeClaimed: "claimed", routeLocalPlan: "local_plan", routeConflict: "conflict"}

func (r route) String() string {
	if int(r) < len(routeNames) {
		return routeNames[r]
	}
	return fmt.Sprintf("route(%d)", uint8(r))
}

// turn is what moves a delivery from one route to another.
type turn uint8

const (
	// turnClaim: a first delivery's create-only write made the id's record.
	turnClaim turn = iota
	// turnToLedger: a first delivery found the id's record taken, or its
	// own activation on the head: the ledger decides (errUseLedger).
	turnToLedger
	// turnAdoptPlan: the plan stored with the request's checkpoint, made
	// from this body, is the one to activate.
	turnAdoptPlan
	// turnConflict: the id is held by another body.
	turnConflict
)

var turnNames = [...]string{turnClaim: "claim", turnToLedger: "to_ledger", turnAdoptPlan: "adopt_plan", turnConflict: "conflict"}

func (t turn) String() string {
	if int(t) < len(turnNames) {
		return turnNames[t]
	}
	return fmt.Sprintf("turn(%d)", uint8(t))
}

// routeTable is every route change there is. A turn a route does not
// list is a bug in the pipeline, not a property of the request.
var routeTable = map[route]map[turn]route{
	routeFirst:     {turnClaim: routeClaimed, turnToLedger: routeLedger},
	routeLedger:    {turnAdoptPlan: routeLocalPlan, turnConflict: routeConflict},
	routeLocalPlan: {turnAdoptPlan: routeLocalPlan, turnConflict: routeConflict},
}

// next is the route r leads to on t; ok is false when r has no such turn.
func (r route) next(t turn) (to route, ok bool) {
	to, ok = routeTable[r][t]
	return to, ok
}

// take moves d along turn t. turnToLedger also forgets what the first
// attempt learned, before the delivery runs again with the ledger. A turn
// its route does not have panics, which the recover middleware turns into
// internal_error for this request alone.
func (d *delivery) take(t turn) {
	to, ok := d.route.next(t)
	if !ok {
		panic(fmt.Sprintf("consumer: a delivery on route %s cannot turn %s", d.route, t))
	}
	if t == turnToLedger {
		d.mu.Lock()
		d.entry, d.rev = nil, 0
		d.mu.Unlock()
		d.status = ""
		d.dropHead()
	}
	d.route = to
}

// headSource says where the lane head a delivery holds came from.
type headSource uint8

const (
	// headNone: no head is held; activation reads it.
	headNone headSource = iota
	// headRead: read from the store before compaction.
	headRead
	// headAssumed: taken to be absent without a read (assumesNoHead); the
	// first activation creates it, create-only.
	headAssumed
	// headKept: the head this processor committed last on the lane
	// (recentHeads); a swap that fails against it forgets it.
	headKept
)

// holdHead leaves head, at revision rev, in d for compaction and the
// first activation attempt.
func (d *delivery) holdHead(head *lanes.Head, rev uint64, from headSource) {
	d.head, d.headRev, d.headFrom = head, rev, from
}

// takeHead returns the head d holds and where it came from, once: after
// it d holds none.
func (d *delivery) takeHead() (head *lanes.Head, rev uint64, from headSource) {
	head, rev, from = d.head, d.headRev, d.headFrom
	d.dropHead()
	return head, rev, from
}

func (d *delivery) dropHead() { d.holdHead(nil, 0, headNone) }
