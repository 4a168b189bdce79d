package telemetry

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestEndpoints(t *testing.T) {
	m := NewMetrics()
	m.Request("activated", "")
	m.Request("failed", "stale_head")
	m.Tokens(1000, 300)
	ready := errors.New("relay behind by 3 records")
	var alive error
	s, err := Listen("127.0.0.1:0", Handler(m, []Check{
		{Name: "loop", Fn: func(context.Context) error { return alive }},
	}, []Check{
		{Name: "nats", Fn: func(context.Context) error { return nil }},
		{Name: "outbox", Fn: func(context.Context) error { return ready }},
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	base := "http://" + s.Addr()

	if code, _ := get(t, base+"/healthz"); code != 200 {
		t.Errorf("/healthz = %d", code)
	}
	code, body := get(t, base+"/readyz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "outbox: relay behind") || strings.Contains(body, "nats") {
		t.Errorf("/readyz = %d %q, want 503 naming only the outbox", code, body)
	}
	ready = nil
	if code, _ := get(t, base+"/readyz"); code != 200 {
		t.Errorf("/readyz after recovery = %d", code)
	}
	alive = errors.New("run loop stopped")
	if code, body := get(t, base+"/healthz"); code != http.StatusServiceUnavailable || body != "loop: run loop stopped\n" {
		t.Errorf("/healthz with a failed live check = %d %q, want 503 naming it", code, body)
	}
	_, metrics := get(t, base+"/metrics")
	for _, want := range []string{
		`cairn_requests_total{code="stale_head",status="failed"} 1`,
		`cairn_tokens_total{kind="reclaimed"} 700`,
		"go_goroutines",
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

func TestNilMetricsRecordNothing(t *testing.T) {
	var m *Metrics
	m.Request("activated", "")
	m.Stage("engine", time.Second)
	m.ModelCall("summarizer", time.Second, nil)
	m.Harvest(1, 2, 3)
	m.Delivered("processor", 2)
}
