package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/cairnhq/cairn/internal/consumer"
	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/internal/errcode"
	"github.com/cairnhq/cairn/internal/topology"
	"github.com/nats-io/nats.go/jetstream"
)

// validation is what `request validate` prints: whether the processor
// would accept the request and, when the events are at hand, the outcome
// the engine would reach before any model call.
type validation struct {
	OK        bool   `json:"ok"`
	RequestID string `json:"request_id,omitempty"`
	// Status is the would-be outcome: compacted, pruned, skipped or
	// failed; empty when the events could not be read.
	Status       string         `json:"status,omitempty"`
	Reason       string         `json:"reason,omitempty"`
	TokensBefore *int64         `json:"tokens_before,omitempty"`
	TokensAfter  *int64         `json:"tokens_after,omitempty"`
	Summarize    *summarizePlan `json:"summarize,omitempty"`
	Error        *errorView     `json:"error,omitempty"`
	Notes        []string       `json:"notes,omitempty"`
}

// summarizePlan is the first model call a compaction would make.
type summarizePlan struct {
	Events       int   `json:"events"`
	FirstChatSeq int64 `json:"first_chat_seq"`
	LastChatSeq  int64 `json:"last_chat_seq"`
	OutputTokens int   `json:"maximum_output_tokens"`
}

type errorView struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details"`
}

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

// validateRequest runs the processor's checks in the order the processor
// makes them: the pipeline's envelope, the deadline, then the engine's
// decoding, validation and plan.
func validateRequest(ctx context.Context, body []byte, o validateOptions, now time.Time) *validation {
	id, _ := requestIDOf(body) // named in the output when there is one
	v := &validation{RequestID: id}
	env, err := consumer.CheckRequest(body, 0)
	if err != nil {
		return v.failed(err)
	}
	req, err := engine.DecodeRequest(body)
	if err != nil {
		return v.failed(err)
	}
	if req.Events == nil {
		if !o.useNATS {
			v.OK = true
			v.Notes = append(v.Notes, fmt.Sprintf("the events are in events_object %q: only the envelope and the fields besides events were checked (give --nats-url to read the object)", env.EventsObject))
			return v
		}
		if req.Events, err = loadEventsObject(ctx, o, env.EventsObject); err != nil {
			return v.failed(err)
		}
	}
	if !env.Deadline.IsZero() && !now.Before(env.Deadline) {
		return v.failed(errcode.WithDetails(errcode.DeadlineExceeded, "the request's deadline passed before it completed",
			map[string]any{"deadline_at": env.Deadline.UTC().Format(time.RFC3339)}))
	}
	return v.plan(ctx, req, now)
}

// errStopAtModel ends a planning compaction at its first model call.
var errStopAtModel = errors.New("validation stops before the model call")

// planSummarizer records the first model call a compaction asks for and
// refuses it, so that planning never reaches a model.
type planSummarizer struct{ first *engine.Payload }

func (s *planSummarizer) Summarize(_ context.Context, p engine.Payload) (engine.Summary, error) {
	if s.first == nil {
		s.first = &p
	}
	return engine.Summary{}, errStopAtModel
}

// plan runs the engine as `processor compact` does, up to the model call.
// The lane's head (anti-thrash state, active checkpoint) lives on the
// server, so the plan is the one for a lane whose state is the request's.
func (v *validation) plan(ctx context.Context, req *engine.Request, now time.Time) *validation {
	s := &planSummarizer{}
	res, err := engine.Compact(ctx, req, s, now)
	v.Notes = append(v.Notes, "the lane's head on the server is not consulted: its anti-thrash state and active checkpoint may change the outcome")
	if s.first != nil {
		p := s.first
		v.OK, v.Status = true, engine.StatusCompacted
		v.Summarize = &summarizePlan{Events: len(p.Events), FirstChatSeq: p.CoveredRange.FirstChatSeq,
			LastChatSeq: p.CoveredRange.LastChatSeq, OutputTokens: p.MaximumOutputTokens}
		v.Notes = append(v.Notes, "compacted if the model's summary validates and reclaims enough")
		return v
	}
	if err != nil {
		return v.failed(err)
	}
	v.OK, v.Status, v.Reason = true, res.Status, res.Suppression
	v.TokensBefore, v.TokensAfter = &res.TokensBefore, &res.TokensAfter
	return v
}

func (v *validation) failed(err error) *validation {
	e, details := typedError(err)
	v.OK, v.Status = false, "failed"
	v.Error = &errorView{Code: e.Code, Message: e.Message, Details: details}
	return v
}

func printValidation(io stdio, v *validation) {
	if !v.OK {
		fmt.Fprintf(io.err, "processor: %s: %s%s\n", v.Error.Code, v.Error.Message, detailsSuffix(v.Error.Details))
		return
	}
	fmt.Fprintf(io.out, "ok: %s: %s\n", v.RequestID, v.outcome())
	for _, n := range v.Notes {
		fmt.Fprintf(io.out, "  note: %s\n", n)
	}
}

// outcome says in a line what the processor would publish.
func (v *validation) outcome() string {
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

// maxEventsObjectBytes is the processor's default bound on an events
// object (serve --max-events-object-bytes).
const maxEventsObjectBytes = 64 << 20

// loadEventsObject reads the claim-checked events from the server, as the
// processor would, and decodes them as the engine does.
func loadEventsObject(ctx context.Context, o validateOptions, name string) ([]engine.InputEvent, error) {
	ctx, js, done, err := o.nats.dial(ctx, "request validate", o.timeout)
	if err != nil {
		return nil, err
	}
	defer done()
	store, err := js.ObjectStore(ctx, topology.ObjectLanes)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", topology.ObjectLanes, err)
	}
	info, err := store.GetInfo(ctx, name)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return nil, errcode.WithDetails(errcode.EventsObjectMissing, "events_object does not name a stored object",
			map[string]any{"field": "events_object", "rule": "reference", "events_object": name, "cause": err.Error()})
	}
	if err != nil {
		return nil, err
	}
	if int64(info.Size) > maxEventsObjectBytes {
		return nil, errcode.WithDetails(errcode.PayloadTooLarge, "events_object is too large",
			map[string]any{"field": "events_object", "rule": "range", "events_object": name, "bytes": int64(info.Size), "limit": int64(maxEventsObjectBytes)})
	}
	data, err := store.GetBytes(ctx, name)
	if err != nil {
		return nil, err
	}
	return engine.DecodeEvents(data)
}
