package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/cairnhq/cairn/events"
	"github.com/cairnhq/cairn/internal/lanegen"
	"github.com/cairnhq/cairn/semantic"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func init() {
	register(command{name: "demo", summary: "run Cairn on a throwaway embedded server and compact the example lane", run: runDemo})
}

// defaultDemoFile is the shipped example; without it the demo generates a lane.
const defaultDemoFile = "examples/coding-agent-lane.json"

func runDemo(ctx context.Context, args []string, io stdio) int {
	fs := newFlagSet("demo", "demo [flags]", io)
	file := fs.String("file", defaultDemoFile, "request to compact (a generated coding-agent lane when the file does not exist)")
	timeout := fs.Duration("timeout", time.Minute, "give up after this long")
	asJSON := fs.Bool("json", false, "print the outcome events as JSON lines")
	if ok, code := parseFlags(fs, args, nil); !ok {
		return code
	}
	ctx, cancel := withTimeout(ctx, *timeout)
	defer cancel()
	body, source, err := demoRequest(*file)
	if err != nil {
		return fail(io, err)
	}
	dir, err := os.MkdirTemp("", "cairn-demo-")
	if err != nil {
		return fail(io, err)
	}
	defer os.RemoveAll(dir)

	fmt.Fprintf(io.err, "starting Cairn on an embedded NATS server in %s ...\n", dir)
	info, stop, err := serveInBackground(ctx, demoConfig(dir))
	if err != nil {
		return fail(io, err)
	}
	defer stop()
	nc, err := nats.Connect(info.NATSURL)
	if err != nil {
		return fail(io, err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	return demoRun(ctx, js, body, source, *asJSON, io)
}

// demoConfig is serve's default configuration on a fresh embedded server
// in dir, without a metrics listener.
func demoConfig(dir string) serveConfig {
	var cfg serveConfig
	fs := newFlagSet("demo", "", stdio{err: io.Discard})
	cfg.register(fs)
	cfg.dataDir = dir + "/data"
	cfg.listen = "127.0.0.1:-1"
	cfg.metricsAddr = "none"
	cfg.harvest.MemoryDir = dir + "/memory"
	return cfg
}

// serveInBackground runs serve with cfg, logging nothing, until the
// returned stop, and returns once it serves, or when ctx ends first. serve
// itself outlives ctx: stop ends it.
func serveInBackground(ctx context.Context, cfg serveConfig) (serveInfo, func(), error) {
	ready := make(chan serveInfo, 1)
	served := make(chan error, 1)
	cfg.ready = ready
	serveCtx, stopServe := context.WithCancel(context.WithoutCancel(ctx))
	go func() { served <- serve(serveCtx, cfg, slog.New(slog.DiscardHandler)) }()
	stop := func() { stopServe(); <-served }
	select {
	case info := <-ready:
		return info, stop, nil
	case err := <-served:
		return serveInfo{}, nil, fmt.Errorf("the service did not start: %w", err)
	case <-ctx.Done():
		stop()
		return serveInfo{}, nil, ctx.Err()
	}
}

// demoRequest reads the example, or generates a lane when it is missing.
func demoRequest(file string) ([]byte, string, error) {
	body, err := os.ReadFile(file)
	if err == nil {
		return body, file, nil
	}
	if !errors.Is(err, os.ErrNotExist) || file != defaultDemoFile {
		return nil, "", err
	}
	return lanegen.RequestJSON(lanegen.RequestOptions{Lane: lanegen.Options{Events: 300, Seed: 7}}), "a generated 300-event coding-agent lane", nil
}

func demoRun(ctx context.Context, js jetstream.JetStream, body []byte, source string, asJSON bool, io stdio) int {
	requestID, err := requestIDOf(body)
	if err != nil {
		return fail(io, err)
	}
	since := time.Now().Add(-time.Second)
	fmt.Fprintf(io.err, "publishing %s (%d KB) as request %s ...\n", source, len(body)/1024, requestID)
	if _, err := events.PublishRaw(ctx, js, requestID, body, ""); err != nil {
		return fail(io, err)
	}
	outcome, err := events.WaitOutcome(ctx, js, requestID, since)
	if err != nil {
		return fail(io, err)
	}
	printEvent(io.out, asJSON, outcome)
	if outcome.Activated == nil {
		return 1
	}
	if !asJSON {
		printCheckpoint(io.out, outcome.Activated.Checkpoint)
	}
	if outcome.Activated.Status != "compacted" {
		return 0
	}
	flush, err := waitFlush(ctx, js, outcome.Activated.CheckpointID, since)
	if err != nil {
		return fail(io, fmt.Errorf("waiting for harvested facts: %w", err))
	}
	if asJSON {
		fmt.Fprintln(io.out, strings.TrimSpace(string(flush.Raw)))
		return 0
	}
	f := flush.MemoryFlushed
	fmt.Fprintf(io.out, "\nfacts flushed to %s:%s (%d stored, %d duplicates, %d secrets redacted, extractor %s, %d of %d cut events read):\n",
		f.Scope.Kind, f.Scope.ID, f.Count, f.Duplicates, f.Redacted, f.Extractor, f.Coverage.EntriesRead, f.Coverage.EntriesCut)
	for _, fact := range f.Facts {
		fmt.Fprintf(io.out, "  - [%s] %s\n", fact.Kind, fact.Title)
	}
	return 0
}

// printCheckpoint prints what a later turn would continue from.
func printCheckpoint(w io.Writer, raw json.RawMessage) {
	var cp struct {
		Semantic *semantic.Semantic `json:"semantic"`
	}
	if json.Unmarshal(raw, &cp) != nil || cp.Semantic == nil {
		return
	}
	s := cp.Semantic
	section := func(title string, items []string) {
		if len(items) == 0 {
			return
		}
		fmt.Fprintf(w, "\n%s:\n", title)
		for i, it := range items {
			if i == 5 {
				fmt.Fprintf(w, "  ... and %d more\n", len(items)-5)
				break
			}
			fmt.Fprintf(w, "  - %s\n", shorten(it, 110))
		}
	}
	text := func(e semantic.Sourced) string { return e.Text }
	section("objective", texts(s.Objective, text))
	section("user requests", texts(s.UserRequests, func(r semantic.UserRequest) string {
		if r.ExactExcerpt == nil {
			return r.Status + ": [secret omitted]"
		}
		return r.Status + ": " + *r.ExactExcerpt
	}))
	section("constraints", texts(s.Constraints, text))
	section("errors", texts(s.Errors, func(e semantic.ErrorEntry) string { return e.Status + ": " + e.Message }))
}

func texts[T any](entries []T, text func(T) string) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = text(e)
	}
	return out
}

func waitFlush(ctx context.Context, js jetstream.JetStream, checkpointID string, since time.Time) (events.Event, error) {
	var found events.Event
	err := events.Follow(ctx, js, events.FollowOptions{Stream: events.StreamMemory, StartTime: &since}, func(ev events.Event) error {
		if (ev.MemoryFlushed != nil && ev.MemoryFlushed.HeadEntryID == checkpointID) || (ev.MemoryFailed != nil && ev.MemoryFailed.HeadEntryID == checkpointID) {
			found = ev
			return errStop
		}
		return nil
	})
	if errors.Is(err, errStop) {
		if found.MemoryFailed != nil {
			return found, fmt.Errorf("%s: %s", found.MemoryFailed.Error.Code, found.MemoryFailed.Error.Message)
		}
		return found, nil
	}
	return found, err
}

var errStop = errors.New("stop")

func shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
