package consumer

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/lanes"
	"github.com/cairnhq/cairn/internal/ledger"
	"github.com/cairnhq/cairn/internal/topology"
	"github.com/nats-io/nats.go"
)

// rawLedger is the request's ledger entry as stored.
func rawLedger(t *testing.T, e *env, id string) string {
	t.Helper()
	key, err := lanes.IDKey(id)
	if err != nil {
		t.Fatal(err)
	}
	return storedValue(t, e.stores.Ledger, key)
}

// checkpointOf is the checkpoint member of an activated event's payload.
func checkpointOf(t *testing.T, payload []byte) map[string]any {
	t.Helper()
	var ev struct {
		Checkpoint map[string]any `json:"checkpoint"`
	}
	mustJSON(t, payload, &ev)
	if ev.Checkpoint == nil {
		t.Fatalf("activated event without its checkpoint: %.300s", payload)
	}
	return ev.Checkpoint
}

// A remote summarizer's ledger entry stores the checkpoint once: the
// event of its stored plan and its outcome name the checkpoint record
// instead of holding it. A redelivery resumes the plan whole (stopped after
// the ledger's stored write), and a late resend gets the outcome whole.
func TestLedgerCitesTheCheckpoint(t *testing.T) {
	e := singleEnv(t)
	e.realEngine = true
	first := startRemoteAt(t, e, 0, stepLedgerStored)
	body := engineBody(t, "ledger-cites-1", "ledger-cites", "", 40, nil)
	e.publish(t, body, "ledger-cites-1")
	stopped(t, first)
	stored := rawLedger(t, e, "ledger-cites-1")
	en := e.ledgerEntry(t, "ledger-cites-1")
	if en == nil || en.State != ledger.Stored || en.Checkpoint == nil {
		t.Fatalf("ledger entry %+v, want the stored plan", en)
	}
	if !strings.Contains(stored, `"checkpoint_ref":"ledger-cites-1"`) || strings.Count(stored, string(en.Checkpoint.Body)) != 1 {
		t.Fatalf("the stored plan repeats its checkpoint: %.300s", stored)
	}

	// Every activated event published from here on, duplicates included.
	seen := make(chan []byte, 8)
	sub, err := e.js.Conn().Subscribe(topology.SubjectActivated, func(m *nats.Msg) { seen <- m.Data })
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := e.js.Conn().Flush(); err != nil {
		t.Fatal(err)
	}
	second := startRemoteAt(t, e, time.Hour, "")
	defer finish(t, second)
	var want map[string]any
	select {
	case resumed := <-seen:
		want = checkpointOf(t, resumed)
	case <-time.After(waitLong):
		t.Fatal("the stored plan was not resumed")
	}
	var storedBody map[string]any
	mustJSON(t, en.Checkpoint.Body, &storedBody)
	if !reflect.DeepEqual(want, storedBody) {
		t.Fatalf("resumed with checkpoint %v, want the stored plan's", want)
	}
	awaitLedgerState(t, e, "ledger-cites-1", ledger.Activated)
	final := rawLedger(t, e, "ledger-cites-1")
	if !strings.Contains(final, `"checkpoint_ref":"ledger-cites-1"`) || strings.Contains(final, string(en.Checkpoint.Body)) {
		t.Fatalf("the recorded outcome repeats its checkpoint: %.300s", final)
	}
	resendAndSettle(t, e, body)
	select {
	case replayed := <-seen:
		if got := checkpointOf(t, replayed); !reflect.DeepEqual(got, want) {
			t.Fatalf("replayed checkpoint %v, want %v", got, want)
		}
	case <-time.After(waitLong):
		t.Fatal("the resend was not answered with its activated event")
	}
}
