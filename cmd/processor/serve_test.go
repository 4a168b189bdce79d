package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnhq/cairn/testenv"
)

// syncBuffer is a log sink that serve's goroutines and the test share.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// inProcessServe is serve running in the test's process.
type inProcessServe struct {
	info serveInfo
	done chan struct{} // closed when serve has returned err
	err  error
	logs *syncBuffer
	stop context.CancelFunc
}

// startInProcess runs serve with flags args (plus a throwaway data dir and
// free addresses unless args set them) and waits until it serves.
func startInProcess(t *testing.T, cfgHook func(*serveConfig), args ...string) *inProcessServe {
	t.Helper()
	var cfg serveConfig
	fs := newFlagSet("serve", "", stdio{err: io.Discard})
	cfg.register(fs)
	base := []string{"--data-dir", t.TempDir(), "--nats-listen", "none", "--metrics-addr", "127.0.0.1:0"}
	if err := fs.Parse(append(base, args...)); err != nil {
		t.Fatal(err)
	}
	ready := make(chan serveInfo, 1)
	cfg.ready = ready
	if cfgHook != nil {
		cfgHook(&cfg)
	}
	ctx, stop := context.WithCancel(context.Background())
	s := &inProcessServe{done: make(chan struct{}), logs: &syncBuffer{}, stop: stop}
	log := slog.New(slog.NewTextHandler(s.logs, nil))
	go func() {
		defer close(s.done)
		s.err = serve(ctx, cfg, log)
	}()
	t.Cleanup(func() {
		stop()
		select {
		case <-s.done:
		case <-time.After(60 * time.Second):
			t.Error("serve did not stop within 60s of its context ending")
		}
		if t.Failed() {
			t.Logf("serve logs:\n%s", s.logs)
		}
	})
	select {
	case s.info = <-ready:
	case <-s.done:
		t.Fatalf("serve stopped before serving: %v", s.err)
	case <-time.After(60 * time.Second):
		t.Fatal("serve not ready within 60s")
	}
	return s
}

// TestServeExitsWhenItsConnectionCloses forces the server to close serve's
// connection with a protocol error (a control line over 4 KiB), which
// nats.go does not reconnect from. /healthz must turn unhealthy and serve
// must return an error, so that the process exits and is restarted.
func TestServeExitsWhenItsConnectionCloses(t *testing.T) {
	hold := make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(hold) }) }
	t.Cleanup(release)
	s := startInProcess(t, func(c *serveConfig) { c.holdFatal = hold })
	if code, body := httpGet(s.info.MetricsAddr, "/healthz"); code != http.StatusOK {
		t.Fatalf("healthz %d before the fault: %s", code, body)
	}

	if err := s.info.conn.Publish(strings.Repeat("n", 5000), nil); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 20*time.Second, func() error {
		code, body := httpGet(s.info.MetricsAddr, "/healthz")
		if code != http.StatusServiceUnavailable || !strings.Contains(body, "closed") {
			return fmt.Errorf("healthz %d %q, want 503 naming the closed connection", code, body)
		}
		return nil
	})
	release()
	select {
	case <-s.done:
		if s.err == nil || !strings.Contains(s.err.Error(), "maximum control line exceeded") {
			t.Fatalf("serve returned %v, want the connection's fatal error", s.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve still runs 30s after its connection closed")
	}
	if logs := s.logs.String(); !strings.Contains(logs, "nats connection closed") {
		t.Errorf("no clear log line about the closed connection:\n%s", logs)
	}
}

// TestServeStopsCleanlyWhenAsked: a requested shutdown is no failure, even
// though it closes the connection.
func TestServeStopsCleanlyWhenAsked(t *testing.T) {
	s := startInProcess(t, func(c *serveConfig) { c.holdFatal = make(chan struct{}) }) // would hang on a fatal stop
	s.stop()
	select {
	case <-s.done:
		if s.err != nil {
			t.Fatalf("serve returned %v after a requested shutdown", s.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve still runs 30s after its context ended")
	}
}

// TestServeRefusesADataDirInUse starts two services on one data dir: the
// second must stop with a clear message, and a third may start once the
// first has stopped.
func TestServeRefusesADataDirInUse(t *testing.T) {
	dir := t.TempDir()
	first := startInProcess(t, nil, "--data-dir", dir)

	var cfg serveConfig
	fs := newFlagSet("serve", "", stdio{err: io.Discard})
	cfg.register(fs)
	if err := fs.Parse([]string{"--data-dir", dir, "--nats-listen", "none", "--metrics-addr", "none"}); err != nil {
		t.Fatal(err)
	}
	err := serve(context.Background(), cfg, slog.New(slog.DiscardHandler))
	want := fmt.Sprintf("data dir %s is in use by another Cairn process (pid %d); stop it or choose another --data-dir", dir, os.Getpid())
	if err == nil || err.Error() != want {
		t.Fatalf("second serve on one data dir: %v, want %q", err, want)
	}

	first.stop()
	<-first.done
	startInProcess(t, nil, "--data-dir", dir)
}

// TestDataDirLockAcrossProcesses runs the binary: a second serve on a data
// dir in use exits 1 naming the holder's pid, and after the holder is
// killed with SIGKILL (no cleanup) a new serve starts on the same dir.
func TestDataDirLockAcrossProcesses(t *testing.T) {
	dir := t.TempDir()
	first := startServe(t, "--data-dir", dir, "--nats-listen", "none")

	code, _, errOut := cli(t, "serve", "--data-dir", dir, "--nats-listen", "none", "--metrics-addr", "none", "--log-format", "text")
	want := fmt.Sprintf("data dir %s is in use by another Cairn process (pid %d); stop it or choose another --data-dir", dir, first.cmd.Process.Pid)
	if code != 1 || !strings.Contains(errOut, want) {
		t.Fatalf("second serve: exit %d, stderr %q; want exit 1 and %q", code, errOut, want)
	}

	if err := first.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-first.done
	startServe(t, "--data-dir", dir, "--nats-listen", "none")
}
