package events_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/events"
	"github.com/cairnhq/cairn/testenv"
	"github.com/nats-io/nats.go"
)

func TestConnOptionsRefuseWhatNoConnectionCanUse(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "absent.pem")
	for name, o := range map[string]events.ConnOptions{
		"negative interval":  {PingInterval: -time.Second},
		"negative pings":     {MaxPingsOutstanding: -1},
		"cert without key":   {TLSCert: "client.pem"},
		"key without cert":   {TLSKey: "client-key.pem"},
		"missing CA file":    {TLSCA: missing},
		"missing cert files": {TLSCert: missing, TLSKey: missing},
	} {
		if _, err := o.NATSOptions(); err == nil {
			t.Errorf("%s: NATSOptions accepted %+v", name, o)
		}
	}
	if got := (events.ConnOptions{}).StaleAfter(); got != 8*time.Second {
		t.Errorf("default StaleAfter = %s, want 8s (2 s pings, 3 outstanding)", got)
	}
	if _, err := (events.ConnOptions{}).NATSOptions(); err != nil {
		t.Errorf("the zero options: %v", err)
	}
}

// A client connected to a server that freezes (SIGSTOP: its sockets stay
// open, nothing answers) is on another server within StaleAfter plus the
// time to connect; with nats.go's default 2-minute pings it would still be
// waiting on the frozen one.
func TestAClientLeavesAFrozenServer(t *testing.T) {
	c := testenv.ProcessCluster(t, 3)
	o := events.ConnOptions{}
	opts, err := o.NATSOptions()
	if err != nil {
		t.Fatal(err)
	}
	reconnected := make(chan string, 1)
	opts = append(opts, nats.MaxReconnects(-1), nats.ReconnectHandler(func(nc *nats.Conn) {
		select {
		case reconnected <- nc.ConnectedUrl():
		default:
		}
	}))
	nc := c.NodeConn(t, 0, opts...)
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	frozenAt := time.Now()
	c.Freeze(t, 0)
	defer c.Thaw(t, 0)
	// Connecting may first try the frozen node, which accepts the TCP
	// connection and never answers: nats.go gives up on it after its
	// connect timeout (2 s).
	bound := o.StaleAfter() + 2*time.Second + time.Second
	select {
	case url := <-reconnected:
		took := time.Since(frozenAt)
		t.Logf("left the frozen server after %s, now on %s", took.Round(time.Millisecond), url)
		if strings.HasSuffix(url, strings.TrimPrefix(c.URL(0), "nats://")) {
			t.Errorf("reconnected to the frozen node %s", url)
		}
		if took < events.DefaultPingInterval*events.DefaultMaxPingsOutstanding {
			t.Errorf("left after %s, before %d pings could go unanswered", took, events.DefaultMaxPingsOutstanding)
		}
	case <-time.After(bound):
		t.Fatalf("still on the frozen server %s after %s", nc.ConnectedUrl(), bound)
	}
}

// ConnOptions' TLS files connect to a server that requires TLS and verifies
// client certificates; without the client certificate, or without the
// private CA, the server or the client refuses.
func TestConnOptionsConnectOverMutualTLS(t *testing.T) {
	files := testenv.TLS(t)
	conf := filepath.Join(t.TempDir(), "tls.conf")
	if err := os.WriteFile(conf, []byte(files.ServerBlock()), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := testenv.NATS(t, testenv.Options{ConfigFile: conf,
		ClientOptions: []nats.Option{nats.RootCAs(files.CA), nats.ClientCert(files.ClientCert, files.ClientKey)}})
	connect := func(o events.ConnOptions) error {
		opts, err := o.NATSOptions()
		if err != nil {
			return err
		}
		nc, err := nats.Connect(srv.URL(), append(opts, nats.Timeout(2*time.Second))...)
		if err != nil {
			return err
		}
		defer nc.Close()
		return nc.Flush()
	}
	if err := connect(events.ConnOptions{TLSCA: files.CA, TLSCert: files.ClientCert, TLSKey: files.ClientKey}); err != nil {
		t.Fatalf("mutual TLS: %v", err)
	}
	for name, o := range map[string]events.ConnOptions{
		"no client certificate": {TLSCA: files.CA},
		"another CA's client":   {TLSCA: files.CA, TLSCert: files.ForeignCert, TLSKey: files.ForeignKey},
		"no private CA":         {TLSCert: files.ClientCert, TLSKey: files.ClientKey},
		"no TLS":                {},
	} {
		if err := connect(o); err == nil {
			t.Errorf("%s: connected", name)
		}
	}
}
