package engine

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/cairnhq/cairn/errcode"
)

// A panic inside the engine itself (here a CountCache not made by
// NewCountCache) ends as compaction_failed whose details give the reason,
// never as a crash of the caller.
func TestEnginePanicIsCompactionFailedWithReason(t *testing.T) {
	data, err := os.ReadFile("../../examples/coding-agent-lane.json")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	m["model_profile"].(map[string]any)["tokenizer"] = "o200k_base"
	body, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	req, err := DecodeRequest(body)
	if err != nil {
		t.Fatal(err)
	}
	_, err = CompactCounting(context.Background(), req, nil, fixedNow, &CountCache{})
	e := errcode.As(err)
	if e == nil || e.Code != errcode.CompactionFailed {
		t.Fatalf("err = %v, want %s", err, errcode.CompactionFailed)
	}
	if reason, _ := e.Details["reason"].(string); reason == "" {
		t.Fatalf("details %v do not give the reason", e.Details)
	}
}
