package consumer

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/cairnhq/cairn/events"

	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/internal/ledger"
)

// LocalSummarizer is implemented by summarizers that compute in this
// process and charge nothing (the offline summarizer). A call of theirs that
// a crash cut short left nothing running and nothing to pay for, so the
// ledger records no attempt before it (no summary_requested write) and a
// redelivery simply calls it again.
type LocalSummarizer interface {
	engine.Summarizer
	Local() bool
}

// IsLocal reports whether s declares itself a LocalSummarizer. Wrappers
// (metrics, tracing) should pass their inner summarizer's answer on with a
// Local method of their own.
func IsLocal(s engine.Summarizer) bool {
	l, ok := s.(LocalSummarizer)
	return ok && l.Local()
}

// recordingSummarizer writes summary_requested (with the attempt's
// deadline) to the ledger before the first model call of an attempt, so
// that a redelivery after a crash knows a call may have been made and paid
// for. Later calls of the same attempt run under the same record and the
// same deadline. It also accumulates the attempt's reported usage, and takes
// the request's commit slot as each call returns. A local summarizer's calls
// are bounded by the same deadline but not recorded.
type recordingSummarizer struct {
	p     *Processor
	d     *delivery
	inner engine.Summarizer
	local bool

	mu     sync.Mutex
	opened bool
	usage  events.Usage
	calls  int
}

var _ engine.Summarizer = (*recordingSummarizer)(nil)

// Summarize records the attempt if needed, then calls the inner summarizer
// under the attempt's deadline.
func (s *recordingSummarizer) Summarize(ctx context.Context, payload engine.Payload) (engine.Summary, error) {
	deadline, err := s.begin(ctx)
	if err != nil {
		return engine.Summary{}, err
	}
	callCtx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	// The engine's work after the call is part of the commit: it waits its
	// turn from the moment the model answers. The slot is never held across
	// a model call. (If ctx ends while waiting, compact's own enterCommit
	// reports it.)
	s.p.leaveCommit(s.d)
	sum, err := s.inner.Summarize(callCtx, payload)
	_ = s.p.enterCommit(ctx, s.d)
	s.mu.Lock()
	s.calls++
	if sum.Usage != nil {
		s.usage.InputTokens += sum.Usage.InputTokens
		s.usage.OutputTokens += sum.Usage.OutputTokens
		s.usage.CachedTokens += sum.Usage.CachedTokens
		s.usage.Attempts += max(sum.Usage.Attempts, 1)
		s.usage.Model = sum.Usage.Model
	}
	s.mu.Unlock()
	return sum, err
}

// begin returns the deadline of a call, opening the attempt first unless
// the summarizer is local.
func (s *recordingSummarizer) begin(ctx context.Context) (time.Time, error) {
	if s.local {
		return s.attemptDeadline(s.p.now()), nil
	}
	if err := s.open(ctx); err != nil {
		return time.Time{}, err
	}
	return s.deadline(), nil
}

// attemptDeadline bounds an attempt starting at now: AttemptTimeout, or the
// request's deadline_at when that is sooner.
func (s *recordingSummarizer) attemptDeadline(now time.Time) time.Time {
	deadline := now.Add(s.p.cfg.AttemptTimeout)
	if dl := s.d.req.deadline; !dl.IsZero() && dl.Before(deadline) {
		deadline = dl
	}
	return deadline
}

func (s *recordingSummarizer) open(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.opened {
		return nil
	}
	now := s.p.now()
	deadline := s.attemptDeadline(now)
	err := s.p.updateEntry(ctx, s.d, func(e *ledger.Entry) {
		e.State = ledger.SummaryRequested
		e.AddAttempt(now, deadline)
	})
	if err != nil {
		return err
	}
	s.opened = true
	return s.p.crashPoint(stepSummaryRequested)
}

func (s *recordingSummarizer) deadline() time.Time {
	s.d.mu.Lock()
	defer s.d.mu.Unlock()
	if a := s.d.entry.OpenAttempt(); a != nil {
		return a.Deadline
	}
	return s.p.now().Add(s.p.cfg.AttemptTimeout)
}

// usageJSON is the attempt's usage for the ledger, or nil when no call was
// made.
func (s *recordingSummarizer) usageJSON() json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.calls == 0 {
		return nil
	}
	b, err := json.Marshal(s.usage)
	if err != nil {
		return nil
	}
	return b
}

func (s *recordingSummarizer) wasOpened() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.opened
}

// closeAttempt marks the entry's open attempt finished with its usage.
func closeAttempt(e *ledger.Entry, usage json.RawMessage) {
	if len(e.Attempts) == 0 {
		return
	}
	a := &e.Attempts[len(e.Attempts)-1]
	if !a.Done {
		a.Done = true
		if usage != nil {
			a.Usage = usage
		}
	}
}
