// Command memory-sync keeps a directory of MEMORY.md files in step with the facts Cairn harvests.
//
//	go run ./examples/memory-sync --nats-url nats://127.0.0.1:4222 --dir ./memory
//
// Each scope gets <dir>/<kind>-<id>/MEMORY.md with one "- title: body" line
// per fact. A line already present is not written again, so replaying the
// stream from the start is safe.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/cairnhq/cairn/events"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func main() {
	url := flag.String("nats-url", nats.DefaultURL, "NATS server URL")
	dir := flag.String("dir", "./memory", "directory of per-scope MEMORY.md files")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	// Cairn's liveness settings: a frozen server is left within 8 s.
	connOpts, err := events.ConnOptions{}.NATSOptions()
	if err != nil {
		log.Fatal(err)
	}
	nc, err := nats.Connect(*url, append(connOpts, nats.MaxReconnects(-1))...)
	if err != nil {
		log.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		log.Fatal(err)
	}
	opts := events.FollowOptions{Stream: events.StreamMemory, Subjects: []string{events.SubjectFlushed}, FromStart: true}
	err = events.Follow(ctx, js, opts, func(ev events.Event) error {
		f := ev.MemoryFlushed
		added, err := appendFacts(filepath.Join(*dir, scopeDir(f.Scope)), f.Facts)
		if err != nil {
			return err
		}
		fmt.Printf("%s:%s: %d facts flushed, %d new lines\n", f.Scope.Kind, f.Scope.ID, f.Count, added)
		return nil
	})
	if err != nil && ctx.Err() == nil {
		log.Fatal(err)
	}
}

var unsafe = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// scopeDir names a scope's directory with characters safe on any filesystem.
func scopeDir(s events.Scope) string {
	return unsafe.ReplaceAllString(s.Kind, "_") + "-" + unsafe.ReplaceAllString(s.ID, "_")
}

// appendFacts adds the lines of facts that MEMORY.md does not have yet.
func appendFacts(dir string, facts []events.Fact) (int, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	path := filepath.Join(dir, "MEMORY.md")
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return 0, err
	}
	have := map[string]bool{}
	for _, line := range strings.Split(string(old), "\n") {
		have[line] = true
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	added := 0
	for _, fact := range facts {
		line := "- " + oneLine(fact.Title) + ": " + oneLine(fact.Body)
		if have[line] {
			continue
		}
		if _, err := fmt.Fprintln(f, line); err != nil {
			return added, err
		}
		have[line] = true
		added++
	}
	return added, f.Sync()
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
