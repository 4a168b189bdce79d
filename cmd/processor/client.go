package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/events"
	"github.com/cairnhq/cairn/internal/lanes"
	"github.com/cairnhq/cairn/internal/topology"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// defaultNATSURL is where `processor serve` listens by default.
const defaultNATSURL = "nats://127.0.0.1:4222"

// natsFlags are the connection flags of the client commands.
type natsFlags struct {
	url   string
	creds string
	conn  events.ConnOptions
}

func (n *natsFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&n.url, "nats-url", defaultNATSURL, "NATS server URL(s), comma-separated (also NATS_URL); user:password@ in the URL authenticates")
	fs.StringVar(&n.creds, "nats-creds", "", "NATS credentials file (JWT + nkey seed)")
	n.registerConn(fs)
}

// registerConn adds the liveness and TLS flags every connecting command
// shares.
func (n *natsFlags) registerConn(fs *flag.FlagSet) {
	fs.DurationVar(&n.conn.PingInterval, "nats-ping-interval", events.DefaultPingInterval, "ping the NATS server this often; with --nats-max-pings-outstanding it bounds how long a connection to a frozen server stays up before moving to another")
	fs.IntVar(&n.conn.MaxPingsOutstanding, "nats-max-pings-outstanding", events.DefaultMaxPingsOutstanding, "unanswered pings after which the connection is dropped and made again to another server: a frozen server is left within (this + 1) × --nats-ping-interval")
	fs.StringVar(&n.conn.TLSCA, "nats-tls-ca", "", "PEM file of the CA(s) that sign the NATS servers' certificates (a private CA); requires TLS")
	fs.StringVar(&n.conn.TLSCert, "nats-tls-cert", "", "PEM file of this client's certificate, for servers that verify clients (mutual TLS); needs --nats-tls-key")
	fs.StringVar(&n.conn.TLSKey, "nats-tls-key", "", "PEM file of the key of --nats-tls-cert")
}

// options are the nats.go options of the connection flags: liveness, TLS
// and credentials.
func (n *natsFlags) options() ([]nats.Option, error) {
	opts, err := n.conn.NATSOptions()
	if err != nil {
		return nil, fmt.Errorf("--nats-ping-interval, --nats-max-pings-outstanding or --nats-tls-*: %w", err)
	}
	if n.creds != "" {
		opts = append(opts, nats.UserCredentials(n.creds))
	}
	return opts, nil
}

// natsEnv maps standard environment variables onto the connection flags.
var natsEnv = map[string]string{"NATS_URL": "nats-url"}

// dial opens a client connection, as the named client, that reconnects
// forever, and bounds ctx by timeout (withTimeout); done closes both.
func (n *natsFlags) dial(ctx context.Context, name string, timeout time.Duration) (_ context.Context, _ jetstream.JetStream, done func(), _ error) {
	opts, err := n.options()
	if err != nil {
		return nil, nil, nil, err
	}
	opts = append(opts, nats.Name("cairn "+name), nats.MaxReconnects(-1), nats.Timeout(5*time.Second))
	nc, err := nats.Connect(n.url, opts...)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("connect to NATS at %s: %w (is `processor serve` running?)", n.url, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, nil, err
	}
	ctx, cancel := withTimeout(ctx, timeout)
	return ctx, js, func() { cancel(); nc.Close() }, nil
}

// run is a client command's work after its flags: dial, then fn. A
// connection that fails is printed (fail); else it returns fn's exit code.
func (n *natsFlags) run(ctx context.Context, name string, timeout time.Duration, io stdio, fn func(context.Context, jetstream.JetStream) int) int {
	ctx, js, done, err := n.dial(ctx, name, timeout)
	if err != nil {
		return fail(io, err)
	}
	defer done()
	return fn(ctx, js)
}

// openLanes opens the lane store: the heads and checkpoints buckets.
func openLanes(ctx context.Context, js jetstream.JetStream) (*lanes.Store, error) {
	heads, err := js.KeyValue(ctx, topology.BucketHeads)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", topology.BucketHeads, err)
	}
	checkpoints, err := js.KeyValue(ctx, topology.BucketCheckpoints)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", topology.BucketCheckpoints, err)
	}
	return lanes.New(heads, checkpoints), nil
}

// usageError prints a usage problem as one line on stderr and returns exit
// code 2.
func usageError(io stdio, format string, args ...any) int {
	fmt.Fprintf(io.err, format+"\n", args...)
	return 2
}

// isTerminal reports whether f is a character device, i.e. a person is
// probably reading it.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// printJSON writes v as one line of JSON.
func printJSON(w io.Writer, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		fmt.Fprintf(w, "{\"error\":{\"code\":%q,\"message\":%q}}\n", errcode.Internal, err.Error())
		return
	}
	fmt.Fprintln(w, string(b))
}

// fail prints err as one clear line with its code, and returns exit code 1.
func fail(io stdio, err error) int {
	code := errcode.Code(err)
	if code == "" {
		code = "error"
	}
	if e := errcode.As(err); e != nil {
		fmt.Fprintf(io.err, "processor: %s: %s%s\n", code, e.Message, detailsSuffix(e.Details))
	} else {
		fmt.Fprintf(io.err, "processor: %s: %v\n", code, err)
	}
	return 1
}

// withTimeout derives a context bounded by d (no bound when d <= 0).
func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

// maxDetailsLine bounds the details printed after an error's message.
const maxDetailsLine = 600

// detailsSuffix renders error details as " (key=value ...)" in key order,
// so the one-line message names the field and rule that failed.
func detailsSuffix(details map[string]any) string {
	if len(details) == 0 {
		return ""
	}
	var b strings.Builder
	for i, k := range slices.Sorted(maps.Keys(details)) {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s=%s", k, detailValue(details[k]))
	}
	line := b.String()
	if len(line) > maxDetailsLine {
		line = strings.ToValidUTF8(line[:maxDetailsLine], "") + "…"
	}
	return " (" + line + ")"
}

// detailValue prints a string bare unless it needs quotes, a list as its
// items joined by commas, and anything else as JSON.
func detailValue(v any) string {
	switch x := v.(type) {
	case string:
		if x == "" || strings.ContainsAny(x, " \t\n\"=()") {
			return strconv.Quote(x)
		}
		return x
	case []any:
		parts := make([]string, len(x))
		for i, item := range x {
			parts[i] = detailValue(item)
		}
		return "[" + strings.Join(parts, ",") + "]"
	case []string:
		return "[" + strings.Join(x, ",") + "]"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
