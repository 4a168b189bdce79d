// Package lanes stores checkpoints and moves lane heads by compare-and-swap.
package lanes

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/internal/outbox"
	"github.com/cairnhq/cairn/internal/rawjson"
	"github.com/nats-io/nats.go/jetstream"
)

// ErrConflict reports that a head changed between its read and its
// compare-and-swap. It matches both server codes of a revision mismatch
// (10071 and 10164) and a create that found the key present.
var ErrConflict = errors.New("lanes: head changed concurrently")

// Head is a lane's active state, one KV value per lane. Every change is a
// compare-and-swap on the value's revision, and Outbox carries the events of
// that change (see package outbox), committed by the same swap.
type Head struct {
	Lane Lane `json:"lane"`
	// CheckpointID is the active checkpoint.
	CheckpointID string `json:"checkpoint_id"`
	// ParentCheckpointID is the checkpoint this one replaced ("" for a
	// lane's first).
	ParentCheckpointID string `json:"parent_checkpoint_id"`
	// Generation is 1 for a lane's first checkpoint, +1 per activation.
	Generation int64 `json:"generation"`
	// HeadHash is the active checkpoint's hash.
	HeadHash string `json:"head_hash"`
	// SemanticHash is the active checkpoint's semantic hash ("" when none),
	// checked against a request's previous_semantic.
	SemanticHash string `json:"semantic_hash,omitempty"`
	// State is the lane's anti-thrash state (engine.State) as its JSON map.
	State json.RawMessage `json:"state,omitempty"`
	// RootTurnID is the root turn of the request that moved the head: the
	// automatic-compaction count of State is per root turn.
	RootTurnID string `json:"root_turn_id,omitempty"`
	// Outbox holds the records of this change until the relay publishes
	// them; an activated event among them names its checkpoint record
	// (see cite.go).
	Outbox []outbox.Record `json:"outbox"`
	// UpdatedAt is when the head last moved.
	UpdatedAt time.Time `json:"updated_at"`
	// CheckpointBody, in memory only, is the body of CheckpointID as its
	// checkpoint record stores it, when the holder of h has it: Published
	// makes the head's own activated event whole from it without a read.
	CheckpointBody json.RawMessage `json:"-"`
}

// Encode returns h's stored value, the bytes json.Marshal gives for h. It
// does not call json.Marshal, which validates every outbox payload (event
// bodies of tens of kilobytes encoded moments before). Kept by the speed
// rule (docs/architecture.md, "Speed work") on BenchmarkFairProcessor
// (internal/consumer); TestHeadEncodeMatchesMarshal holds Encode to
// json.Marshal on random values of every field.
func (h *Head) Encode() ([]byte, error) {
	value, err := h.appendJSON(make([]byte, 0, 512+h.size()))
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, "encode lane head", err)
	}
	return value, nil
}

func (h *Head) appendJSON(dst []byte) ([]byte, error) {
	dst = append(dst, `{"lane":{"run_agent_id":`...)
	dst = rawjson.AppendString(dst, h.Lane.RunAgentID)
	dst = append(dst, `,"checkpoint_namespace":`...)
	dst = rawjson.AppendString(dst, h.Lane.CheckpointNamespace)
	dst = append(dst, `},"checkpoint_id":`...)
	dst = rawjson.AppendString(dst, h.CheckpointID)
	dst = append(dst, `,"parent_checkpoint_id":`...)
	dst = rawjson.AppendString(dst, h.ParentCheckpointID)
	dst = append(dst, `,"generation":`...)
	dst = strconv.AppendInt(dst, h.Generation, 10)
	dst = append(dst, `,"head_hash":`...)
	dst = rawjson.AppendString(dst, h.HeadHash)
	if h.SemanticHash != "" {
		dst = append(dst, `,"semantic_hash":`...)
		dst = rawjson.AppendString(dst, h.SemanticHash)
	}
	var err error
	if len(h.State) > 0 {
		dst = append(dst, `,"state":`...)
		if dst, err = rawjson.AppendRaw(dst, h.State); err != nil {
			return dst, err
		}
	}
	if h.RootTurnID != "" {
		dst = append(dst, `,"root_turn_id":`...)
		dst = rawjson.AppendString(dst, h.RootTurnID)
	}
	dst = append(dst, `,"outbox":`...)
	if dst, err = outbox.AppendRecords(dst, h.Outbox); err != nil {
		return dst, err
	}
	dst = append(dst, `,"updated_at":`...)
	if dst, err = rawjson.AppendTime(dst, h.UpdatedAt); err != nil {
		return dst, err
	}
	return append(dst, '}'), nil
}

// size estimates the encoded size of h's large members.
func (h *Head) size() int {
	n := len(h.State)
	for _, r := range h.Outbox {
		n += len(r.Payload) + 128
	}
	return n
}

// Store reads and moves lane heads and keeps immutable checkpoints.
// It is safe for concurrent use.
type Store struct {
	heads       jetstream.KeyValue
	checkpoints jetstream.KeyValue
}

// New returns a Store over the heads and checkpoints buckets.
func New(heads, checkpoints jetstream.KeyValue) *Store {
	return &Store{heads: heads, checkpoints: checkpoints}
}

// Head returns the lane's head and its revision, or (nil, 0, nil) for a lane
// that has none yet. A read that fails transiently, as while the bucket's
// stream elects a leader, is retried for up to half a minute within ctx.
func (s *Store) Head(ctx context.Context, lane Lane) (*Head, uint64, error) {
	key, err := lane.Key()
	if err != nil {
		return nil, 0, err
	}
	entry, err := get(ctx, s.heads, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("lanes: read head: %w", err)
	}
	var h Head
	if err := json.Unmarshal(entry.Value(), &h); err != nil {
		return nil, 0, errcode.Wrap(errcode.Internal, "lane head is corrupt", err)
	}
	return &h, entry.Revision(), nil
}

// Advance replaces the lane's head with h if the head is still at
// expectedRevision (0: the lane has no head yet), and returns the new
// revision. A concurrent change yields an error matching ErrConflict; the
// caller re-reads and decides again.
func (s *Store) Advance(ctx context.Context, lane Lane, expectedRevision uint64, h *Head) (uint64, error) {
	key, err := lane.Key()
	if err != nil {
		return 0, err
	}
	value, err := h.Encode()
	if err != nil {
		return 0, err
	}
	var rev uint64
	if expectedRevision == 0 {
		rev, err = s.heads.Create(ctx, key, value)
	} else {
		rev, err = s.heads.Update(ctx, key, value, expectedRevision)
	}
	switch {
	case err == nil:
		return rev, nil
	case errors.Is(err, jetstream.ErrKeyRevisionMismatch), errors.Is(err, jetstream.ErrKeyExists):
		return 0, fmt.Errorf("%w: %w", ErrConflict, err)
	}
	return 0, fmt.Errorf("lanes: advance head: %w", err)
}

// Checkpoint is an immutable checkpoint as stored, with the links that make
// a lane's history a hash chain.
type Checkpoint struct {
	ID string `json:"checkpoint_id"`
	// Hash is the checkpoint's canonical hash (docs/canonical-json.md: created_at removed).
	Hash string `json:"checkpoint_hash"`
	// ParentID and ParentHash name the checkpoint this one replaced ("" for a
	// lane's first).
	ParentID   string `json:"parent_checkpoint_id"`
	ParentHash string `json:"parent_checkpoint_hash"`
	// Generation is the generation the checkpoint has once active.
	Generation int64 `json:"generation"`
	// Body is the checkpoint's persistence map (subjects.md, activated).
	Body json.RawMessage `json:"checkpoint"`
	// The plan of a checkpoint a local summarizer made: the head it
	// activates, and the content hash of the request that made it. For
	// such a request the checkpoint is the plan's only record before the
	// head moves (docs/architecture.md, "The commit path"); checkpoints
	// made through the ledger's stored plan leave these empty.
	Plan        *Head  `json:"plan,omitempty"`
	RequestHash string `json:"request_hash,omitempty"`
	// OutcomeInLedger marks a record that holds no checkpoint: the request
	// of this id has its outcome (or its attempt) in the request ledger.
	// A request a local summarizer compacts reads no ledger on its first
	// delivery; its checkpoint insert finds this marker instead and sends
	// the request to the ledger (docs/architecture.md, "The commit path").
	OutcomeInLedger bool `json:"outcome_in_ledger,omitempty"`
}

// IsMarker reports whether c is a marker, not a checkpoint.
func (c *Checkpoint) IsMarker() bool { return c.OutcomeInLedger }

// keyValue is c's key in the checkpoints bucket and its stored bytes.
func (c *Checkpoint) keyValue() (key string, value []byte, err error) {
	if key, err = IDKey(c.ID); err != nil {
		return "", nil, err
	}
	if value, err = c.appendJSON(make([]byte, 0, 512+c.size())); err != nil {
		return "", nil, errcode.Wrap(errcode.Internal, "encode checkpoint", err)
	}
	return key, value, nil
}

// appendJSON appends the bytes json.Marshal gives for c, without its
// validating scan of the body and of the plan's outbox payloads, all
// encoded moments before (see Head.Encode). Kept by the speed rule on
// BenchmarkFairProcessor (internal/consumer);
// TestCheckpointEncodeMatchesMarshal holds it to json.Marshal.
func (c *Checkpoint) appendJSON(dst []byte) ([]byte, error) {
	dst = append(dst, `{"checkpoint_id":`...)
	dst = rawjson.AppendString(dst, c.ID)
	dst = append(dst, `,"checkpoint_hash":`...)
	dst = rawjson.AppendString(dst, c.Hash)
	dst = append(dst, `,"parent_checkpoint_id":`...)
	dst = rawjson.AppendString(dst, c.ParentID)
	dst = append(dst, `,"parent_checkpoint_hash":`...)
	dst = rawjson.AppendString(dst, c.ParentHash)
	dst = append(dst, `,"generation":`...)
	dst = strconv.AppendInt(dst, c.Generation, 10)
	dst = append(dst, `,"checkpoint":`...)
	dst, err := rawjson.AppendRaw(dst, c.Body)
	if err != nil {
		return dst, err
	}
	if c.Plan != nil {
		dst = append(dst, `,"plan":`...)
		if dst, err = c.Plan.appendJSON(dst); err != nil {
			return dst, err
		}
	}
	if c.RequestHash != "" {
		dst = append(dst, `,"request_hash":`...)
		dst = rawjson.AppendString(dst, c.RequestHash)
	}
	if c.OutcomeInLedger {
		dst = append(dst, `,"outcome_in_ledger":true`...)
	}
	return append(dst, '}'), nil
}

// size estimates the encoded size of c's large members.
func (c *Checkpoint) size() int {
	n := len(c.Body)
	if c.Plan != nil {
		n += 512 + c.Plan.size()
	}
	return n
}

// PutCheckpoint stores c under its id unless a checkpoint is already there:
// then the stored bytes must equal c's bytes exactly, else the error is
// checkpoint_conflict. Inserting the same checkpoint twice is a no-op.
func (s *Store) PutCheckpoint(ctx context.Context, c *Checkpoint) error {
	differing, err := s.insert(ctx, c)
	if err != nil {
		return err
	}
	if differing != nil {
		return errcode.WithDetails(errcode.CheckpointConflict,
			"a different checkpoint is already stored under this id", map[string]any{"checkpoint_id": c.ID})
	}
	return nil
}

// InsertCheckpoint stores c under its id unless a checkpoint is already
// there, and then returns the stored one when its bytes differ from c's
// (nil when c was stored or was already there byte for byte; created
// tells the two apart). It is PutCheckpoint for a caller that decides what
// a differing checkpoint means.
func (s *Store) InsertCheckpoint(ctx context.Context, c *Checkpoint) (stored *Checkpoint, created bool, err error) {
	differing, created, err := s.create(ctx, c)
	if err != nil || differing == nil {
		return nil, created, err
	}
	stored, err = decodeCheckpoint(differing)
	return stored, false, err
}

// insert creates c's key, and when it exists returns the stored value if
// it differs from c's bytes (nil when they are the same).
func (s *Store) insert(ctx context.Context, c *Checkpoint) (differing []byte, err error) {
	differing, _, err = s.create(ctx, c)
	return differing, err
}

// create is insert that also reports whether it created the key.
func (s *Store) create(ctx context.Context, c *Checkpoint) (differing []byte, created bool, err error) {
	key, value, err := c.keyValue()
	if err != nil {
		return nil, false, err
	}
	_, err = s.checkpoints.Create(ctx, key, value)
	if err == nil {
		return nil, true, nil
	}
	if !errors.Is(err, jetstream.ErrKeyExists) {
		return nil, false, fmt.Errorf("lanes: store checkpoint: %w", err)
	}
	entry, err := get(ctx, s.checkpoints, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, false, fmt.Errorf("%w: checkpoint %s deleted while stored", ErrConflict, c.ID)
	}
	if err != nil {
		return nil, false, fmt.Errorf("lanes: verify checkpoint: %w", err)
	}
	if bytes.Equal(entry.Value(), value) {
		return nil, false, nil
	}
	return entry.Value(), false, nil
}

// MarkOutcomeInLedger stores a marker (Checkpoint.OutcomeInLedger) under
// id unless a record is there already, and reports whether it stored it.
func (s *Store) MarkOutcomeInLedger(ctx context.Context, id string) (stored bool, err error) {
	key, value, err := (&Checkpoint{ID: id, OutcomeInLedger: true}).keyValue()
	if err != nil {
		return false, err
	}
	return createIfAbsent(ctx, s.checkpoints, key, value)
}

func createIfAbsent(ctx context.Context, kv jetstream.KeyValue, key string, value []byte) (bool, error) {
	_, err := kv.Create(ctx, key, value)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, jetstream.ErrKeyExists):
		return false, nil
	}
	return false, fmt.Errorf("lanes: store marker: %w", err)
}

// ReplaceCheckpoint stores c under its id whatever is stored there, by
// compare-and-swap on what it read (ErrConflict if that changed
// meanwhile), unless what is there carries a plan (checkpoint_conflict: a
// head may name it). Only the holder of the ledger's stored plan for c may
// call it: heads reach such a checkpoint id only through that plan, so
// bytes that differ from the plan's are a leftover no head refers to (an
// attempt that stored its checkpoint but never recorded its plan), or a
// marker.
func (s *Store) ReplaceCheckpoint(ctx context.Context, c *Checkpoint) error {
	key, value, err := c.keyValue()
	if err != nil {
		return err
	}
	entry, err := s.checkpoints.Get(ctx, key)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		_, err = s.checkpoints.Create(ctx, key, value)
	case err != nil:
		return fmt.Errorf("lanes: read checkpoint: %w", err)
	case bytes.Equal(entry.Value(), value):
		return nil
	case holdsPlan(entry.Value()):
		return errcode.WithDetails(errcode.CheckpointConflict,
			"a checkpoint with another plan is stored under this id", map[string]any{"checkpoint_id": c.ID})
	default:
		_, err = s.checkpoints.Update(ctx, key, value, entry.Revision())
	}
	if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return fmt.Errorf("%w: checkpoint %s: %w", ErrConflict, c.ID, err)
	}
	if err != nil {
		return fmt.Errorf("lanes: replace checkpoint: %w", err)
	}
	return nil
}

// GetCheckpoint returns the checkpoint stored under id, or (nil, nil). It
// retries transient failures as Head does.
func (s *Store) GetCheckpoint(ctx context.Context, id string) (*Checkpoint, error) {
	key, err := IDKey(id)
	if err != nil {
		return nil, err
	}
	entry, err := get(ctx, s.checkpoints, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("lanes: read checkpoint: %w", err)
	}
	return decodeCheckpoint(entry.Value())
}

// holdsPlan reports whether a stored checkpoint record carries a plan.
func holdsPlan(value []byte) bool {
	c, err := decodeCheckpoint(value)
	return err == nil && c.Plan != nil
}

func decodeCheckpoint(value []byte) (*Checkpoint, error) {
	var c Checkpoint
	if err := json.Unmarshal(value, &c); err != nil {
		return nil, errcode.Wrap(errcode.Internal, "stored checkpoint is corrupt", err)
	}
	if c.Plan != nil && c.Plan.CheckpointID == c.ID {
		c.Plan.CheckpointBody = c.Body // the head it activates names it
	}
	return &c, nil
}

// InHistory reports whether id is the head's checkpoint or one of its
// ancestors, following parent links at most limit steps back. Recovery uses
// it to tell "my checkpoint was activated and later superseded" from "my
// parent was replaced by someone else".
func (s *Store) InHistory(ctx context.Context, h *Head, id string, limit int) (bool, error) {
	if h == nil {
		return false, nil
	}
	cur := h.CheckpointID
	for range limit {
		if cur == "" {
			return false, nil
		}
		if cur == id {
			return true, nil
		}
		c, err := s.GetCheckpoint(ctx, cur)
		if err != nil || c == nil {
			return false, err
		}
		cur = c.ParentID
	}
	return false, nil
}
