package consumer

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/ledger"
	"github.com/cairnhq/cairn/internal/summarize/offline"
)

// A fleet that switches from a local summarizer to a remote one (stopping
// the old replicas first) still recognises a late resend of a request the
// local summarizer activated on its first delivery, which left no ledger
// entry: the resend gets the activation again, not a second outcome.
func TestRemoteSummarizerReplaysALocalFirstDelivery(t *testing.T) {
	e := singleEnv(t)
	e.realEngine = true
	local := startLocalAt(t, e, 0, "")
	first := activate(t, e, "switch-1", "switch", "")
	moved := activate(t, e, "switch-2", "switch", "switch-1")
	finish(t, local)

	remote := e.start(t, testConfig(), nil, &testSummarizer{inner: offline.New(offline.DefaultOptions())})
	defer finish(t, remote)
	for _, body := range [][]byte{moved, first} {
		resendAndSettle(t, e, body)
	}
	for _, id := range []string{"switch-1", "switch-2"} {
		if ev := onlyEvent(t, e.eventsFor(t, id)); ev.str("kind") != "activated" {
			t.Errorf("%s: a resend to a remote summarizer published %s: %v", id, ev.str("kind"), ev.Body)
		}
	}
}

// A local summarizer stopped between its checkpoint (with its plan) and
// the head's move, and a remote summarizer that gets the redelivery after
// the switch: the remote one finds the plan under the request id when it
// stores its own checkpoint, and activates that plan instead of failing
// the request with checkpoint_conflict. The same holds when the remote
// one also stops, after its own plan reached the ledger: the next
// delivery resumes that plan and adopts the local one.
func TestRemoteSummarizerAdoptsALocalPlan(t *testing.T) {
	for _, remoteStop := range []string{"", stepLedgerStored} {
		t.Run("remote stopped at "+remoteStop, func(t *testing.T) {
			e := singleEnv(t)
			e.realEngine = true
			local := startLocalAt(t, e, 0, stepCheckpointStored)
			body := engineBody(t, "adopted-1", "adopted", "", 40, nil)
			e.publish(t, body, "adopted-1")
			stopped(t, local)
			cp, err := e.checkpoint(t, "adopted-1")
			if err != nil || cp == nil || cp.Plan == nil {
				t.Fatalf("stored checkpoint %+v (%v), want the local plan", cp, err)
			}
			if remoteStop != "" {
				stopped(t, startRemoteAt(t, e, time.Hour, remoteStop))
			}
			remote := startRemoteAt(t, e, 2*time.Hour, "")
			ev := onlyEvent(t, e.awaitOutcome(t, "adopted-1"))
			if ev.str("kind") != "activated" {
				t.Fatalf("the remote summarizer ended the request with %s: %v", ev.str("kind"), ev.Body)
			}
			raw, _ := json.Marshal(ev.Body["checkpoint"])
			if got, want := storedCreatedAt(t, raw), storedCreatedAt(t, cp.Body); got != want {
				t.Errorf("activated a checkpoint created at %s, want the local plan's (%s)", got, want)
			}
			awaitLedgerState(t, e, "adopted-1", ledger.Activated)
			resendAndSettle(t, e, body) // a late resend gets the same outcome
			finish(t, remote)
			onlyEvent(t, e.eventsFor(t, "adopted-1"))
			if h := e.head(t, laneOf("adopted")); h.HeadHash != cp.Hash {
				t.Errorf("head hash %s, want the local plan's %s", h.HeadHash, cp.Hash)
			}
		})
	}
}

// Replicas of both kinds on one request stream, each request delivered
// twice at once (a resend right behind it) so that the two copies race on
// a local and a remote replica: every request ends activated, once, and
// the lane's head is its checkpoint.
func TestBothSummarizerKindsOnOneStream(t *testing.T) {
	e := singleEnv(t)
	e.realEngine = true
	local := startLocalAt(t, e, 0, "")
	remote := startRemoteAt(t, e, 0, "")
	const n = 24
	var last uint64
	for i := range n {
		id := fmt.Sprintf("both-%d", i)
		body := engineBody(t, id, id, "", 40, nil)
		e.publish(t, body, "")
		last = e.publish(t, body, "").Sequence
	}
	e.awaitSettled(t, last)
	finish(t, local)
	finish(t, remote)
	for i := range n {
		id := fmt.Sprintf("both-%d", i)
		if ev := onlyEvent(t, e.eventsFor(t, id)); ev.str("kind") != "activated" {
			t.Errorf("%s ended %s: %v", id, ev.str("kind"), ev.Body)
		}
		if h := e.head(t, laneOf(id)); h == nil || h.CheckpointID != id || h.Generation != 1 {
			t.Errorf("%s: head %+v, want its checkpoint at generation 1", id, h)
		}
	}
}
