package consumer

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestRedact(t *testing.T) {
	cases := map[string]string{
		"key sk-abcdefghijklmnop1234 here":            "[REDACTED:openai_key]",
		"aws AKIAABCDEFGHIJKLMNOP":                    "[REDACTED:aws_access_key]",
		"gh ghp_abcdefghijklmnopqrstuvwxyz0123456789": "[REDACTED:github_token]",
		"password=hunter22 ok":                        "password=[REDACTED:secret]",
		"db postgres://bob:s3cret@host/db":            "bob:[REDACTED:url_password]@",
	}
	for in, want := range cases {
		got := redact(in)
		if !strings.Contains(got, want) {
			t.Errorf("redact(%q) = %q, want it to contain %q", in, got, want)
		}
	}
	if got := redact("nothing secret here"); got != "nothing secret here" {
		t.Errorf("changed clean text: %q", got)
	}
}

func TestHarvestTranscript(t *testing.T) {
	long := strings.Repeat("é", 2000)
	events, _ := json.Marshal([]map[string]any{
		{"event_id": "e1", "role": "user", "content": "keep <agent_memory>old memory</agent_memory>this"},
		{"event_id": "e2", "role": "tool", "content": long, "tool": map[string]any{"name": "grep"}},
		{"event_id": "e3", "role": "assistant", "content": "retained, not cut"},
	})
	req := &envelope{ThreadID: "t", RunAgentID: "a", CheckpointNamespace: "n"}
	rec, err := buildHarvestRecord(req, "cp", events, []string{"e1", "e2"}, "")
	if err != nil {
		t.Fatal(err)
	}
	var job harvestJob
	if err := json.Unmarshal(rec.Payload, &job); err != nil {
		t.Fatal(err)
	}
	if rec.EventID != "harvest:t:cp" || job.Scope != (Scope{Kind: "thread", ID: "t"}) {
		t.Fatalf("job identity: %s %+v", rec.EventID, job.Scope)
	}
	if strings.Contains(job.Transcript, "old memory") || strings.Contains(job.Transcript, "retained") {
		t.Fatalf("transcript holds injected memory or retained events: %q", job.Transcript[:80])
	}
	lines := strings.Split(job.Transcript, "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[1], "tool grep: ") || utf8.RuneCountInString(lines[1]) != maxEntryRunes {
		t.Fatalf("entries not rendered or bounded: %d lines, second has %d runes", len(lines), utf8.RuneCountInString(lines[len(lines)-1]))
	}
	if !utf8.ValidString(job.Transcript) {
		t.Fatal("transcript split a UTF-8 sequence")
	}
}

func TestKeepNewest(t *testing.T) {
	if got := keepNewest([]string{"aaaa", "bbbb", "cccc"}, 10); got != "bbbb\ncccc" {
		t.Fatalf("got %q", got)
	}
	if got := keepNewest([]string{"abcdefghij"}, 4); got != "ghij" {
		t.Fatalf("got %q", got)
	}
}
