package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/cairnhq/cairn/canonical"
	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/internal/inspect"
)

func init() {
	register(command{name: "compact", summary: "compact one Request v1 file offline (no NATS) and print the Result", run: runCompact})
}

// summarizerFor builds the Summarizer named by --summarizer; tests
// substitute their own.
var summarizerFor = newSummarizer

// runCompact reads a Request (FILE or stdin), runs the engine and prints the
// Result or {"error": {...}}. Exit 0 for skipped/pruned/compacted, 1 for a
// typed compaction error, 2 for a usage error.
func runCompact(ctx context.Context, args []string, io stdio) int {
	fs := newFlagSet("compact", "compact [flags] [FILE]\n\nReads a Request v1 (FILE, or stdin when FILE is absent or -), compacts it\nwith the engine and prints one JSON object: the Result or {\"error\": ...}.\nExit 0 skipped/pruned/compacted, 1 compaction error, 2 usage error.", io)
	name := fs.String("summarizer", "offline", "summarizer to call for a summary: offline (deterministic, no network) or openai (see the model flags)")
	var model modelFlags
	model.register(fs)
	if ok, code := parseFlags(fs, args, modelEnv); !ok {
		return code
	}
	if fs.NArg() > 1 {
		fmt.Fprintln(io.err, "processor compact: at most one FILE argument")
		fs.Usage()
		return 2
	}
	data, err := readRequest(fs.Arg(0), io.in)
	if err != nil {
		return usageError(io, "processor compact: %v", err)
	}
	req, err := engine.DecodeRequest(data)
	if err != nil {
		return printError(io, err)
	}
	if req.Events == nil {
		return usageError(io, "processor compact: the request names events_object %q; offline compaction needs the events inline (\"events\")", req.EventsObject)
	}
	s, err := summarizerFor(*name, model)
	if err != nil {
		return usageError(io, "processor compact: summarizer %q: %v", *name, err)
	}
	res, err := engine.Compact(ctx, req, s, time.Now())
	if err != nil {
		return printError(io, err)
	}
	if err := writeJSON(io.out, res.Map()); err != nil {
		fmt.Fprintln(io.err, "processor compact:", err)
		return 1
	}
	return 0
}

// readRequest reads the named file, or stdin for "" and "-", bounded by
// the engine's request limit.
func readRequest(path string, stdin io.Reader) ([]byte, error) {
	r := stdin
	if path != "" && path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, engine.MaxRequestBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading the request: %w", err)
	}
	return data, nil
}

// printError prints a typed error as {"error": {code, message, details}}
// and returns exit code 1.
func printError(io stdio, err error) int {
	e, details := typedError(err)
	out := map[string]any{"error": map[string]any{"code": e.Code, "message": e.Message, "details": details}}
	if perr := writeJSON(io.out, out); perr != nil {
		fmt.Fprintf(io.err, "processor compact: %s: %s\n", e.Code, e.Message)
	}
	return 1
}

// typedError is err as a typed error (internal_error when it has no code)
// with its details, never nil, as the commands print them.
func typedError(err error) (*errcode.Error, map[string]any) {
	return inspect.TypedError(err)
}

// writeJSON writes v canonically encoded and indented, plus a newline.
func writeJSON(w io.Writer, v any) error {
	b, err := canonical.Encode(v)
	if err != nil {
		return err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return err
	}
	out.WriteByte('\n')
	_, err = out.WriteTo(w)
	return err
}
