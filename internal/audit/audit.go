// Package audit verifies every lane's checkpoint history as a hash chain, from the event stream and the stores.
package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/cairnhq/cairn/canonical"
	"github.com/cairnhq/cairn/events"
	"github.com/cairnhq/cairn/internal/lanes"
	"github.com/cairnhq/cairn/streamread"
	"github.com/nats-io/nats.go/jetstream"
)

// Break is one place where a lane's history does not verify.
type Break struct {
	Lane       lanes.Lane `json:"lane"`
	Generation int64      `json:"generation"`
	Checkpoint string     `json:"checkpoint_id"`
	Reason     string     `json:"reason"`
}

func (b Break) String() string {
	return fmt.Sprintf("%s/%s generation %d (%s): %s", b.Lane.RunAgentID, b.Lane.CheckpointNamespace, b.Generation, b.Checkpoint, b.Reason)
}

// LaneReport is the verdict on one lane.
type LaneReport struct {
	Lane        lanes.Lane `json:"lane"`
	Generations int64      `json:"generations"`
	HeadID      string     `json:"head_checkpoint_id"`
	Breaks      []Break    `json:"breaks"`
}

// Report is the verdict on every lane found.
type Report struct {
	Lanes  []LaneReport `json:"lanes"`
	Events int          `json:"activated_events"`
	Breaks int          `json:"breaks"`
}

// OK reports whether every lane verified.
func (r Report) OK() bool { return r.Breaks == 0 }

// Verify reads every activated event, groups them by lane and checks, for
// each lane: each event's checkpoint hashes to its checkpoint_hash;
// generations run 1..n without gaps; each generation names the previous
// one's id and hash as its parent; the stored checkpoint matches the event
// byte for byte in hash and parent; and the lane head points at generation n.
func Verify(ctx context.Context, js jetstream.JetStream, store *lanes.Store) (Report, error) {
	byLane, n, err := readActivations(ctx, js)
	if err != nil {
		return Report{}, err
	}
	report := Report{Events: n}
	keys := make([]lanes.Lane, 0, len(byLane))
	for l := range byLane {
		keys = append(keys, l)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].RunAgentID != keys[j].RunAgentID {
			return keys[i].RunAgentID < keys[j].RunAgentID
		}
		return keys[i].CheckpointNamespace < keys[j].CheckpointNamespace
	})
	for _, l := range keys {
		lr, err := verifyLane(ctx, store, l, byLane[l])
		if err != nil {
			return report, err
		}
		report.Breaks += len(lr.Breaks)
		report.Lanes = append(report.Lanes, lr)
	}
	return report, nil
}

// readActivations reads the activated events up to the stream's end when
// the read began, keeping one per event id (a relay may republish after the
// dedupe window).
func readActivations(ctx context.Context, js jetstream.JetStream) (map[lanes.Lane][]*events.Activated, int, error) {
	byLane := map[lanes.Lane][]*events.Activated{}
	seen := map[string]bool{}
	count := 0
	o := streamread.Options{Stream: events.StreamEvents, Config: jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{events.SubjectActivated}, DeliverPolicy: jetstream.DeliverAllPolicy,
	}}
	err := streamread.Read(ctx, js, o, func(msg jetstream.Msg, md *jetstream.MsgMetadata) error {
		var a events.Activated
		if err := json.Unmarshal(msg.Data(), &a); err != nil {
			return fmt.Errorf("event #%d is not an activation: %w", md.Sequence.Stream, err)
		}
		if seen[a.EventID] {
			return nil
		}
		seen[a.EventID] = true
		count++
		l := lanes.Lane{RunAgentID: a.RunAgentID, CheckpointNamespace: a.CheckpointNamespace}
		byLane[l] = append(byLane[l], &a)
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("audit: read events: %w", err)
	}
	return byLane, count, nil
}

func verifyLane(ctx context.Context, store *lanes.Store, l lanes.Lane, acts []*events.Activated) (LaneReport, error) {
	sort.SliceStable(acts, func(i, j int) bool { return acts[i].Generation < acts[j].Generation })
	lr := LaneReport{Lane: l, Generations: int64(len(acts)), Breaks: []Break{}}
	brk := func(a *events.Activated, format string, args ...any) {
		lr.Breaks = append(lr.Breaks, Break{Lane: l, Generation: a.Generation, Checkpoint: a.CheckpointID, Reason: fmt.Sprintf(format, args...)})
	}
	var prev *events.Activated
	for i, a := range acts {
		if want := int64(i + 1); a.Generation != want {
			brk(a, "generation %d where %d was expected (a gap or a doubled head)", a.Generation, want)
		}
		if got, err := CheckpointHash(a.Checkpoint); err != nil || got != a.CheckpointHash {
			brk(a, "the event's checkpoint hashes to %s, not its checkpoint_hash %s (%v)", got, a.CheckpointHash, err)
		}
		checkParent(a, prev, brk)
		if err := checkStored(ctx, store, a, brk); err != nil {
			return lr, err
		}
		prev = a
	}
	if prev != nil {
		head, _, err := store.Head(ctx, l)
		if err != nil {
			return lr, fmt.Errorf("audit: head of %s/%s: %w", l.RunAgentID, l.CheckpointNamespace, err)
		}
		switch {
		case head == nil:
			brk(prev, "the lane has activations but no head")
		case head.CheckpointID != prev.CheckpointID || head.Generation != prev.Generation || head.HeadHash != prev.CheckpointHash:
			brk(prev, "the head points at %s generation %d hash %s, not the last activation", head.CheckpointID, head.Generation, head.HeadHash)
		default:
			lr.HeadID = head.CheckpointID
		}
	}
	return lr, nil
}

func checkParent(a, prev *events.Activated, brk func(*events.Activated, string, ...any)) {
	parentID, parentHash := deref(a.ParentCheckpointID), deref(a.ParentCheckpointHash)
	if prev == nil {
		if parentID != "" || parentHash != "" {
			brk(a, "the first generation names a parent %s", parentID)
		}
		return
	}
	if parentID != prev.CheckpointID {
		brk(a, "parent is %s, but generation %d is %s", parentID, prev.Generation, prev.CheckpointID)
	}
	if parentHash != prev.CheckpointHash {
		brk(a, "parent hash %s does not match generation %d's hash %s", parentHash, prev.Generation, prev.CheckpointHash)
	}
}

func checkStored(ctx context.Context, store *lanes.Store, a *events.Activated, brk func(*events.Activated, string, ...any)) error {
	c, err := store.GetCheckpoint(ctx, a.CheckpointID)
	if err != nil {
		return fmt.Errorf("audit: checkpoint %s: %w", a.CheckpointID, err)
	}
	if c == nil {
		brk(a, "the checkpoint is not in the store")
		return nil
	}
	got, err := CheckpointHash(c.Body)
	switch {
	case err != nil || got != a.CheckpointHash:
		brk(a, "the stored checkpoint hashes to %s, not %s (tampered?)", got, a.CheckpointHash)
	case c.Hash != a.CheckpointHash:
		brk(a, "the stored checkpoint records hash %s, not %s", c.Hash, a.CheckpointHash)
	case c.ParentHash != deref(a.ParentCheckpointHash):
		brk(a, "the stored checkpoint records parent hash %s, not %s", c.ParentHash, deref(a.ParentCheckpointHash))
	}
	return nil
}

// CheckpointHash recomputes a checkpoint_hash from a checkpoint's persistence
// map: the canonical hash of the map without created_at.
func CheckpointHash(body json.RawMessage) (string, error) {
	v, err := canonical.Decode(body)
	if err != nil {
		return "", err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return "", errors.New("checkpoint is not an object")
	}
	delete(m, "created_at")
	return canonical.Hash(m)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
