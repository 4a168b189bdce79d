package consumer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/canonical"
	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/internal/ledger"
	"github.com/cairnhq/cairn/internal/summarize/offline"
	"github.com/cairnhq/cairn/testenv"
)

// engineSpec builds a Request v1 that the real engine compacts with the
// offline summarizer: a lane of n events of ~1 KiB each, a small model
// profile and policy limits scaled to it.
func engineBody(t testing.TB, id, lane, parent string, n int, previousSemantic json.RawMessage) []byte {
	t.Helper()
	agent := "agent-" + lane
	events := make([]map[string]any, n)
	for i := range events {
		role := []string{"user", "assistant"}[i%2]
		content := fmt.Sprintf("%s turn %d: we decided the deploy must use blue-green releases; ", id, i+1) +
			strings.Repeat(fmt.Sprintf("detail %d of the investigation into the flaky integration test. ", i), 16)
		provenance := map[string]any{"origin": "direct_user"}
		ph, err := canonical.Hash(provenance)
		if err != nil {
			t.Fatal(err)
		}
		ch, err := canonical.Hash(map[string]any{"artifact_ids": []any{}, "content": content, "tool": nil, "truncated": false})
		if err != nil {
			t.Fatal(err)
		}
		events[i] = map[string]any{
			"event_id": fmt.Sprintf("%s-e%03d", id, i+1), "run_agent_id": agent, "chat_seq": i + 1,
			"lane_event_ordinal": i + 1, "checkpoint_namespace": "main", "role": role,
			"provenance": provenance, "provenance_sha256": ph, "content_hash": ch, "content": content,
			"tool": nil, "artifact_ids": []any{}, "truncated": false, "protected": false,
		}
	}
	m := map[string]any{
		"v": 1, "request_id": id, "trigger": "manual", "thread_id": "thread-" + lane, "run_id": "run-1",
		"root_turn_id": "turn-1", "run_agent_id": agent, "provider_connection_id": "conn-1",
		"checkpoint_namespace": "main", "destination_identity_hash": strings.Repeat("a", 64),
		"model_profile": map[string]any{
			"context_limit_kind": "separate_input", "max_input_tokens": 40000, "max_output_tokens": 8192,
			"provider_reserved_tokens": 0,
		},
		"policy": map[string]any{
			"recent_tail_min_tokens": 1000, "recent_tail_max_tokens": 2000,
			"summary_output_min_tokens": 1024, "summary_output_max_tokens": 4096,
			"minimum_total_reclaim_tokens": 1000, "minimum_prune_reclaim_tokens": 1000,
		},
		"rehydration_state": map[string]any{}, "events": events, "parent_checkpoint_id": nil,
	}
	if parent != "" {
		m["parent_checkpoint_id"] = parent
	}
	if previousSemantic != nil {
		m["previous_semantic"] = previousSemantic
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestEngineCompactorCompactsWithOffline(t *testing.T) {
	body := engineBody(t, "eng-0", "eng", "", 40, nil)
	var m map[string]json.RawMessage
	mustJSON(t, body, &m)
	res, err := EngineCompactor{}.Compact(context.Background(), Input{Body: body, Events: m["events"]},
		offline.New(offline.DefaultOptions()), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != StatusCompacted || res.CheckpointHash == "" || res.SemanticHash == "" || len(res.CutEventIDs) == 0 {
		t.Fatalf("status %s hash %q cut %d", res.Status, res.CheckpointHash, len(res.CutEventIDs))
	}
	var state map[string]any
	mustJSON(t, res.NextState, &state)
	if state["last_compaction_tokens_after"] == nil {
		t.Fatalf("record_success not applied: %v", state)
	}
}

// With the real engine, a follow-up request may carry previous_semantic
// (the active checkpoint's semantic, as an application sets it): it must
// match the head's, or the request is stale_head.
func TestEnginePreviousSemanticFence(t *testing.T) {
	e := singleEnv(t)
	e.realEngine = true
	e.start(t, testConfig(), nil, nil)
	e.publish(t, engineBody(t, "ps-1", "ps", "", 40, nil), "ps-1")
	first := onlyEvent(t, e.awaitOutcome(t, "ps-1"))
	cp, _ := first.Body["checkpoint"].(map[string]any)
	semantic := mustMarshal(t, cp["semantic"])
	if first.str("status") != StatusCompacted || cp["semantic"] == nil {
		t.Fatalf("first: %v", first.Body)
	}
	// Without previous_semantic the processor loads it from the head.
	e.publish(t, engineBody(t, "ps-2", "ps", "ps-1", 40, nil), "ps-2")
	second := onlyEvent(t, e.awaitOutcome(t, "ps-2"))
	if second.str("kind") != "activated" || second.str("parent_checkpoint_hash") != first.str("checkpoint_hash") {
		t.Fatalf("second: %v", second.Body)
	}
	cp2, _ := second.Body["checkpoint"].(map[string]any)
	sem2 := mustMarshal(t, cp2["semantic"])
	// A stale previous_semantic (the first checkpoint's) is refused.
	e.publish(t, engineBody(t, "ps-3", "ps", "ps-2", 40, semantic), "ps-3")
	if ev := onlyEvent(t, e.awaitOutcome(t, "ps-3")); ev.code() != "stale_head" {
		t.Fatalf("stale previous_semantic: %v", ev.Body)
	}
	// The current one is accepted.
	e.publish(t, engineBody(t, "ps-4", "ps", "ps-2", 40, sem2), "ps-4")
	if ev := onlyEvent(t, e.awaitOutcome(t, "ps-4")); ev.str("kind") != "activated" || ev.num("generation") != 3 {
		t.Fatalf("current previous_semantic: %v", ev.Body)
	}
}

var _ LocalSummarizer = (*offline.Summarizer)(nil)

// A request whose summarizer is local, activated on its first delivery,
// is not written to the ledger at all: its calls leave nothing uncertain,
// and its plan stored with its checkpoint is its record. A remote one's
// first write is summary_requested (recorded before the call), then its
// stored plan, then its outcome. There is no "started" write. Only the
// last revision of an entry is kept.
func TestLedgerRecordsOnlyRemoteModelCalls(t *testing.T) {
	e := singleEnv(t)
	e.realEngine = true
	// The remote summarizer answers only once the watch received
	// summary_requested, which its stored plan replaces.
	var watch *ledgerWatch
	remote := &testSummarizer{inner: offline.New(offline.DefaultOptions()), fail: func(int64) error {
		testenv.Eventually(t, waitLong, func() error {
			if !watch.saw(ledger.SummaryRequested) {
				return errors.New("summary_requested not seen yet")
			}
			return nil
		})
		return nil
	}}
	cases := []struct {
		name string
		s    engine.Summarizer
		want []ledger.State
	}{
		{"local", offline.New(offline.DefaultOptions()), nil},
		{"remote", remote, []ledger.State{ledger.SummaryRequested, ledger.Stored, ledger.Activated}},
	}
	for _, c := range cases {
		r := e.start(t, testConfig(), nil, c.s)
		id := "calls-" + c.name
		if c.want != nil {
			watch = e.watchLedger(t, id)
		}
		e.publish(t, engineBody(t, id, "calls-"+c.name, "", 40, nil), id)
		if ev := onlyEvent(t, e.awaitOutcome(t, id)); ev.str("kind") != "activated" {
			t.Fatalf("%s: %v", c.name, ev.Body)
		}
		r.stop()
		if err := r.wait(t); err != nil {
			t.Fatalf("%s: stop: %v", c.name, err)
		}
		if c.want != nil {
			if got := watch.all(t); !slices.Equal(got, c.want) {
				t.Errorf("%s summarizer: ledger states %v, want %v", c.name, got, c.want)
			}
		}
		if en := e.ledgerEntry(t, id); c.want == nil && en != nil {
			t.Errorf("%s summarizer: ledger entry %+v, want none", c.name, en)
		}
	}
	// Superseded revisions (the stored plan is the largest) are not kept.
	status, err := e.stores.Ledger.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if status.Values() != 1 {
		t.Errorf("ledger keeps %d values, want one: the remote request's", status.Values())
	}
	if cp, err := e.checkpoint(t, "calls-local"); err != nil || cp == nil || cp.Plan == nil || cp.RequestHash == "" {
		t.Errorf("the local request's checkpoint holds no plan: %+v (%v)", cp, err)
	}
}
