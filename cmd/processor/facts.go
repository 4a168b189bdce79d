package main

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cairnhq/cairn/internal/facts"
	"github.com/nats-io/nats.go/jetstream"
)

func init() {
	register(command{name: "facts", summary: "facts list: show the harvested facts of a scope; facts extract FILE: what a request's cut would yield, offline", run: runFacts})
}

func runFacts(ctx context.Context, args []string, io stdio) int {
	if len(args) > 0 && args[0] == "extract" {
		return runFactsExtract(ctx, args[1:], io)
	}
	if len(args) == 0 || args[0] != "list" {
		return usageError(io, "usage: processor facts list --scope kind:id [--json] [--nats-url URL]\n       processor facts extract [--whole-lane] [--explain] [--json] FILE")
	}
	fs := newFlagSet("facts list", "facts list --scope kind:id [flags]", io)
	var nf natsFlags
	nf.register(fs)
	scopeFlag := fs.String("scope", "", "the scope whose facts to list, as kind:id (e.g. thread:c-42, user:alice)")
	asJSON := fs.Bool("json", false, "print the facts as one JSON array instead of a table")
	timeout := fs.Duration("timeout", 30*time.Second, "give up after this long")
	if ok, code := parseFlags(fs, args[1:], natsEnv); !ok {
		return code
	}
	scope, err := facts.ParseScope(*scopeFlag)
	if err != nil {
		return usageError(io, "processor: --scope: %v", err)
	}
	return withFactStore(ctx, nf, "facts", *timeout, io, func(ctx context.Context, store *facts.Store) int {
		list, err := store.List(ctx, scope)
		if err != nil {
			return fail(io, err)
		}
		if *asJSON {
			printJSON(io.out, list)
			return 0
		}
		printFacts(io, list)
		return 0
	})
}

// withFactStore connects as the named client, opens the fact store and runs
// fn with it, all bounded by timeout; it returns fn's exit code.
func withFactStore(ctx context.Context, nf natsFlags, name string, timeout time.Duration, io stdio, fn func(context.Context, *facts.Store) int) int {
	return nf.run(ctx, name, timeout, io, func(ctx context.Context, js jetstream.JetStream) int {
		store, err := facts.OpenStore(ctx, js)
		if err != nil {
			return fail(io, err)
		}
		return fn(ctx, store)
	})
}

// printFacts writes a table of facts, newest first, one line each.
func printFacts(io stdio, list []facts.Fact) {
	tw := tabwriter.NewWriter(io.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SLUG\tUPDATED\tKIND\tPROVENANCE\tTOPICS\tTITLE")
	for _, f := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", f.Slug, f.UpdatedAt.UTC().Format(time.RFC3339), cmp.Or(f.Kind, facts.KindNote), f.Provenance, topicList(f.Topics), f.Title)
	}
	tw.Flush()
	fmt.Fprintf(io.err, "%d facts\n", len(list))
}

// topicList shows topics as "a, b" or "-" for none.
func topicList(topics []string) string {
	if len(topics) == 0 {
		return "-"
	}
	return strings.Join(topics, ", ")
}
