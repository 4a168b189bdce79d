package consumer

import (
	"testing"

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
