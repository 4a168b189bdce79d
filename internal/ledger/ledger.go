// Package ledger records each request's content hash and attempt state.
//
// The ledger is a KV bucket keyed by request_id. It lets Cairn recognise a
// request it has seen before long after the request stream's duplicate
// window has passed: a repeat of a finished request re-publishes the same
// outcome, a different body under a used id is request_id_conflict, and a
// model call that may still be running is not started a second time. Every
// change is a compare-and-swap on the entry's revision, so two deliveries of
// one request cannot both advance it.
package ledger

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/internal/lanes"
	"github.com/cairnhq/cairn/internal/outbox"
	"github.com/nats-io/nats.go/jetstream"
)

// State is where a request is in its life.
type State string

// States, in the order a request passes through them.
const (
	// Started: the request was accepted; nothing irreversible happened.
	Started State = "started"
	// SummaryRequested: a model call was (or is being) made; see Attempts.
	SummaryRequested State = "summary_requested"
	// Stored: Checkpoint and Plan (the head to activate) are decided; the
	// checkpoint may or may not be written yet.
	Stored State = "stored"
	// Activated, Failed and Skipped are terminal; Outcome holds the event.
	Activated State = "activated"
	Failed    State = "failed"
	Skipped   State = "skipped"
)

// Terminal reports whether the state has a published outcome.
func (s State) Terminal() bool { return s == Activated || s == Failed || s == Skipped }

// maxAttempts bounds the attempt history kept per entry (newest kept).
const maxAttempts = 32

// ErrConflict reports that the entry changed since it was read: another
// delivery of the same request is working on it.
var ErrConflict = errors.New("ledger: entry changed concurrently")

// Attempt is one model call window of a request.
type Attempt struct {
	// N numbers attempts from 1.
	N int `json:"n"`
	// RequestedAt is when the first model call of the attempt was made.
	RequestedAt time.Time `json:"requested_at"`
	// Deadline is when the attempt stops waiting for the model; after it,
	// no call of this attempt can still be running in Cairn.
	Deadline time.Time `json:"deadline"`
	// Done is set once the attempt's calls returned (with or without error).
	Done bool `json:"done,omitempty"`
	// Usage is what the attempt's calls cost, when known.
	Usage json.RawMessage `json:"usage,omitempty"`
}

// Entry is the ledger's record of one request.
type Entry struct {
	RequestID string `json:"request_id"`
	// ContentHash is the lowercase hex SHA-256 of the request message body
	// exactly as received (see ContentHash).
	ContentHash string `json:"content_hash"`
	State       State  `json:"state"`
	// Retryable is set with state Failed when a resend may succeed; a resend
	// then reopens the request instead of replaying the failure.
	Retryable bool `json:"retryable,omitempty"`
	// Round counts how often a retryable failure was reopened by a resend.
	Round    int       `json:"round,omitempty"`
	Attempts []Attempt `json:"attempts,omitempty"`
	// Plan is the head the request activates and Checkpoint the checkpoint
	// it stores (state Stored). Both are recorded before the checkpoint is
	// written, so recovery repeats the same bytes instead of recomputing.
	// The plan's activated event names the checkpoint instead of holding
	// it (outbox.Record.CheckpointRef), so the entry holds it once.
	Plan       *lanes.Head       `json:"plan,omitempty"`
	Checkpoint *lanes.Checkpoint `json:"checkpoint,omitempty"`
	// Outcome is the event a terminal state published; a repeat of the
	// request re-publishes it unchanged (same event id). An activated
	// outcome names its checkpoint record (outbox.Record.CheckpointRef),
	// which the repeat reads to make it whole.
	Outcome *outbox.Record `json:"outcome,omitempty"`
	// OutcomeInCheckpoint, with state Activated and no Outcome, says the
	// outcome is the first record of the plan stored with the request's
	// checkpoint (a local summarizer's): the ledger does not write the
	// activated event a second time.
	OutcomeInCheckpoint bool      `json:"outcome_in_checkpoint,omitempty"`
	UpdatedAt           time.Time `json:"updated_at"`
}

// ContentHash returns the hash the ledger compares: SHA-256 of the raw body
// bytes, without any normalisation, so a resend must repeat its body byte
// for byte (publishers reuse the serialized request: subjects.md, Event ids).
func ContentHash(body []byte) string {
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:])
}

// OpenAttempt returns the newest attempt that has not finished, or nil.
func (e *Entry) OpenAttempt() *Attempt {
	if len(e.Attempts) == 0 {
		return nil
	}
	a := &e.Attempts[len(e.Attempts)-1]
	if a.Done {
		return nil
	}
	return a
}

// AddAttempt appends attempt number len+1 and returns it.
func (e *Entry) AddAttempt(now, deadline time.Time) *Attempt {
	n := 1
	if len(e.Attempts) > 0 {
		n = e.Attempts[len(e.Attempts)-1].N + 1
	}
	e.Attempts = append(e.Attempts, Attempt{N: n, RequestedAt: now, Deadline: deadline})
	if len(e.Attempts) > maxAttempts {
		e.Attempts = append([]Attempt(nil), e.Attempts[len(e.Attempts)-maxAttempts:]...)
	}
	return &e.Attempts[len(e.Attempts)-1]
}

// Ledger reads and writes entries. It is safe for concurrent use.
type Ledger struct {
	kv jetstream.KeyValue
}

// New returns a Ledger over the ledger bucket.
func New(kv jetstream.KeyValue) *Ledger { return &Ledger{kv: kv} }

// Get returns the entry of requestID and its revision, or (nil, 0, nil).
func (l *Ledger) Get(ctx context.Context, requestID string) (*Entry, uint64, error) {
	key, err := lanes.IDKey(requestID)
	if err != nil {
		return nil, 0, err
	}
	entry, err := l.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("ledger: read: %w", err)
	}
	var e Entry
	if err := json.Unmarshal(entry.Value(), &e); err != nil {
		return nil, 0, errcode.Wrap(errcode.Internal, "ledger entry is corrupt", err)
	}
	return &e, entry.Revision(), nil
}

// Put writes e if the entry is still at revision (0: absent) and returns the
// new revision. A concurrent change yields an error matching ErrConflict.
func (l *Ledger) Put(ctx context.Context, e *Entry, revision uint64) (uint64, error) {
	key, err := lanes.IDKey(e.RequestID)
	if err != nil {
		return 0, err
	}
	value, err := json.Marshal(e)
	if err != nil {
		return 0, errcode.Wrap(errcode.Internal, "encode ledger entry", err)
	}
	var rev uint64
	if revision == 0 {
		rev, err = l.kv.Create(ctx, key, value)
	} else {
		rev, err = l.kv.Update(ctx, key, value, revision)
	}
	switch {
	case err == nil:
		return rev, nil
	case errors.Is(err, jetstream.ErrKeyRevisionMismatch), errors.Is(err, jetstream.ErrKeyExists):
		return 0, fmt.Errorf("%w: %w", ErrConflict, err)
	}
	return 0, fmt.Errorf("ledger: write: %w", err)
}
