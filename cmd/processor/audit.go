package main

import (
	"context"
	"fmt"
	"time"

	"github.com/cairnhq/cairn/internal/audit"
	"github.com/nats-io/nats.go/jetstream"
)

func init() {
	register(command{name: "audit", summary: "audit verify: check every lane's checkpoint hash chain", run: runAudit})
}

func runAudit(ctx context.Context, args []string, io stdio) int {
	if len(args) == 0 || args[0] != "verify" {
		return usageError(io, "usage: processor audit verify [flags]")
	}
	fs := newFlagSet("audit verify", "audit verify [flags]", io)
	var nf natsFlags
	nf.register(fs)
	timeout := fs.Duration("timeout", 5*time.Minute, "give up after this long")
	asJSON := fs.Bool("json", !isTerminal(io.out), "print the report as JSON (default when stdout is not a terminal)")
	if ok, code := parseFlags(fs, args[1:], natsEnv); !ok {
		return code
	}
	return nf.run(ctx, "audit", *timeout, io, func(ctx context.Context, js jetstream.JetStream) int {
		store, err := openLanes(ctx, js)
		if err != nil {
			return fail(io, err)
		}
		report, err := audit.Verify(ctx, js, store)
		if err != nil {
			return fail(io, err)
		}
		if *asJSON {
			printJSON(io.out, report)
		} else {
			printAudit(io, report)
		}
		if !report.OK() {
			return 1
		}
		return 0
	})
}

func printAudit(io stdio, report audit.Report) {
	for _, l := range report.Lanes {
		status := "ok"
		if len(l.Breaks) > 0 {
			status = "BROKEN"
		}
		fmt.Fprintf(io.out, "%-6s %s/%s: %d generations, head %s\n", status, l.Lane.RunAgentID, l.Lane.CheckpointNamespace, l.Generations, l.HeadID)
		for _, b := range l.Breaks {
			fmt.Fprintf(io.out, "       generation %d (%s): %s\n", b.Generation, b.Checkpoint, b.Reason)
		}
	}
	fmt.Fprintf(io.out, "%d lanes, %d activations, %d breaks\n", len(report.Lanes), report.Events, report.Breaks)
}
