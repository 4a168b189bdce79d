// Package inspect answers the read-only questions asked of Cairn about its
// lanes and requests, for the command line and the NATS service alike: what
// a lane's head holds, and what the processor would do with a request.
package inspect

import (
	"context"
	"encoding/json"
	"time"

	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/internal/lanes"
)

// LaneView is a lane's head and a digest of its active checkpoint (the
// checkpoint itself when asked for in full): what `lane show` prints.
type LaneView struct {
	Lane               lanes.Lane `json:"lane"`
	Key                string     `json:"key"`
	Revision           uint64     `json:"revision"`
	Generation         int64      `json:"generation"`
	CheckpointID       string     `json:"checkpoint_id"`
	CheckpointHash     string     `json:"checkpoint_hash"`
	ParentCheckpointID *string    `json:"parent_checkpoint_id"` // null for a lane's first checkpoint
	SemanticHash       string     `json:"semantic_hash,omitempty"`
	PendingEvents      int        `json:"pending_events"`
	UpdatedAt          time.Time  `json:"updated_at"`
	// Checkpoint is nil when the active checkpoint is not in the
	// checkpoints bucket.
	Checkpoint *CheckpointInfo `json:"checkpoint,omitempty"`
}

// CheckpointInfo is the part of a checkpoint a person checks first.
type CheckpointInfo struct {
	Trigger          string `json:"trigger"`
	Representation   string `json:"representation"`
	TokensBefore     int64  `json:"tokens_before"`
	TokensAfter      int64  `json:"tokens_after"`
	TokensReclaimed  int64  `json:"tokens_reclaimed"`
	AccountingMethod string `json:"accounting_method"`
	// AccountingCounter is the count the method stood on (utf8_bytes, an
	// encoding such as o200k_base, approx_v1, reported_usage; subjects.md,
	// Token accounting); null in a checkpoint that does not record it.
	AccountingCounter *string        `json:"accounting_counter"`
	RetainedEvents    int            `json:"retained_events"`
	Semantic          map[string]int `json:"semantic_entries,omitempty"`
	// Objective is the texts of the summary's objective entries.
	Objective []string         `json:"objective,omitempty"`
	CreatedAt string           `json:"created_at"`
	Full      *json.RawMessage `json:"full,omitempty"`
}

// Lane reads the lane's head and its active checkpoint. A lane without a
// head fails with lane_not_found.
func Lane(ctx context.Context, store *lanes.Store, lane lanes.Lane, full bool) (*LaneView, error) {
	key, err := lane.Key()
	if err != nil {
		return nil, err
	}
	head, rev, err := store.Head(ctx, lane)
	if err != nil {
		return nil, err
	}
	if head == nil {
		return nil, errcode.WithDetails(errcode.LaneNotFound, "the lane has no head yet",
			map[string]any{"run_agent_id": lane.RunAgentID, "checkpoint_namespace": lane.CheckpointNamespace, "key": key})
	}
	view := &LaneView{
		Lane: lane, Key: key, Revision: rev, Generation: head.Generation,
		CheckpointID: head.CheckpointID, CheckpointHash: head.HeadHash,
		ParentCheckpointID: optional(head.ParentCheckpointID), SemanticHash: head.SemanticHash,
		PendingEvents: len(head.Outbox), UpdatedAt: head.UpdatedAt.UTC().Truncate(time.Second),
	}
	cp, err := store.GetCheckpoint(ctx, head.CheckpointID)
	if err != nil {
		return nil, err
	}
	if cp != nil {
		if view.Checkpoint, err = digestCheckpoint(cp.Body, full); err != nil {
			return nil, err
		}
	}
	return view, nil
}

// digestCheckpoint reads the fields of CheckpointInfo from a stored body.
func digestCheckpoint(body json.RawMessage, full bool) (*CheckpointInfo, error) {
	var c struct {
		CheckpointInfo
		RetainedEventIDs []string                   `json:"retained_event_ids"`
		Semantic         map[string]json.RawMessage `json:"semantic"`
	}
	if err := json.Unmarshal(body, &c); err != nil {
		return nil, errcode.Wrap(errcode.Internal, "stored checkpoint is corrupt", err)
	}
	info := c.CheckpointInfo
	info.RetainedEvents = len(c.RetainedEventIDs)
	info.Objective = objectiveTexts(c.Semantic["objective"])
	for name, raw := range c.Semantic {
		var list []json.RawMessage
		if json.Unmarshal(raw, &list) == nil && len(list) > 0 {
			if info.Semantic == nil {
				info.Semantic = map[string]int{}
			}
			info.Semantic[name] = len(list)
		}
	}
	if full {
		info.Full = &body
	}
	return &info, nil
}

// optional is s, or nil when s is empty.
func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// objectiveTexts reads the text of each objective entry of a stored
// semantic (none when it has no objective).
func objectiveTexts(raw json.RawMessage) []string {
	var entries []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &entries) != nil {
		return nil
	}
	texts := make([]string, 0, len(entries))
	for _, e := range entries {
		texts = append(texts, e.Text)
	}
	return texts
}
