package main

import (
	"context"
	"fmt"
	"time"

	"github.com/cairnhq/cairn/internal/facts"
)

func init() {
	register(command{name: "memory", summary: "memory render: print a scope's <agent_memory> block for a system prompt", run: runMemory})
}

func runMemory(ctx context.Context, args []string, io stdio) int {
	if len(args) == 0 || args[0] != "render" {
		return usageError(io, "usage: processor memory render --scope kind:id [--max-bytes N] [--nats-url URL]")
	}
	fs := newFlagSet("memory render", "memory render --scope kind:id [flags]", io)
	var nf natsFlags
	nf.register(fs)
	scopeFlag := fs.String("scope", "", "the scope whose memory to render, as kind:id")
	maxBytes := fs.Int("max-bytes", 4096, "bound of the rendered block in bytes (64..1048576)")
	timeout := fs.Duration("timeout", 30*time.Second, "give up after this long")
	if ok, code := parseFlags(fs, args[1:], natsEnv); !ok {
		return code
	}
	scope, err := facts.ParseScope(*scopeFlag)
	if err != nil {
		return usageError(io, "processor: --scope: %v", err)
	}
	if *maxBytes < 64 || *maxBytes > 1<<20 {
		return usageError(io, "processor: --max-bytes must be 64..1048576, got %d", *maxBytes)
	}
	return withFactStore(ctx, nf, "memory", *timeout, io, func(ctx context.Context, store *facts.Store) int {
		block, err := facts.Render(ctx, store, scope, *maxBytes)
		if err != nil {
			return fail(io, err)
		}
		if block != "" {
			fmt.Fprintln(io.out, block)
		}
		return 0
	})
}
