package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/internal/engine"
)

// runCompactCmd runs `processor compact args...` in-process.
func runCompactCmd(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), append([]string{"compact"}, args...), stdio{in: strings.NewReader(stdin), out: &out, err: &errOut})
	return code, out.String(), errOut.String()
}

// exampleFile copies a shipped example request into a temporary directory.
func exampleFile(t *testing.T, name string, edit func(map[string]any)) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "examples", name))
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		edit(m)
		if data, err = json.Marshal(m); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func decodeOutput(t *testing.T, stdout string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(stdout), &m); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, stdout)
	}
	return m
}

// emptySummarizer answers with a valid semantic that only declares coverage.
type emptySummarizer struct{ calls int }

func (s *emptySummarizer) Summarize(_ context.Context, p engine.Payload) (engine.Summary, error) {
	s.calls++
	return engine.Summary{Output: map[string]any{
		"version": 1, "objective": []any{}, "user_requests": []any{}, "constraints": []any{}, "decisions": []any{},
		"progress":         map[string]any{"completed": []any{}, "active": []any{}, "blocked": []any{}, "pending": []any{}},
		"critical_context": []any{}, "errors": []any{}, "artifact_refs": []any{},
		"coverage": map[string]any{"first_chat_seq": p.CoveredRange.FirstChatSeq, "last_chat_seq": p.CoveredRange.LastChatSeq},
	}}, nil
}

// failingSummarizer fails every call as a refusing model endpoint would.
type failingSummarizer struct{}

func (failingSummarizer) Summarize(context.Context, engine.Payload) (engine.Summary, error) {
	return engine.Summary{}, errcode.New(errcode.ProviderError, "model endpoint refused the call")
}

func withSummarizer(t *testing.T, f func(name string, m modelFlags) (engine.Summarizer, error)) {
	t.Helper()
	saved := summarizerFor
	summarizerFor = f
	t.Cleanup(func() { summarizerFor = saved })
}

func TestCompactPrunedExampleNeedsNoModel(t *testing.T) {
	code, stdout, stderr := runCompactCmd(t, "", exampleFile(t, "small-lane.json", nil))
	if code != 0 {
		t.Fatalf("exit %d: %s %s", code, stdout, stderr)
	}
	out := decodeOutput(t, stdout)
	if out["status"] != "pruned" || out["checkpoint"].(map[string]any)["representation"] != "pruned" {
		t.Fatalf("output %v", out)
	}
	for _, key := range []string{"tokens_before", "tokens_after", "tokens_reclaimed", "source_event_count", "retained_event_count", "retained_event_ids", "artifact_ids", "provider_usage"} {
		if _, ok := out[key]; !ok {
			t.Errorf("result lacks %s", key)
		}
	}
}

func TestCompactWithoutSummarizerIsATypedError(t *testing.T) {
	withSummarizer(t, func(string, modelFlags) (engine.Summarizer, error) { return failingSummarizer{}, nil })
	code, stdout, _ := runCompactCmd(t, "", exampleFile(t, "coding-agent-lane.json", nil))
	if code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	e := decodeOutput(t, stdout)["error"].(map[string]any)
	if e["code"] != "compaction_provider_error" || !strings.Contains(e["message"].(string), "model endpoint refused") {
		t.Fatalf("error %v", e)
	}
}

func TestCompactUsesTheNamedSummarizer(t *testing.T) {
	s := &emptySummarizer{}
	var asked []string
	withSummarizer(t, func(name string, _ modelFlags) (engine.Summarizer, error) {
		asked = append(asked, name)
		return s, nil
	})
	path := exampleFile(t, "coding-agent-lane.json", nil)
	code, stdout, stderr := runCompactCmd(t, "", "--summarizer", "model-x", path)
	if code != 0 || decodeOutput(t, stdout)["status"] != "compacted" || s.calls == 0 {
		t.Fatalf("exit %d calls %d: %.300s %s", code, s.calls, stdout, stderr)
	}
	t.Setenv("CAIRN_SUMMARIZER", "from-env")
	data, _ := os.ReadFile(path)
	if code, _, stderr := runCompactCmd(t, string(data), "-"); code != 0 {
		t.Fatalf("stdin: exit %d %s", code, stderr)
	}
	if strings.Join(asked, ",") != "model-x,from-env" {
		t.Fatalf("summarizers asked for: %v", asked)
	}
	withSummarizer(t, func(string, modelFlags) (engine.Summarizer, error) { return nil, errors.New("unknown summarizer") })
	if code, _, stderr := runCompactCmd(t, "", path); code != 2 || !strings.Contains(stderr, "unknown summarizer") {
		t.Fatalf("unknown summarizer: exit %d %s", code, stderr)
	}
}

func TestCompactExitCodes(t *testing.T) {
	dir := t.TempDir()
	notJSON := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(notJSON, []byte(`{"v":1,`), 0o600); err != nil {
		t.Fatal(err)
	}
	claimCheck := exampleFile(t, "small-lane.json", func(m map[string]any) {
		delete(m, "events")
		m["events_object"] = "lanes/agent-coder/root/1"
	})
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"help", []string{"--help"}, 0, "-summarizer"},
		{"bad flag", []string{"--colour"}, 2, "flag provided but not defined"},
		{"two files", []string{"a", "b"}, 2, "at most one FILE"},
		{"missing file", []string{filepath.Join(dir, "absent.json")}, 2, "no such file"},
		{"events object", []string{claimCheck}, 2, "events_object"},
		{"not JSON", []string{notJSON}, 1, `"code": "invalid_compaction_request"`},
		{"version", []string{exampleFile(t, "small-lane.json", func(m map[string]any) { m["v"] = 2 })}, 1, `"code": "unsupported_version"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCompactCmd(t, "", tc.args...)
			if code != tc.code || !strings.Contains(stdout+stderr, tc.want) {
				t.Fatalf("exit %d (want %d), output lacks %q:\n%s\n%s", code, tc.code, tc.want, stdout, stderr)
			}
		})
	}
}

// TestCompactShippedExampleOffline runs the README's quick start with the
// summarizer the binary is built with (offline by default).
func TestCompactShippedExampleOffline(t *testing.T) {
	code, stdout, stderr := runCompactCmd(t, "", exampleFile(t, "coding-agent-lane.json", nil))
	if code != 0 {
		t.Fatalf("exit %d: %.500s %s", code, stdout, stderr)
	}
	out := decodeOutput(t, stdout)
	if out["status"] != "compacted" || out["tokens_after"].(float64) >= out["tokens_before"].(float64) {
		t.Fatalf("status %v tokens %v -> %v", out["status"], out["tokens_before"], out["tokens_after"])
	}
}
