package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/lanes"
	"github.com/cairnhq/cairn/internal/topology"
	"github.com/cairnhq/cairn/testenv"
	"github.com/nats-io/nats.go"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// binary is the processor built once for the tests that run it as a user
// would.
var binary string

func TestMain(m *testing.M) {
	if os.Getenv(cacheHelperEnv) != "" { // a measurement in a process of its own needs no binary
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "cairn-cli-")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "processor")
	out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build processor: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// service is a running `processor serve`.
type service struct {
	cmd     *exec.Cmd
	metrics string
	logs    *bytes.Buffer
	done    chan error
}

// startServe runs `processor serve` with args and waits until it is ready.
func startServe(t *testing.T, args ...string) *service {
	t.Helper()
	s := &service{metrics: testenv.FreeAddr(t), logs: &bytes.Buffer{}, done: make(chan error, 1)}
	args = append([]string{"serve", "--metrics-addr", s.metrics, "--log-format", "json"}, args...)
	s.cmd = exec.Command(binary, args...)
	s.cmd.Stdout, s.cmd.Stderr = s.logs, s.logs
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.done <- s.cmd.Wait() }()
	t.Cleanup(func() {
		if s.cmd.ProcessState == nil {
			_ = s.cmd.Process.Kill()
			<-s.done
		}
		if t.Failed() {
			t.Logf("serve logs:\n%s", s.logs)
		}
	})
	testenv.Eventually(t, 30*time.Second, func() error {
		code, body := httpGet(s.metrics, "/readyz")
		if code != http.StatusOK {
			return fmt.Errorf("readyz %d: %s", code, body)
		}
		return nil
	})
	return s
}

func httpGet(addr, path string) (int, string) {
	resp, err := http.Get("http://" + addr + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// cli runs the processor binary and returns its exit code and output.
func cli(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	return cliEnv(t, nil, args...)
}

// schema compiles one of the published schemas.
func schema(t *testing.T, file string) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	s, err := c.Compile(filepath.Join("..", "..", "schemas", file))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func validate(t *testing.T, file, doc string) {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(doc))
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if err := schema(t, file).Validate(v); err != nil {
		t.Errorf("a real message does not match schemas/%s: %v", file, err)
	}
}

// TestServeAsAUserWould drives the built binary on its embedded server:
// request, replay, metrics, audit (clean, then after tampering), and a
// graceful SIGTERM.
func TestServeAsAUserWould(t *testing.T) {
	natsAddr := testenv.FreeAddr(t)
	svc := startServe(t, "--data-dir", t.TempDir(), "--nats-listen", natsAddr, "--memory-dir", t.TempDir())
	url := "nats://" + natsAddr
	example := filepath.Join("..", "..", "examples", "coding-agent-lane.json")

	code, out, errOut := cli(t, "request", "--nats-url", url, example)
	if code != 0 {
		t.Fatalf("request: exit %d: %s %s", code, out, errOut)
	}
	var activated map[string]any
	if err := json.Unmarshal([]byte(out), &activated); err != nil || activated["kind"] != "activated" || activated["generation"] != float64(1) {
		t.Fatalf("request printed %.300s (%v)", out, err)
	}
	validate(t, "activated.json", out)
	body, _ := os.ReadFile(example)
	validate(t, "request.json", string(body))

	// The same request again: the same outcome, no second activation.
	code, again, _ := cli(t, "request", "--nats-url", url, example)
	if code != 0 || !strings.Contains(again, activated["event_id"].(string)) {
		t.Fatalf("resend: exit %d: %.200s", code, again)
	}

	var flushed string
	testenv.Eventually(t, 20*time.Second, func() error {
		_, out, _ := cli(t, "replay", "--nats-url", url, "--stream", "memory", "--json")
		if !strings.Contains(out, "memory.flushed") {
			return fmt.Errorf("no memory.flushed yet: %q", out)
		}
		flushed = out
		return nil
	})
	var line struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal([]byte(strings.SplitN(flushed, "\n", 2)[0]), &line); err != nil {
		t.Fatal(err)
	}
	validate(t, "memory-flushed.json", string(line.Data))

	code, out, _ = cli(t, "replay", "--nats-url", url, "--json")
	if code != 0 || strings.Count(out, "compact.activated") != 1 {
		t.Fatalf("replay: exit %d, want exactly one activation:\n%s", code, out)
	}

	_, metrics := httpGet(svc.metrics, "/metrics")
	for _, want := range []string{`cairn_requests_total{code="",status="activated"} 1`, `cairn_tokens_total{kind="reclaimed"}`, `cairn_harvest_facts_total{result="stored"}`, "cairn_outbox_published_total 2", `cairn_model_call_duration_seconds_count{component="summarizer",result="ok"}`, "cairn_outbox_relay_lag_seconds_count 2"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}

	if code, out, _ := cli(t, "audit", "verify", "--nats-url", url); code != 0 || !strings.Contains(out, `"breaks":0`) {
		t.Fatalf("audit of an intact history: exit %d: %s", code, out)
	}
	tamper(t, url, activated["checkpoint_id"].(string))
	if code, out, _ := cli(t, "audit", "verify", "--nats-url", url, "--json=false"); code != 1 || !strings.Contains(out, "BROKEN") {
		t.Fatalf("audit of a tampered checkpoint: exit %d: %s", code, out)
	}

	if err := svc.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-svc.done:
		if err != nil {
			t.Fatalf("serve exited with %v after SIGTERM", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop within 30s of SIGTERM")
	}
	if !strings.Contains(svc.logs.String(), "cairn stopped") {
		t.Errorf("no orderly stop in the logs:\n%s", svc.logs)
	}
}

// tamper rewrites a stored checkpoint behind Cairn's back.
func tamper(t *testing.T, url, checkpointID string) {
	t.Helper()
	ctx := context.Background()
	nc := testenvConn(t, url)
	js := testenv.JetStream(t, nc)
	kv, err := js.KeyValue(ctx, topology.BucketCheckpoints)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := lanes.IDKey(checkpointID)
	entry, err := kv.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	forged := bytes.Replace(entry.Value(), []byte(`"trigger":"manual"`), []byte(`"trigger":"auto"`), 1)
	if bytes.Equal(forged, entry.Value()) {
		t.Fatal("nothing to tamper with")
	}
	if _, err := kv.Put(ctx, key, forged); err != nil {
		t.Fatal(err)
	}
}

// TestReadinessFollowsNATS runs serve against an external server and checks
// that /readyz fails while the server is down and recovers with it.
func TestReadinessFollowsNATS(t *testing.T) {
	srv := testenv.NATS(t, testenv.Options{})
	svc := startServe(t, "--nats-url", srv.URL())
	srv.Shutdown()
	testenv.Eventually(t, 20*time.Second, func() error {
		if code, body := httpGet(svc.metrics, "/readyz"); code != http.StatusServiceUnavailable {
			return fmt.Errorf("readyz %d with NATS down: %s", code, body)
		}
		return nil
	})
	srv.Restart(t)
	testenv.Eventually(t, 30*time.Second, func() error {
		if code, body := httpGet(svc.metrics, "/readyz"); code != http.StatusOK {
			return fmt.Errorf("readyz %d after NATS came back: %s", code, body)
		}
		return nil
	})
	if code, _ := httpGet(svc.metrics, "/healthz"); code != http.StatusOK {
		t.Fatalf("healthz %d", code)
	}
}

// TestDemo runs the demo as the README shows it.
func TestDemo(t *testing.T) {
	cmd := exec.Command(binary, "demo", "--file", filepath.Join("..", "..", "examples", "coding-agent-lane.json"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("demo: %v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	// The example lane states its rules in the history the compaction cuts:
	// the harvest stores them.
	for _, want := range []string{"activated", "tokens", "objective:", "user requests:", "constraints:", "facts flushed",
		"[constraint] Never log customer emails", "250 of 250 cut events read"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("demo output lacks %q:\n%s", want, stdout.String())
		}
	}
}

func testenvConn(t *testing.T, url string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// TestBenchReportsEveryRequest runs a small bench as a user would: all at
// once, and at a publish rate.
func TestBenchReportsEveryRequest(t *testing.T) {
	for _, extra := range [][]string{{"--model-latency", "20ms"}, {"--rate", "100"}} {
		args := append([]string{"bench", "--requests", "6", "--events", "40", "--workers", "2", "--json"}, extra...)
		code, out, errOut := cli(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s %s", extra, code, out, errOut)
		}
		var r struct {
			Requests, Activated, Failed int
			PerSecond                   float64        `json:"requests_per_second"`
			Steady                      float64        `json:"steady_requests_per_second"`
			Rate                        float64        `json:"publish_rate"`
			RSS                         []float64      `json:"rss_mib"`
			Statuses                    map[string]int `json:"activated_status"`
			Harvests                    int            `json:"harvests"`
			Flushed                     int            `json:"harvests_flushed"`
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("%v: %v: %s", extra, err, out)
		}
		if r.Requests != 6 || r.Activated != 6 || r.Failed != 0 || r.PerSecond <= 0 || r.Steady <= 0 || len(r.RSS) == 0 {
			t.Fatalf("%v: report %+v", extra, r)
		}
		// The run lasts until every compacted request's harvest has flushed.
		if r.Harvests != r.Statuses["compacted"] || r.Flushed != r.Harvests || r.Harvests == 0 {
			t.Fatalf("%v: %d harvests, %d flushed, of %v activated", extra, r.Harvests, r.Flushed, r.Statuses)
		}
		if wantRate := extra[0] == "--rate"; wantRate != (r.Rate == 100) {
			t.Fatalf("%v: publish rate %v in the report", extra, r.Rate)
		}
	}
}

// TestBenchAgainstAServer runs the bench twice against one server, as a user
// measuring the processor's memory apart from the server's would: the second
// run's requests and lanes are new, not duplicates of the first's.
func TestBenchAgainstAServer(t *testing.T) {
	srv := testenv.NATS(t, testenv.Options{})
	for run := range 2 {
		code, out, errOut := cli(t, "bench", "--nats-url", srv.URL(), "--requests", "3", "--events", "40", "--workers", "2", "--timeout", "30s", "--json")
		if code != 0 {
			t.Fatalf("run %d: exit %d: %s %s", run, code, out, errOut)
		}
		var r struct{ Requests, Activated int }
		if err := json.Unmarshal([]byte(out), &r); err != nil || r.Activated != 3 {
			t.Fatalf("run %d: %+v %v: %s", run, r, err, out)
		}
	}
}

// TestServeWithRepositoryConfig runs the embedded server from nats.conf: the
// processor identity serves, a producer gets its request activated, and an
// auditor verifies the history; each with its own least-privilege user.
func TestServeWithRepositoryConfig(t *testing.T) {
	natsAddr := testenv.FreeAddr(t)
	t.Setenv("CAIRN_NATS_PASSWORD", "processor-dev-password")
	svc := startServe(t, "--nats-config", filepath.Join("..", "..", "nats.conf"), "--nats-user", "processor",
		"--data-dir", t.TempDir(), "--nats-listen", natsAddr)
	example := filepath.Join("..", "..", "examples", "coding-agent-lane.json")
	producer := "nats://producer:producer-dev-password@" + natsAddr
	if code, out, errOut := cli(t, "request", "--nats-url", producer, example); code != 0 || !strings.Contains(out, `"kind":"activated"`) {
		t.Fatalf("request as producer: exit %d: %.300s %s", code, out, errOut)
	}
	if code, out, errOut := cli(t, "request", "--nats-url", producer, example); code != 0 || !strings.Contains(out, `"kind":"activated"`) {
		t.Fatalf("resend as producer: exit %d: %.300s %s", code, out, errOut)
	}
	auditor := "nats://auditor:auditor-dev-password@" + natsAddr
	if code, out, errOut := cli(t, "audit", "verify", "--nats-url", auditor); code != 0 || !strings.Contains(out, `"breaks":0`) {
		t.Fatalf("audit as auditor: exit %d: %s %s", code, out, errOut)
	}
	if code, out, _ := cli(t, "replay", "--nats-url", auditor, "--json"); code != 0 || !strings.Contains(out, "compact.activated") {
		t.Fatalf("replay as auditor: exit %d: %s", code, out)
	}
	// The auditor may not create consumers on the request stream; replay
	// reads it message by message instead.
	if code, out, errOut := cli(t, "replay", "--nats-url", auditor, "--stream", "requests", "--json"); code != 0 || !strings.Contains(out, "compact.requested") {
		t.Fatalf("replay of the requests as auditor: exit %d: %s %s", code, out, errOut)
	}
	// The processor's own identity has every permission it uses. The logs
	// are read once serve has stopped writing them.
	if err := svc.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-svc.done; err != nil {
		t.Fatalf("serve exited with %v after SIGTERM", err)
	}
	if strings.Contains(svc.logs.String(), "Permissions Violation") {
		t.Errorf("serve was refused something by nats.conf:\n%s", svc.logs)
	}
}
