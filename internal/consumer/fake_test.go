package consumer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/cairnhq/cairn/events"

	"github.com/cairnhq/cairn/canonical"
	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/internal/engine"
)

// testCompactor is a small deterministic stand-in for the engine: it keeps
// the newest event, summarizes the rest with one summarizer call, and builds
// a checkpoint map whose hash excludes created_at. A lane of one event is
// skipped (below_trigger).
type testCompactor struct{}

var _ Compactor = testCompactor{}

func (testCompactor) Compact(ctx context.Context, in Input, s engine.Summarizer, now time.Time) (*Result, error) {
	var req struct {
		RequestID          string  `json:"request_id"`
		ParentCheckpointID *string `json:"parent_checkpoint_id"`
		Trigger            string  `json:"trigger"`
	}
	if err := json.Unmarshal(in.Body, &req); err != nil {
		return nil, errcode.Wrap(errcode.InvalidRequest, "bad request", err)
	}
	if req.Trigger == "" {
		return nil, errcode.New(errcode.InvalidRequest, "compaction trigger is invalid")
	}
	var events []struct {
		EventID string  `json:"event_id"`
		Role    string  `json:"role"`
		Content *string `json:"content"`
	}
	raw := in.Events
	if raw == nil { // inline
		var body struct {
			Events json.RawMessage `json:"events"`
		}
		_ = json.Unmarshal(in.Body, &body)
		raw = body.Events
	}
	if err := json.Unmarshal(raw, &events); err != nil {
		return nil, errcode.Wrap(errcode.InvalidEvent, "bad events", err)
	}
	if len(events) < 2 {
		return &Result{Status: StatusSkipped, SkipReason: "below_trigger", TokensBefore: int64(len(events))}, nil
	}
	cut := events[:len(events)-1]
	views := make([]engine.EventView, len(cut))
	ids := make([]string, len(cut))
	for i, e := range cut {
		views[i] = engine.EventView{EventID: e.EventID, Role: e.Role, Content: e.Content}
		ids[i] = e.EventID
	}
	sum, err := s.Summarize(ctx, engine.Payload{SchemaVersion: engine.PayloadSchemaVersion, CheckpointID: req.RequestID, Events: views})
	if err != nil {
		if errcode.As(err) != nil {
			return nil, err
		}
		e := errcode.Wrap(errcode.ProviderError, "summarizer failed", err)
		e.Retryable = true // as the engine marks an untyped model failure
		return nil, e
	}
	var previous any
	if len(in.PreviousSemantic) > 0 {
		_ = json.Unmarshal(in.PreviousSemantic, &previous)
	}
	semantic := map[string]any{"summary": fmt.Sprint(sum.Output), "covers": stringsAny(ids), "previous": previous}
	semHash, err := canonical.Hash(semantic)
	if err != nil {
		return nil, err
	}
	retained := []string{events[len(events)-1].EventID}
	var parent any
	if req.ParentCheckpointID != nil {
		parent = *req.ParentCheckpointID
	}
	cp := map[string]any{
		"id": req.RequestID, "checkpoint_id": req.RequestID, "parent_checkpoint_id": parent,
		"semantic": semantic, "semantic_hash": semHash, "retained_event_ids": stringsAny(retained),
	}
	hash, err := canonical.Hash(cp)
	if err != nil {
		return nil, err
	}
	cp["created_at"] = now.UTC().Truncate(time.Second).Format("2006-01-02T15:04:05Z")
	body, err := canonical.Encode(cp)
	if err != nil {
		return nil, err
	}
	state := map[string]any{}
	if len(in.State) > 0 {
		_ = json.Unmarshal(in.State, &state)
	}
	n, _ := state["successful_auto_compactions"].(float64)
	state["successful_auto_compactions"] = n + 1
	next, _ := json.Marshal(state)
	usage, _ := json.Marshal([]any{sum.Usage})
	return &Result{
		Status: StatusCompacted, Checkpoint: body, CheckpointHash: hash, SemanticHash: semHash,
		TokensBefore: int64(len(events) * 10), TokensAfter: 20, TokensReclaimed: int64(len(events)*10 - 20),
		RetainedEventIDs: retained, ProviderUsage: usage, NextState: next, CutEventIDs: ids,
	}, nil
}

func stringsAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// testSummarizer returns a fixed summary after delay (0: at once); it counts
// its calls. fail, when set, makes a call fail with the returned error.
type testSummarizer struct {
	inner engine.Summarizer // when set, answers after delay
	delay time.Duration
	// spread, when set, makes call n wait delay - spread/2 plus a
	// deterministic share of spread that varies from call to call (mean:
	// delay).
	spread time.Duration
	fail   func(call int64) error
	calls  atomic.Int64
}

var _ engine.Summarizer = (*testSummarizer)(nil)

func (s *testSummarizer) Summarize(ctx context.Context, p engine.Payload) (engine.Summary, error) {
	n := s.calls.Add(1)
	if s.delay > 0 {
		t := time.NewTimer(s.wait(n))
		defer t.Stop()
		select {
		case <-ctx.Done():
			return engine.Summary{}, ctx.Err()
		case <-t.C:
		}
	}
	if s.fail != nil {
		if err := s.fail(n); err != nil {
			return engine.Summary{}, err
		}
	}
	if s.inner != nil {
		return s.inner.Summarize(ctx, p)
	}
	return engine.Summary{
		Output: fmt.Sprintf("summary of %d events for %s", len(p.Events), p.CheckpointID),
		Usage:  &events.Usage{InputTokens: int64(10 * len(p.Events)), OutputTokens: 5, Attempts: 1, Model: "test"},
	}, nil
}

// wait is how long call n takes: delay, moved by up to ±spread/2.
func (s *testSummarizer) wait(n int64) time.Duration {
	if s.spread <= 0 {
		return s.delay
	}
	const steps = 100 // 7919 is prime, so n*7919 walks every step
	return s.delay - s.spread/2 + time.Duration(n*7919%steps)*s.spread/(steps-1)
}

var errModelDown = errors.New("model unavailable")
