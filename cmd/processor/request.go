package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/events"
	"github.com/nats-io/nats.go/jetstream"
)

func init() {
	register(command{name: "request", summary: "publish a compaction request and print its outcome", run: runRequest})
}

func runRequest(ctx context.Context, args []string, io stdio) int {
	if len(args) > 0 && args[0] == "validate" {
		return runRequestValidate(ctx, args[1:], io)
	}
	fs := newFlagSet("request", "request [flags] FILE|-\n\n`request validate FILE` (or --dry-run) checks the request offline instead.", io)
	var nf natsFlags
	nf.register(fs)
	dryRun := fs.Bool("dry-run", false, "publish nothing: check the request as `request validate` does")
	noWait := fs.Bool("no-wait", false, "return once the request is stored, without waiting for its outcome")
	timeout := fs.Duration("timeout", 2*time.Minute, "how long to wait for the outcome")
	asJSON := fs.Bool("json", !isTerminal(io.out), "print the outcome event as JSON (default when stdout is not a terminal)")
	if ok, code := parseFlags(fs, args, natsEnv); !ok {
		return code
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	if *dryRun {
		return validateRequestFile(ctx, validateOptions{path: fs.Arg(0), nats: nf, useNATS: natsURLGiven(fs), timeout: *timeout, asJSON: *asJSON}, io)
	}
	body, err := readInput(fs.Arg(0), io.in)
	if err != nil {
		return usageError(io, "processor: %v", err)
	}
	requestID, err := requestIDOf(body)
	if err != nil {
		return fail(io, err)
	}
	return nf.run(ctx, "request", *timeout, io, func(ctx context.Context, js jetstream.JetStream) int {
		since := time.Now().Add(-time.Second)
		ack, err := events.PublishRaw(ctx, js, requestID, body, "")
		if err != nil {
			return fail(io, err)
		}
		if *noWait {
			if *asJSON {
				printJSON(io.out, map[string]any{"request_id": requestID, "stream": ack.Stream, "sequence": ack.Sequence, "duplicate": ack.Duplicate})
			} else {
				fmt.Fprintf(io.out, "stored %s as %s #%d%s\n", requestID, ack.Stream, ack.Sequence, map[bool]string{true: " (duplicate)"}[ack.Duplicate])
			}
			return 0
		}
		if ack.Duplicate {
			// A resend: the outcome may have been published long ago.
			if first, err := events.PublishedAt(ctx, js, ack); err == nil {
				since = first.Add(-time.Second)
			}
		}
		ev, err := events.WaitOutcome(ctx, js, requestID, since, events.WithBody(body))
		if err != nil {
			if ctx.Err() != nil {
				return fail(io, fmt.Errorf("no outcome for %s within %s (is `processor serve` running?)", requestID, *timeout))
			}
			return fail(io, err)
		}
		printEvent(io.out, *asJSON, ev)
		if ev.Failed != nil {
			return 1
		}
		return 0
	})
}

// printEvent prints an event as the JSON line it was published as, or for
// a person.
func printEvent(w io.Writer, asJSON bool, ev events.Event) {
	if asJSON {
		fmt.Fprintln(w, strings.TrimSpace(string(ev.Raw)))
	} else {
		printOutcome(w, ev)
	}
}

// readInput reads a file, or stdin for "-".
func readInput(name string, stdin io.Reader) ([]byte, error) {
	if name == "-" {
		return io.ReadAll(stdin)
	}
	return os.ReadFile(name)
}

// requestIDOf reads request_id without decoding the rest of the request.
func requestIDOf(body []byte) (string, error) {
	var head struct {
		RequestID string `json:"request_id"`
	}
	if err := json.Unmarshal(body, &head); err != nil {
		return "", errcode.Wrap(errcode.InvalidRequest, "the request is not a JSON object", err)
	}
	if head.RequestID == "" {
		return "", errcode.New(errcode.InvalidRequest, "the request has no request_id")
	}
	return head.RequestID, nil
}

// printOutcome prints one outcome event for a person.
func printOutcome(w io.Writer, ev events.Event) {
	switch {
	case ev.Activated != nil:
		a := ev.Activated
		fmt.Fprintf(w, "activated %s: %s, generation %d\n", a.RequestID, a.Status, a.Generation)
		fmt.Fprintf(w, "  tokens    %d -> %d (%s reclaimed)\n", a.TokensBefore, a.TokensAfter, percent(a.TokensReclaimed, a.TokensBefore))
		fmt.Fprintf(w, "  retained  %d events, %d artifacts\n", len(a.RetainedEventIDs), len(a.ArtifactIDs))
		fmt.Fprintf(w, "  hash      %s (parent %s)\n", a.CheckpointHash, deref(a.ParentCheckpointHash, "none"))
	case ev.Skipped != nil:
		fmt.Fprintf(w, "skipped %s: %s (%d tokens)\n", ev.Skipped.RequestID, ev.Skipped.Reason, ev.Skipped.TokensBefore)
	case ev.Failed != nil:
		e := ev.Failed.Error
		fmt.Fprintf(w, "failed %s: %s: %s (retryable: %v)\n", ev.Failed.RequestID, e.Code, e.Message, e.Retryable)
		if len(e.Details) > 0 {
			fmt.Fprintf(w, "  details  %s\n", strings.TrimSuffix(strings.TrimPrefix(detailsSuffix(e.Details), " ("), ")"))
		}
	default:
		fmt.Fprintln(w, strings.TrimSpace(string(ev.Raw)))
	}
}

func percent(part, whole int64) string {
	if whole <= 0 {
		return "0%"
	}
	return fmt.Sprintf("%.0f%%", 100*float64(part)/float64(whole))
}

func deref(s *string, fallback string) string {
	if s == nil || *s == "" {
		return fallback
	}
	return *s
}
