package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/testenv"
	"github.com/nats-io/nats.go/micro"
)

// TestLaneShowAfterARequest reads back the head a request activated.
func TestLaneShowAfterARequest(t *testing.T) {
	natsAddr := testenv.FreeAddr(t)
	startServe(t, "--data-dir", t.TempDir(), "--nats-listen", natsAddr, "--memory-dir", t.TempDir())
	url := "nats://" + natsAddr
	example := filepath.Join("..", "..", "examples", "coding-agent-lane.json")
	var req struct {
		RunAgentID          string `json:"run_agent_id"`
		CheckpointNamespace string `json:"checkpoint_namespace"`
	}
	body, err := os.ReadFile(example)
	if err != nil || json.Unmarshal(body, &req) != nil {
		t.Fatalf("read %s: %v", example, err)
	}
	lane := req.RunAgentID + "/" + req.CheckpointNamespace

	if code, _, errOut := cli(t, "lane", "show", "--nats-url", url, lane); code != 1 || !strings.Contains(errOut, "no head yet") {
		t.Fatalf("lane show before any request: exit %d, %q", code, errOut)
	}
	code, out, errOut := cli(t, "request", "--nats-url", url, example)
	if code != 0 {
		t.Fatalf("request: exit %d: %s %s", code, out, errOut)
	}
	var activated struct {
		CheckpointID   string `json:"checkpoint_id"`
		CheckpointHash string `json:"checkpoint_hash"`
		TokensAfter    int64  `json:"tokens_after"`
	}
	if err := json.Unmarshal([]byte(out), &activated); err != nil {
		t.Fatal(err)
	}

	code, out, errOut = cli(t, "lane", "show", "--nats-url", url, "--json", lane)
	if code != 0 {
		t.Fatalf("lane show: exit %d: %s", code, errOut)
	}
	var view laneView
	if err := json.Unmarshal([]byte(out), &view); err != nil {
		t.Fatalf("lane show printed %q: %v", out, err)
	}
	if view.Generation != 1 || view.CheckpointID != activated.CheckpointID || view.CheckpointHash != activated.CheckpointHash {
		t.Fatalf("lane show = %+v, activated %+v", view, activated)
	}
	if view.Checkpoint == nil || view.Checkpoint.TokensAfter != activated.TokensAfter || view.Checkpoint.AccountingMethod == "" {
		t.Fatalf("checkpoint digest = %+v", view.Checkpoint)
	}
	if code, out, _ = cli(t, "lane", "show", "--nats-url", url, "--json=false", lane); code != 0 || !strings.Contains(out, activated.CheckpointID) {
		t.Fatalf("lane show for a person: exit %d: %s", code, out)
	}
	checkLaneDigest(t, url, lane)
}

// checkLaneDigest checks that `lane show` states a first checkpoint's
// missing parent, its accounting counter and its objective as the stored
// checkpoint has them, in JSON and for a person.
func checkLaneDigest(t *testing.T, url, lane string) {
	t.Helper()
	code, out, errOut := cli(t, "lane", "show", "--nats-url", url, "--json", "--full", lane)
	if code != 0 {
		t.Fatalf("lane show --full: exit %d: %s", code, errOut)
	}
	var raw struct {
		Parent     json.RawMessage `json:"parent_checkpoint_id"`
		Checkpoint struct {
			Counter   *string  `json:"accounting_counter"`
			Objective []string `json:"objective"`
			Full      struct {
				Counter  string `json:"accounting_counter"`
				Method   string `json:"accounting_method"`
				Semantic struct {
					Objective []struct {
						Text string `json:"text"`
					} `json:"objective"`
				} `json:"semantic"`
			} `json:"full"`
		} `json:"checkpoint"`
	}
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		t.Fatalf("lane show printed %q: %v", out, err)
	}
	c := raw.Checkpoint
	if string(raw.Parent) != "null" {
		t.Errorf("parent_checkpoint_id of a first checkpoint = %s, want null", raw.Parent)
	}
	if c.Full.Counter == "" || c.Counter == nil || *c.Counter != c.Full.Counter {
		t.Errorf("accounting_counter = %v, stored %q", c.Counter, c.Full.Counter)
	}
	if len(c.Full.Semantic.Objective) == 0 || len(c.Objective) != len(c.Full.Semantic.Objective) || c.Objective[0] != c.Full.Semantic.Objective[0].Text {
		t.Errorf("objective = %q, stored %+v", c.Objective, c.Full.Semantic.Objective)
	}
	_, text, _ := cli(t, "lane", "show", "--nats-url", url, "--json=false", lane)
	for _, want := range []string{"parent      (none)\n", "(" + c.Full.Method + ", counter " + c.Full.Counter + ")", "objective   "} {
		if !strings.Contains(text, want) {
			t.Errorf("lane show for a person lacks %q:\n%s", want, text)
		}
	}
}

func TestHashPrintsCanonicalEncoding(t *testing.T) {
	in := filepath.Join(t.TempDir(), "v.json")
	if err := os.WriteFile(in, []byte(`{"b":1e-07,"a":"\u001b[0m"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := cli(t, "hash", in)
	var got map[string]string
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil {
		t.Fatalf("hash: exit %d: %s %s", code, out, errOut)
	}
	if want := `{"a":"\u001B[0m","b":1.0e-7}`; got["canonical"] != want || len(got["sha256"]) != 64 {
		t.Fatalf("hash = %v, want canonical %s", got, want)
	}
}

func TestHashEventsChecksCarriedHashes(t *testing.T) {
	example := filepath.Join("..", "..", "examples", "small-lane.json")
	code, out, errOut := cli(t, "hash", "--events", example)
	if code != 0 || strings.Contains(out, `"matches":false`) || !strings.Contains(out, `"matches":true`) {
		t.Fatalf("hash --events on the example: exit %d: %s %s", code, out, errOut)
	}
	body, _ := os.ReadFile(example)
	var req map[string]any
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	first := req["events"].([]any)[0].(map[string]any)
	first["content_hash"] = strings.Repeat("0", 64)
	tampered, _ := json.Marshal(req)
	in := filepath.Join(t.TempDir(), "tampered.json")
	if err := os.WriteFile(in, tampered, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, _ = cli(t, "hash", "--events", in)
	if code != 1 || !strings.HasPrefix(out, `{"index":0,`) || !strings.Contains(strings.SplitN(out, "\n", 2)[0], `"matches":false`) {
		t.Fatalf("hash --events on a tampered event: exit %d: %s", code, out)
	}
}

// A request_id reused with another body inside the duplicate window is a
// conflict, not the earlier request's outcome.
func TestRequestReusedIDWithAnotherBody(t *testing.T) {
	natsAddr := testenv.FreeAddr(t)
	startServe(t, "--data-dir", t.TempDir(), "--nats-listen", natsAddr, "--memory-dir", t.TempDir())
	url := "nats://" + natsAddr
	example := filepath.Join("..", "..", "examples", "small-lane.json")
	if code, out, errOut := cli(t, "request", "--nats-url", url, example); code != 0 {
		t.Fatalf("request: exit %d: %s %s", code, out, errOut)
	}
	body, err := os.ReadFile(example)
	if err != nil {
		t.Fatal(err)
	}
	var req map[string]any
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	req["focus"] = "something else"
	changed, _ := json.Marshal(req)
	other := filepath.Join(t.TempDir(), "changed.json")
	if err := os.WriteFile(other, changed, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := cli(t, "request", "--nats-url", url, other)
	if code != 1 || !strings.Contains(errOut, "request_id_conflict") || strings.Contains(out, "activated") {
		t.Fatalf("reused request_id: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestRequestResentAfterTheDuplicateWindow resends a request once the
// request stream's duplicate window has passed: the stream stores it
// again, Cairn answers it from the ledger, and `processor request` gets
// the original outcome from the status service instead of waiting for an
// event the events stream may drop as a duplicate. `nats micro` sees the
// service that answered.
func TestRequestResentAfterTheDuplicateWindow(t *testing.T) {
	const window = time.Second
	natsAddr := testenv.FreeAddr(t)
	startServe(t, "--data-dir", t.TempDir(), "--nats-listen", natsAddr, "--memory-dir", t.TempDir(), "--duplicate-window", window.String())
	url := "nats://" + natsAddr
	example := filepath.Join("..", "..", "examples", "coding-agent-lane.json")
	code, first, errOut := cli(t, "request", "--nats-url", url, example)
	if code != 0 {
		t.Fatalf("request: exit %d: %s %s", code, first, errOut)
	}
	// The original was stored before its outcome came back: one window
	// from now, a resend is past it.
	<-time.After(window + 100*time.Millisecond)
	start := time.Now()
	code, again, errOut := cli(t, "request", "--nats-url", url, "--timeout", "10s", example)
	if code != 0 || again != first {
		t.Fatalf("resend after the window: exit %d: %.200s %s", code, again, errOut)
	}
	t.Logf("the resend's outcome came in %s (the command's start included)", time.Since(start))
	code, stored, _ := cli(t, "replay", "--nats-url", url, "--stream", "requests", "--json")
	if code != 0 || strings.Count(stored, "\n") != 2 {
		t.Fatalf("the request stream should hold the request twice: exit %d:\n%.300s", code, stored)
	}

	nc := testenvConn(t, url)
	msg, err := nc.Request("$SRV.STATS.cairn", nil, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var stats micro.Stats
	if err := json.Unmarshal(msg.Data, &stats); err != nil {
		t.Fatal(err)
	}
	asked := map[string]int{}
	for _, e := range stats.Endpoints {
		asked[e.Subject] = e.NumRequests
	}
	if asked["cairn.svc.status"] != 2 || len(stats.Endpoints) != 3 {
		t.Fatalf("service stats: %+v", stats.Endpoints)
	}
}
