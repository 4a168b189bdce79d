package consumer

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/internal/facts"
)

// The harvest job holds the cut events only, in original form, with
// injected memory removed and secrets redacted, and decodes as the harvester
// expects.
func TestHarvestRecord(t *testing.T) {
	events, _ := json.Marshal([]map[string]any{
		{"event_id": "e1", "role": "user", "content": "keep <agent_memory>old memory</agent_memory>this; password=hunter22"},
		{"event_id": "e2", "role": "tool", "content": "found it", "tool": map[string]any{"name": "grep"}},
		{"event_id": "e3", "role": "assistant", "content": "retained, not cut"},
	})
	req := &envelope{Correlation: engine.Correlation{ThreadID: "t", RunAgentID: "a", CheckpointNamespace: "n"}}
	rec, err := buildHarvestRecord(req, "cp", laneEvents{raw: events}, []string{"e1", "e2"}, "tp")
	if err != nil {
		t.Fatal(err)
	}
	job, err := facts.DecodeJob(rec.Payload)
	if err != nil {
		t.Fatal(err)
	}
	if rec.EventID != job.MsgID() || rec.EventID != "harvest:t:cp" || job.Scope.Kind != "thread" || job.Scope.ID != "t" {
		t.Fatalf("job identity: %s %+v", rec.EventID, job)
	}
	if len(job.EntryIDs) != 2 || strings.Contains(job.Transcript, "old memory") ||
		strings.Contains(job.Transcript, "retained") || strings.Contains(job.Transcript, "hunter22") {
		t.Fatalf("transcript: %q", job.Transcript)
	}
	if !strings.Contains(job.Transcript, "grep") {
		t.Fatalf("tool entry lacks its tool name: %q", job.Transcript)
	}
	if rec.Headers["traceparent"] != "tp" {
		t.Fatalf("headers: %v", rec.Headers)
	}
}

func TestHarvestScopeFromRequest(t *testing.T) {
	events, _ := json.Marshal([]map[string]any{{"event_id": "e1", "role": "user", "content": "x"}})
	req := &envelope{Correlation: engine.Correlation{ThreadID: "t"}, Scope: &engine.Scope{Kind: "user", ID: "u1"}}
	rec, err := buildHarvestRecord(req, "cp", laneEvents{raw: events}, []string{"e1"}, "")
	if err != nil {
		t.Fatal(err)
	}
	job, err := facts.DecodeJob(rec.Payload)
	if err != nil || job.Scope.Kind != "user" || job.Scope.ID != "u1" {
		t.Fatalf("scope: %+v %v", job.Scope, err)
	}
}
