package testenv

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// readyTimeout bounds how long a starting server may take to accept clients.
const readyTimeout = 10 * time.Second

// Options configures the embedded NATS servers of NATS and Cluster.
type Options struct {
	// Debug sends the server's log to t.Log. The environment variable
	// CAIRN_TEST_NATS_LOG=1 does the same for every test.
	Debug bool
	// ConfigFile, when set, is a nats.conf loaded with server.ProcessConfigFile.
	// Its store directory, host and port are overridden so tests stay isolated.
	ConfigFile string
	// MaxPayload overrides the server's maximum message size (default 1 MiB).
	MaxPayload int32
	// ClientOptions apply to every connection Conn and JetStream open, before
	// the options of the call; e.g. nats.UserInfo for a ConfigFile whose
	// accounts require a login.
	ClientOptions []nats.Option
}

func (o Options) debug() bool {
	return o.Debug || os.Getenv("CAIRN_TEST_NATS_LOG") != ""
}

// Server is one embedded nats-server with JetStream, listening on a random
// loopback port with its store in a per-test temporary directory. It is safe
// for concurrent use; Restart swaps the underlying server.
type Server struct {
	t    testing.TB
	opts Options

	mu   sync.Mutex
	base *server.Options // the options every (re)start begins from
	srv  *server.Server
}

// NATS starts an embedded JetStream server for the test and shuts it down
// when the test ends.
func NATS(t testing.TB, o Options) *Server {
	t.Helper()
	base, err := baseOptions(t, o)
	if err != nil {
		t.Fatalf("testenv: nats options: %v", err)
	}
	s := &Server{t: t, opts: o, base: base}
	s.start(t)
	t.Cleanup(s.Shutdown)
	return s
}

// baseOptions builds the server options shared by NATS and Cluster nodes.
func baseOptions(t testing.TB, o Options) (*server.Options, error) {
	opts := &server.Options{}
	if o.ConfigFile != "" {
		loaded, err := server.ProcessConfigFile(o.ConfigFile)
		if err != nil {
			return nil, fmt.Errorf("load %s: %w", o.ConfigFile, err)
		}
		opts = loaded
	}
	opts.Host = "127.0.0.1"
	opts.Port = -1
	opts.HTTPPort = 0
	opts.NoSigs = true
	opts.NoLog = !o.debug()
	opts.JetStream = true
	opts.StoreDir = t.TempDir()
	if o.MaxPayload > 0 {
		opts.MaxPayload = o.MaxPayload
	}
	return opts, nil
}

// start launches a server from s.base and waits until it accepts clients.
// After the first start the chosen port is pinned so restarts reuse it.
func (s *Server) start(t testing.TB) {
	t.Helper()
	if err := s.launch(t); err != nil {
		t.Fatalf("testenv: %v", err)
	}
}

// launch is start that reports failure instead of ending the test, so a
// cluster can retry on other ports when one it reserved was taken meanwhile.
func (s *Server) launch(t testing.TB) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	srv, err := server.NewServer(s.base.Clone())
	if err != nil {
		return fmt.Errorf("new nats server: %w", err)
	}
	if s.opts.debug() {
		srv.SetLogger(&testLogger{t: t}, true, false)
	}
	go srv.Start()
	if !srv.ReadyForConnections(readyTimeout) {
		srv.Shutdown()
		srv.WaitForShutdown()
		return fmt.Errorf("nats server not ready after %s (client port %d, route port %d)",
			readyTimeout, s.base.Port, s.base.Cluster.Port)
	}
	if addr, ok := srv.Addr().(*net.TCPAddr); ok {
		s.base.Port = addr.Port
	}
	s.srv = srv
	return nil
}

// URL is the server's client URL, nats://127.0.0.1:<port>. It stays the same
// across Restart.
func (s *Server) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return "nats://127.0.0.1:" + strconv.Itoa(s.base.Port)
}

// Server returns the running nats-server, for tests that need its internals.
func (s *Server) Server() *server.Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.srv
}

// Conn connects a client that reconnects forever and quickly, so it rides out
// Restart; opts are applied after those defaults. The connection closes when
// the test ends.
func (s *Server) Conn(t testing.TB, opts ...nats.Option) *nats.Conn {
	t.Helper()
	return connect(t, s.URL(), append(append([]nats.Option(nil), s.opts.ClientOptions...), opts...))
}

// JetStream returns a JetStream handle on a new connection from Conn.
func (s *Server) JetStream(t testing.TB) jetstream.JetStream {
	t.Helper()
	return JetStream(t, s.Conn(t))
}

// Shutdown stops the server and waits until it has stopped. It is safe to
// call more than once; the store directory is kept for Restart.
func (s *Server) Shutdown() {
	s.mu.Lock()
	srv := s.srv
	s.srv = nil
	s.mu.Unlock()
	if srv != nil {
		srv.Shutdown()
		srv.WaitForShutdown()
	}
}

// Restart stops the server, if running, and starts it again on the same port
// with the same store, so connected clients reconnect and JetStream state
// survives, as after a crash and restart.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Shutdown()
	s.start(t)
}

// connect dials url with test-friendly reconnect defaults and closes the
// connection when the test ends.
func connect(t testing.TB, url string, extra []nats.Option) *nats.Conn {
	t.Helper()
	opts := []nats.Option{
		nats.Name(t.Name()),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(25 * time.Millisecond),
		nats.ReconnectJitter(0, 0),
		nats.RetryOnFailedConnect(false),
	}
	nc, err := nats.Connect(url, append(opts, extra...)...)
	if err != nil {
		t.Fatalf("testenv: connect %s: %v", url, err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// JetStream is the JetStream context of nc; it fails t if there is none.
func JetStream(t testing.TB, nc *nats.Conn) jetstream.JetStream {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatalf("testenv: jetstream: %v", err)
	}
	return js
}

// testLogger routes server log lines to the test log.
type testLogger struct{ t testing.TB }

func (l *testLogger) logf(level, format string, v []any) { l.t.Logf("[nats"+level+"] "+format, v...) }

func (l *testLogger) Noticef(format string, v ...any) { l.logf("", format, v) }
func (l *testLogger) Warnf(format string, v ...any)   { l.logf(" WRN", format, v) }
func (l *testLogger) Fatalf(format string, v ...any)  { l.logf(" FTL", format, v) }
func (l *testLogger) Errorf(format string, v ...any)  { l.logf(" ERR", format, v) }
func (l *testLogger) Debugf(format string, v ...any)  { l.logf(" DBG", format, v) }
func (l *testLogger) Tracef(format string, v ...any)  { l.logf(" TRC", format, v) }

// ctxFor returns a context bounded by d for one setup step.
func ctxFor(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}
