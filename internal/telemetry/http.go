package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Check is one readiness condition; it returns nil when the condition holds.
type Check struct {
	Name string
	Fn   func(ctx context.Context) error
}

// Handler serves /metrics, /healthz and /readyz. /healthz fails (503) when
// a live check fails: the process can no longer do its work and should be
// restarted. /readyz fails when a ready check fails: work should wait, but
// the process may recover by itself. Both bodies name the failing checks.
func Handler(m *Metrics, live, ready []Check) http.Handler {
	mux := http.NewServeMux()
	if m != nil {
		mux.Handle("/metrics", promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry}))
	}
	mux.Handle("/healthz", probe(live, "ok"))
	mux.Handle("/readyz", probe(ready, "ready"))
	return mux
}

// probe answers 200 and ok when every check passes, else 503 with one line
// per failing check.
func probe(checks []Check, ok string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
		defer cancel()
		failures := runChecks(ctx, checks)
		if len(failures) == 0 {
			fmt.Fprintln(w, ok)
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		for _, f := range failures {
			fmt.Fprintln(w, f)
		}
	}
}

// runChecks runs the checks concurrently and returns one line per failure, in
// the checks' order.
func runChecks(ctx context.Context, checks []Check) []string {
	results := make([]error, len(checks))
	var wg sync.WaitGroup
	for i, c := range checks {
		wg.Go(func() { results[i] = c.Fn(ctx) })
	}
	wg.Wait()
	var failures []string
	for i, err := range results {
		if err != nil {
			failures = append(failures, checks[i].Name+": "+err.Error())
		}
	}
	return failures
}

// Server is the HTTP listener of the metrics and health endpoints.
type Server struct {
	srv *http.Server
	ln  net.Listener
}

// Listen binds addr (host:port; port 0 picks one) and serves h until Shutdown.
func Listen(addr string, h http.Handler) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("telemetry: listen %s: %w", addr, err)
	}
	s := &Server{srv: &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}, ln: ln}
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			_ = ln.Close()
		}
	}()
	return s, nil
}

// Addr is the bound address.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Shutdown stops accepting requests and waits for those in progress.
func (s *Server) Shutdown(ctx context.Context) error { return s.srv.Shutdown(ctx) }
