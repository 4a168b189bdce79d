// Package facts harvests durable, low-trust facts from the history a compaction cut.
package facts

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/events"
)

// The wire versions of a harvest job. A transcript job (version 1) carries
// its rendered transcript. A pointer job (version 2), what Cairn's
// processor writes, names the request that made the cut by its stream
// sequence instead, and the worker renders the transcript from that
// request's events through Config.Requests: the transcript would otherwise
// be most of the bytes a compaction writes, twice (the lane head's outbox
// and the job stream).
const (
	JobVersion        = 1
	PointerJobVersion = 2
)

// Bounds of a job's identifiers, in bytes.
const (
	maxIDBytes        = 200
	maxScopeKindBytes = 100
	maxEntryIDs       = 10000
)

// Scope says where harvested facts are stored (subjects.md): a kind such as
// "thread", "user" or "tenant", and an id within it.
type Scope = events.Scope

// Entry is one cut event of a lane in its original, unprojected form.
type Entry struct {
	ID      string `json:"id"`
	Role    string `json:"role"`
	Content string `json:"content"`
	// ToolName names the tool of a tool entry.
	ToolName string `json:"tool_name,omitempty"`
}

// Job is the conversation.memory.harvest payload (subjects.md). Transcript is
// already rendered and redacted by the producer; Entries, when present, are
// the same cut entries. Extractors redact what they read again: the
// heuristic each user and assistant entry, a model each window.
type Job struct {
	V              int      `json:"v"`
	ConversationID string   `json:"conversation_id"`
	HeadEntryID    string   `json:"head_entry_id"`
	EntryIDs       []string `json:"entry_ids"`
	Scope          Scope    `json:"scope"`
	Transcript     string   `json:"transcript,omitempty"`
	Entries        []Entry  `json:"entries,omitempty"`
	// RequestSeq, in a pointer job, is the sequence in COMPACT_REQUESTS of
	// the request whose compaction cut EntryIDs (request_id = HeadEntryID).
	RequestSeq uint64 `json:"request_seq,omitempty"`
}

// BuildPointerJob returns the pointer job of one compaction: the cut
// events by id, and the request they are read from when the job runs.
func BuildPointerJob(conversationID, headEntryID string, scope Scope, entryIDs []string, requestSeq uint64) Job {
	return Job{
		V: PointerJobVersion, ConversationID: conversationID, HeadEntryID: headEntryID,
		EntryIDs: entryIDs, Scope: scope, RequestSeq: requestSeq,
	}
}

// MsgID is the job's Nats-Msg-Id: unique on (conversation_id, head_entry_id),
// so a repeated compaction of the same cut enqueues one job.
func (j Job) MsgID() string {
	return "harvest:" + j.ConversationID + ":" + j.HeadEntryID
}

// Validate reports the first field of j that is missing or out of bounds, as
// an invalid_compaction_request error.
func (j Job) Validate() error {
	bad := func(field, why string) error {
		return errcode.WithDetails(errcode.InvalidRequest, "harvest job: "+field+" "+why, map[string]any{"field": field})
	}
	switch {
	case j.V != JobVersion && j.V != PointerJobVersion:
		return errcode.WithDetails(errcode.UnsupportedVersion, fmt.Sprintf("harvest job: unsupported version %d", j.V), map[string]any{"v": j.V})
	case j.V == PointerJobVersion && j.RequestSeq == 0:
		return bad("request_seq", "must name the request of a version 2 job")
	case j.V == PointerJobVersion && (j.Transcript != "" || len(j.Entries) > 0):
		return bad("transcript", "must be absent from a version 2 job: it is read from the request")
	case j.V == JobVersion && j.RequestSeq != 0:
		return bad("request_seq", "belongs to version 2 jobs only")
	case j.ConversationID == "" || len(j.ConversationID) > maxIDBytes:
		return bad("conversation_id", fmt.Sprintf("must be 1..%d bytes", maxIDBytes))
	case j.HeadEntryID == "" || len(j.HeadEntryID) > maxIDBytes:
		return bad("head_entry_id", fmt.Sprintf("must be 1..%d bytes", maxIDBytes))
	case len(j.EntryIDs) > maxEntryIDs:
		return bad("entry_ids", fmt.Sprintf("must hold at most %d ids", maxEntryIDs))
	case len(j.Entries) > maxEntryIDs:
		return bad("entries", fmt.Sprintf("must hold at most %d entries", maxEntryIDs))
	}
	return validateScope(j.Scope)
}

func validateScope(s Scope) error {
	if s.Kind == "" || len(s.Kind) > maxScopeKindBytes || s.ID == "" || len(s.ID) > maxIDBytes {
		return errcode.WithDetails(errcode.InvalidRequest,
			fmt.Sprintf("scope: kind must be 1..%d bytes and id 1..%d bytes", maxScopeKindBytes, maxIDBytes),
			map[string]any{"field": "scope"})
	}
	return nil
}

// DecodeJob decodes and validates a harvest job. Unknown fields are rejected
// so that a producer's typo never silently changes what is harvested.
func DecodeJob(data []byte) (Job, error) {
	var j Job
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return Job{}, errcode.Wrap(errcode.InvalidRequest, "harvest job is not valid JSON", err)
	}
	if dec.More() {
		return Job{}, errcode.New(errcode.InvalidRequest, "harvest job has trailing data")
	}
	return j, j.Validate()
}
