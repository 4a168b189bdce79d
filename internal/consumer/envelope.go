package consumer

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/cairnhq/cairn/internal/errcode"
	"github.com/cairnhq/cairn/internal/lanes"
)

// envelope is the part of Request v1 (wire.md) the pipeline itself reads:
// identity, lane, fences, claim check, deadline and harvest routing. The
// engine decodes the whole request strictly; this view is lenient so that a
// failed event can still name the request and lane of a malformed message.
type envelope struct {
	V                        *int            `json:"v"`
	RequestID                string          `json:"request_id"`
	Trigger                  string          `json:"trigger"`
	ThreadID                 string          `json:"thread_id"`
	RunAgentID               string          `json:"run_agent_id"`
	CheckpointNamespace      string          `json:"checkpoint_namespace"`
	ParentCheckpointID       *string         `json:"parent_checkpoint_id"`
	PreviousSemantic         json.RawMessage `json:"previous_semantic"`
	Events                   json.RawMessage `json:"events"`
	EventsObject             *string         `json:"events_object"`
	DeadlineAt               *string         `json:"deadline_at"`
	Scope                    *Scope          `json:"scope"`
	Harvest                  *bool           `json:"harvest"`
	NewTokensSinceCompaction *int64          `json:"new_tokens_since_compaction"`

	deadline time.Time // parsed DeadlineAt; zero when none
}

// Scope is where harvested facts go (wire.md).
type Scope struct {
	Kind string `json:"kind"`
	ID   string `json:"id"`
}

func (e *envelope) lane() lanes.Lane {
	return lanes.Lane{RunAgentID: e.RunAgentID, CheckpointNamespace: e.CheckpointNamespace}
}

func (e *envelope) parent() string {
	if e.ParentCheckpointID == nil {
		return ""
	}
	return *e.ParentCheckpointID
}

func (e *envelope) harvestScope() Scope {
	if e.Scope != nil && e.Scope.Kind != "" && e.Scope.ID != "" {
		return *e.Scope
	}
	return Scope{Kind: "thread", ID: e.ThreadID}
}

func (e *envelope) wantsHarvest() bool { return e.Harvest == nil || *e.Harvest }

func hasJSONValue(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && !bytes.Equal(t, []byte("null"))
}

// decodeEnvelope reads the pipeline's view of a request and checks what the
// pipeline depends on before the engine sees it: the version, the ids that
// key the ledger and the lane, exactly one source of events, and a parseable
// deadline.
func decodeEnvelope(body []byte) (*envelope, error) {
	var e envelope
	if err := json.Unmarshal(body, &e); err != nil {
		return nil, errcode.Wrap(errcode.InvalidRequest, "compaction request must be a JSON object", err)
	}
	if e.V == nil {
		return &e, errcode.New(errcode.InvalidRequest, "required compaction request fields are missing")
	}
	if *e.V != 1 {
		return &e, errcode.WithDetails(errcode.UnsupportedVersion, "unsupported request version", map[string]any{"v": *e.V})
	}
	if _, err := lanes.IDKey(e.RequestID); err != nil {
		return &e, errcode.New(errcode.InvalidRequest, "compaction request identities are invalid")
	}
	if _, err := e.lane().Key(); err != nil {
		return &e, errcode.New(errcode.InvalidRequest, "compaction request identities are invalid")
	}
	inline, object := hasJSONValue(e.Events), e.EventsObject != nil
	if inline == object {
		return &e, errcode.New(errcode.InvalidRequest, "exactly one of events and events_object is required")
	}
	if e.DeadlineAt != nil {
		t, err := time.Parse(time.RFC3339, *e.DeadlineAt)
		if err != nil {
			return &e, errcode.Wrap(errcode.InvalidRequest, "deadline_at is not RFC 3339", err)
		}
		e.deadline = t
	}
	return &e, nil
}
