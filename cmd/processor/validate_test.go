package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/internal/topology"
	"github.com/cairnhq/cairn/testenv"
)

// runCLI runs `processor args...` in-process.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, stdio{in: strings.NewReader(""), out: &out, err: &errOut})
	return code, out.String(), errOut.String()
}

// validateJSON runs `request validate --json FILE` and decodes its line.
func validateJSON(t *testing.T, path string, flags ...string) (int, validation) {
	t.Helper()
	code, stdout, stderr := runCLI(t, append(append([]string{"request", "validate", "--json"}, flags...), path)...)
	var v validation
	if err := json.Unmarshal([]byte(stdout), &v); err != nil {
		t.Fatalf("exit %d, stdout is not one JSON object (%v): %q %q", code, err, stdout, stderr)
	}
	return code, v
}

func TestRequestValidateValidExamples(t *testing.T) {
	code, v := validateJSON(t, exampleFile(t, "small-lane.json", nil))
	if code != 0 || !v.OK || v.Status != "pruned" || v.TokensBefore == nil || *v.TokensAfter >= *v.TokensBefore {
		t.Fatalf("small lane: exit %d, %+v", code, v)
	}
	code, v = validateJSON(t, exampleFile(t, "coding-agent-lane.json", nil))
	if code != 0 || v.Status != "compacted" || v.Summarize == nil || v.Summarize.Events == 0 {
		t.Fatalf("coding-agent lane: exit %d, %+v", code, v)
	}
	// --dry-run is the same check, and a person reads one ok: line.
	code, out, errOut := runCLI(t, "request", "--dry-run", "--json=false", exampleFile(t, "small-lane.json", nil))
	if code != 0 || !strings.HasPrefix(out, "ok: 0192b6e4-0000-7000-8000-0000000e0002: would be pruned: ") {
		t.Fatalf("--dry-run: exit %d: %q %q", code, out, errOut)
	}
}

func TestRequestValidateSkippedNamesTheReason(t *testing.T) {
	path := exampleFile(t, "small-lane.json", func(m map[string]any) {
		m["trigger"] = "auto"
		m["model_profile"].(map[string]any)["max_input_tokens"] = 1_000_000
	})
	code, v := validateJSON(t, path)
	if code != 0 || v.Status != "skipped" || v.Reason != "below_trigger" {
		t.Fatalf("exit %d, %+v", code, v)
	}
}

func TestRequestValidateInvalidNamesTheField(t *testing.T) {
	cases := []struct {
		name, code, field string
		edit              func(map[string]any)
	}{
		{"bad trigger", "invalid_compaction_request", "trigger", func(m map[string]any) { m["trigger"] = "sometimes" }},
		{"unknown field", "invalid_compaction_request", "colour", func(m map[string]any) { m["colour"] = "red" }},
		{"bad content hash", "invalid_compaction_event", "content_hash", func(m map[string]any) {
			m["events"].([]any)[0].(map[string]any)["content_hash"] = strings.Repeat("0", 64)
		}},
		{"bad name", "invalid_compaction_request", "run_agent_id", func(m map[string]any) { m["run_agent_id"] = "a\nb" }},
		{"version", "unsupported_version", "v", func(m map[string]any) { m["v"] = 2 }},
		{"deadline passed", "deadline_exceeded", "deadline_at", func(m map[string]any) { m["deadline_at"] = "2020-01-01T00:00:00Z" }},
		{"rehydration state", "payload_too_large", "rehydration_state", func(m map[string]any) {
			m["rehydration_state"] = map[string]any{"x": strings.Repeat("<", 80_000)}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := exampleFile(t, "small-lane.json", tc.edit)
			code, v := validateJSON(t, path)
			if code != 1 || v.OK || v.Error == nil || v.Error.Code != tc.code {
				t.Fatalf("exit %d, %+v", code, v)
			}
			if named := fmt.Sprint(v.Error.Message, v.Error.Details); !strings.Contains(named, tc.field) {
				t.Fatalf("the error does not name %s: %s", tc.field, named)
			}
			code, out, errOut := runCLI(t, "request", "validate", "--json=false", path)
			if code != 1 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.HasPrefix(errOut, "processor: "+tc.code+": ") {
				t.Fatalf("for a person: exit %d: %q %q", code, out, errOut)
			}
		})
	}
}

func TestRequestValidateEventsObjectOffline(t *testing.T) {
	path := exampleFile(t, "small-lane.json", func(m map[string]any) {
		delete(m, "events")
		m["events_object"] = "lanes/agent-coder/root/1"
	})
	for _, env := range []string{"NATS_URL", "CAIRN_NATS_URL"} {
		t.Setenv(env, "") // restored after the test
		os.Unsetenv(env)
	}
	code, v := validateJSON(t, path)
	if code != 0 || !v.OK || v.Status != "" || len(v.Notes) != 1 || !strings.Contains(v.Notes[0], "events_object") {
		t.Fatalf("exit %d, %+v", code, v)
	}
	bad := exampleFile(t, "small-lane.json", func(m map[string]any) { m["events_object"] = "lanes/x" })
	if code, v := validateJSON(t, bad); code != 1 || v.Error == nil || !strings.Contains(fmt.Sprint(v.Error.Message, v.Error.Details), "events_object") {
		t.Fatalf("both sources: exit %d, %+v", code, v)
	}
}

func TestRequestValidateUsage(t *testing.T) {
	for _, args := range [][]string{{"request", "validate"}, {"request", "validate", "a", "b"}, {"request", "validate", "/nonexistent/request.json"}} {
		if code, out, errOut := runCLI(t, args...); code != 2 || out != "" || errOut == "" {
			t.Errorf("%v: exit %d: %q %q", args, code, out, errOut)
		}
	}
}

// With --nats-url the claim-checked events are read from the server and
// checked as inline ones are.
func TestRequestValidateReadsEventsObject(t *testing.T) {
	natsAddr := testenv.FreeAddr(t)
	startServe(t, "--data-dir", t.TempDir(), "--nats-listen", natsAddr, "--memory-dir", t.TempDir())
	url := "nats://" + natsAddr
	var lane []any
	path := exampleFile(t, "small-lane.json", func(m map[string]any) {
		lane = m["events"].([]any)
		delete(m, "events")
		m["events_object"] = "lanes/validate/1"
	})
	nc := testenvConn(t, url)
	js := testenv.JetStream(t, nc)
	store, err := js.ObjectStore(context.Background(), topology.ObjectLanes)
	if err != nil {
		t.Fatal(err)
	}
	put := func(name string, events []any) {
		data, _ := json.Marshal(events)
		if _, err := store.PutBytes(context.Background(), name, data); err != nil {
			t.Fatal(err)
		}
	}
	put("lanes/validate/1", lane)
	if code, v := validateJSON(t, path, "--nats-url", url); code != 0 || v.Status != "pruned" {
		t.Fatalf("stored events: exit %d, %+v", code, v)
	}
	first := lane[0].(map[string]any)
	first["content_hash"] = strings.Repeat("0", 64)
	put("lanes/validate/1", lane)
	if code, v := validateJSON(t, path, "--nats-url", url); code != 1 || v.Error == nil || v.Error.Details["field"] != "content_hash" {
		t.Fatalf("a stored event with a bad hash: exit %d, %+v", code, v)
	}
	missing := exampleFile(t, "small-lane.json", func(m map[string]any) {
		delete(m, "events")
		m["events_object"] = "lanes/validate/absent"
	})
	if code, v := validateJSON(t, missing, "--nats-url", url); code != 1 || v.Error == nil || v.Error.Code != "events_object_missing" {
		t.Fatalf("no such object: exit %d, %+v", code, v)
	}
}
