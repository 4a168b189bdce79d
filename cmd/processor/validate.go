package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/cairnhq/cairn/events"

	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/internal/inspect"
)

// validation is what `request validate` prints (inspect.Validate).
type validation = inspect.Validation

// validateOptions are the flags `request validate` and `request --dry-run`
// share.
type validateOptions struct {
	path    string
	nats    natsFlags
	useNATS bool // --nats-url (or its environment) was given
	timeout time.Duration
	asJSON  bool
}

const validateSynopsis = "request validate [flags] FILE|-\n\nRuns offline every check the processor makes on a request before any model\ncall or NATS write, and says what the engine would do with it: compacted (with\nthe model call it would make), pruned, skipped with its reason, or failed with\nits code. Exit 0 valid, 1 invalid or bound to fail, 2 usage error.\n`request --dry-run FILE` is the same."

func runRequestValidate(ctx context.Context, args []string, io stdio) int {
	fs := newFlagSet("request validate", validateSynopsis, io)
	var o validateOptions
	o.nats.register(fs)
	fs.DurationVar(&o.timeout, "timeout", 30*time.Second, "how long to wait for NATS when reading events_object")
	fs.BoolVar(&o.asJSON, "json", !isTerminal(io.out), "print JSON (default when stdout is not a terminal)")
	if ok, code := parseFlags(fs, args, natsEnv); !ok {
		return code
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	o.path, o.useNATS = fs.Arg(0), natsURLGiven(fs)
	return validateRequestFile(ctx, o, io)
}

// natsURLGiven reports whether the server was named on the command line or
// in the environment, rather than left at its default.
func natsURLGiven(fs *flag.FlagSet) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "nats-url" })
	for _, env := range envNames("nats-url", natsEnv) {
		if _, set := os.LookupEnv(env); set {
			given = true
		}
	}
	return given
}

func validateRequestFile(ctx context.Context, o validateOptions, io stdio) int {
	body, err := readRequest(o.path, io.in)
	if err != nil {
		return usageError(io, "processor request validate: %v", err)
	}
	v := validateRequest(ctx, body, o, time.Now())
	if o.asJSON {
		printJSON(io.out, v)
	} else {
		printValidation(io, v)
	}
	if !v.OK {
		return 1
	}
	return 0
}

// validateRequest runs the processor's checks (inspect.Validate); the
// events of an events_object are read only with --nats-url.
func validateRequest(ctx context.Context, body []byte, o validateOptions, now time.Time) *validation {
	var load inspect.EventsLoader
	if o.useNATS {
		load = func(ctx context.Context, name string) ([]events.InputEvent, error) {
			return loadEventsObject(ctx, o, name)
		}
	}
	v := inspect.Validate(ctx, body, load, now)
	if v.EventsObject != "" && len(v.Notes) > 0 {
		v.Notes[0] += " (give --nats-url to read the object)"
	}
	return v
}

func printValidation(io stdio, v *validation) {
	if !v.OK {
		fmt.Fprintf(io.err, "processor: %s: %s%s\n", v.Error.Code, v.Error.Message, detailsSuffix(v.Error.Details))
		return
	}
	fmt.Fprintf(io.out, "ok: %s: %s\n", v.RequestID, outcome(v))
	for _, n := range v.Notes {
		fmt.Fprintf(io.out, "  note: %s\n", n)
	}
}

// outcome says in a line what the processor would publish.
func outcome(v *validation) string {
	switch {
	case v.Status == "":
		return "the envelope is valid"
	case v.Summarize != nil:
		s := v.Summarize
		return fmt.Sprintf("would be compacted: the model summarizes %d events (chat_seq %d..%d) in at most %d tokens",
			s.Events, s.FirstChatSeq, s.LastChatSeq, s.OutputTokens)
	case v.Status == engine.StatusSkipped:
		return fmt.Sprintf("would be skipped: %s (%d tokens)", v.Reason, *v.TokensBefore)
	default:
		return fmt.Sprintf("would be %s: %d -> %d tokens", v.Status, *v.TokensBefore, *v.TokensAfter)
	}
}

// loadEventsObject reads the claim-checked events from the server, as the
// processor would, and decodes them as the engine does.
func loadEventsObject(ctx context.Context, o validateOptions, name string) ([]events.InputEvent, error) {
	ctx, js, done, err := o.nats.dial(ctx, "request validate", o.timeout)
	if err != nil {
		return nil, err
	}
	defer done()
	load, err := inspect.OpenObjectLoader(ctx, js)
	if err != nil {
		return nil, err
	}
	return load(ctx, name)
}
