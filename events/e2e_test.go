package events_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/events"
	"github.com/cairnhq/cairn/testenv"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// serveCairn builds the processor and runs `processor serve` on its
// embedded server, as a user would, returning a JetStream client of it.
func serveCairn(t *testing.T) jetstream.JetStream {
	t.Helper()
	if testing.Short() {
		t.Skip("the processor is not built in -short mode")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "processor")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/processor").CombinedOutput(); err != nil {
		t.Fatalf("build processor: %v\n%s", err, out)
	}
	natsAddr, metrics := testenv.FreeAddr(t), testenv.FreeAddr(t)
	var logs bytes.Buffer
	cmd := exec.Command(bin, "serve", "--data-dir", filepath.Join(dir, "data"), "--nats-listen", natsAddr,
		"--metrics-addr", metrics, "--memory-dir", filepath.Join(dir, "memory"))
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("serve logs:\n%s", logs.String())
		}
	})
	testenv.Eventually(t, 60*time.Second, func() error {
		resp, err := http.Get("http://" + metrics + "/readyz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("readyz %d", resp.StatusCode)
		}
		return nil
	})
	nc, err := nats.Connect("nats://" + natsAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js := testenv.JetStream(t, nc)
	return js
}

// validator checks documents against the published schemas/ files.
func validator(t *testing.T) func(file string, doc []byte) error {
	c := jsonschema.NewCompiler()
	return func(file string, doc []byte) error {
		t.Helper()
		s, err := c.Compile(filepath.Join(schemaDir, file))
		if err != nil {
			t.Fatal(err)
		}
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
		if err != nil {
			t.Fatal(err)
		}
		return s.Validate(v)
	}
}

// TestCairnsMessagesMatchTheSchemaFiles sends requests to a real Cairn and checks
// every request and every message it answers with (activated with its
// checkpoint and semantic, skipped, failed, memory.flushed) against
// schemas/.
func TestCairnsMessagesMatchTheSchemaFiles(t *testing.T) {
	js := serveCairn(t)
	validate := validator(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	lane, err := os.ReadFile("../examples/coding-agent-lane.json")
	if err != nil {
		t.Fatal(err)
	}
	var compacting map[string]any
	if err := json.Unmarshal(lane, &compacting); err != nil {
		t.Fatal(err)
	}
	// An auto request on another lane that is far below its trigger.
	small := exampleRequest()
	small.RequestID, small.Trigger, small.CheckpointNamespace = "req-auto", events.TriggerAuto, "small"
	for i := range small.Events {
		small.Events[i].CheckpointNamespace = "small"
	}
	cases := []struct {
		body []byte
		kind string
	}{
		{lane, events.KindActivated},
		{mustJSON(t, exampleRequest()), events.KindFailed},
		{mustJSON(t, small), events.KindSkipped},
	}
	for _, c := range cases {
		var id struct {
			RequestID string `json:"request_id"`
		}
		if err := json.Unmarshal(c.body, &id); err != nil {
			t.Fatal(err)
		}
		if err := validate("request.json", c.body); err != nil {
			t.Errorf("request %s does not match schemas/request.json: %v", id.RequestID, err)
		}
		ack, err := events.PublishRaw(ctx, js, id.RequestID, c.body, "")
		if err != nil {
			t.Fatal(err)
		}
		since, err := events.PublishedAt(ctx, js, ack)
		if err != nil {
			t.Fatal(err)
		}
		ev, err := events.WaitOutcome(ctx, js, id.RequestID, since.Add(-time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind != c.kind {
			t.Fatalf("request %s: %s, want %s: %s", id.RequestID, ev.Kind, c.kind, ev.Raw)
		}
		if err := validate(ev.Kind+".json", ev.Raw); err != nil {
			t.Errorf("a real %s event does not match schemas/%s.json: %v\n%.2000s", ev.Kind, ev.Kind, err, ev.Raw)
		}
	}

	var flushed events.Event
	err = events.Follow(ctx, js, events.FollowOptions{Stream: events.StreamMemory, FromStart: true}, func(ev events.Event) error {
		if ev.MemoryFlushed == nil {
			return nil
		}
		flushed = ev
		return errFound
	})
	if err != errFound {
		t.Fatalf("no memory.flushed: %v", err)
	}
	if err := validate("memory-flushed.json", flushed.Raw); err != nil {
		t.Errorf("a real memory.flushed does not match schemas/memory-flushed.json: %v\n%s", err, flushed.Raw)
	}
}

var errFound = fmt.Errorf("found")

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The schemas reject what Cairn rejects, here both or neither of events and
// events_object, and a policy ratio out of range.
func TestRequestSchemaRejectsWhatCairnRejects(t *testing.T) {
	validate := validator(t)
	good := mustJSON(t, exampleRequest())
	if err := validate("request.json", good); err != nil {
		t.Fatalf("the example request does not match: %v", err)
	}
	for name, edit := range map[string]func(m map[string]any){
		"events and events_object": func(m map[string]any) { m["events_object"] = "lane-1" },
		"neither":                  func(m map[string]any) { delete(m, "events") },
		"trigger_ratio 1.5":        func(m map[string]any) { m["policy"] = map[string]any{"trigger_ratio": 1.5} },
		"unknown policy field":     func(m map[string]any) { m["policy"] = map[string]any{"triger_ratio": 0.8} },
		"semantic without version": func(m map[string]any) { m["previous_semantic"] = map[string]any{"objective": []any{}} },
	} {
		var m map[string]any
		if err := json.Unmarshal(good, &m); err != nil {
			t.Fatal(err)
		}
		edit(m)
		if err := validate("request.json", mustJSON(t, m)); err == nil {
			t.Errorf("%s: the schema accepts it", name)
		} else if !strings.Contains(err.Error(), "jsonschema") {
			t.Errorf("%s: %v", name, err)
		}
	}
}
