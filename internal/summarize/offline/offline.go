// Package offline summarizes lane chunks deterministically, without a model.
//
// The Summarizer extracts a semantic checkpoint from the events it is given:
// user requests as byte-exact excerpts, constraints and decisions from the
// sentences that state them, errors and progress from tool calls and their
// results, artifact references, and the identifiers (paths, URLs, commands,
// ids, versions) a continuation needs verbatim. Every entry cites the events
// it came from, so the output passes the engine's source-backed validation.
// Entries of the previous semantic are carried forward and merged, and the
// result is trimmed, least useful and oldest first, to a byte budget
// proportional to the chunk.
package offline

import (
	"context"
	"errors"
	"fmt"

	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/semantic"
)

// bounds are the size limits of the semantic schema, which bound the
// output and the options. The copy is taken once, so that the output does
// not change if a caller changes semantic.DefaultBounds.
var bounds = semantic.DefaultBounds

// Limits that bound the options.
const (
	// maxSemanticBytes is the policy default semantic_max_bytes.
	maxSemanticBytes = semantic.DefaultMaxBytes
	// minBudget leaves room for the empty skeleton plus a few entries.
	minBudget = 1024
)

// Options tunes the summarizer. The zero value of a field means its default.
type Options struct {
	// MaxBytes is the hard cap on the JSON size of one output, at most
	// 131 072 (the default semantic_max_bytes). Default 65 536.
	MaxBytes int
	// MinBytes is the smallest size budget, however small the chunk.
	// 1 024..MaxBytes, default 4 096.
	MinBytes int
	// Ratio is the target output size relative to the approximate wire size
	// of the chunk's events, to which the previous semantic's size is added;
	// 0 < Ratio ≤ 1, default 0.1.
	Ratio float64
	// MaxTextBytes caps every free text (constraints, decisions, errors,
	// progress, purposes); 64..4 000, default 400.
	MaxTextBytes int
	// ExcerptBytes caps a user-request excerpt; 32..4 000, default 300.
	ExcerptBytes int
	// MaxCitations caps the source ids of one entry, newest kept; 1..32,
	// default 4.
	MaxCitations int
	// MaxIdentifiers bounds the identifiers tracked for critical_context,
	// least recently seen dropped first; 16..4 096, default 1 024.
	MaxIdentifiers int
}

// DefaultOptions returns the defaults documented on Options.
func DefaultOptions() Options {
	return Options{
		MaxBytes:       65536,
		MinBytes:       4096,
		Ratio:          0.1,
		MaxTextBytes:   400,
		ExcerptBytes:   300,
		MaxCitations:   4,
		MaxIdentifiers: 1024,
	}
}

// Validate reports the first field outside its documented bounds as an
// *errcode.Error with code internal_error (a configuration mistake). Zero
// fields are valid: they take their defaults.
func (o Options) Validate() error {
	checks := []struct {
		name      string
		v, lo, hi int
	}{
		{"MaxBytes", o.MaxBytes, minBudget, maxSemanticBytes},
		{"MinBytes", o.MinBytes, minBudget, maxSemanticBytes},
		{"MaxTextBytes", o.MaxTextBytes, 64, bounds.TextBytes},
		{"ExcerptBytes", o.ExcerptBytes, 32, bounds.TextBytes},
		{"MaxCitations", o.MaxCitations, 1, bounds.SourceEventIDs},
		{"MaxIdentifiers", o.MaxIdentifiers, 16, 4096},
	}
	for _, c := range checks {
		if c.v != 0 && (c.v < c.lo || c.v > c.hi) {
			return errcode.New(errcode.Internal, fmt.Sprintf("offline summarizer: %s = %d, want %d..%d", c.name, c.v, c.lo, c.hi))
		}
	}
	if o.Ratio != 0 && !(o.Ratio > 0 && o.Ratio <= 1) {
		return errcode.New(errcode.Internal, fmt.Sprintf("offline summarizer: Ratio = %v, want 0 < Ratio <= 1", o.Ratio))
	}
	if o.MinBytes != 0 && o.MaxBytes != 0 && o.MinBytes > o.MaxBytes {
		return errcode.New(errcode.Internal, "offline summarizer: MinBytes exceeds MaxBytes")
	}
	return nil
}

// normalized fills zero fields with defaults and clamps the rest into bounds,
// so a Summarizer is always usable.
func (o Options) normalized() Options {
	d := DefaultOptions()
	fill := func(v *int, def, lo, hi int) {
		if *v == 0 {
			*v = def
		}
		*v = min(max(*v, lo), hi)
	}
	fill(&o.MaxBytes, d.MaxBytes, minBudget, maxSemanticBytes)
	fill(&o.MinBytes, d.MinBytes, minBudget, o.MaxBytes)
	fill(&o.MaxTextBytes, d.MaxTextBytes, 64, bounds.TextBytes)
	fill(&o.ExcerptBytes, d.ExcerptBytes, 32, bounds.TextBytes)
	fill(&o.MaxCitations, d.MaxCitations, 1, bounds.SourceEventIDs)
	fill(&o.MaxIdentifiers, d.MaxIdentifiers, 16, 4096)
	if !(o.Ratio > 0 && o.Ratio <= 1) {
		o.Ratio = d.Ratio
	}
	return o
}

// Summarizer is the offline extractive engine.Summarizer. It is stateless
// and safe for concurrent use.
type Summarizer struct {
	opts Options
}

var _ engine.Summarizer = (*Summarizer)(nil)

// New returns a Summarizer. Zero fields of o take their defaults and
// out-of-range fields are clamped into bounds; call o.Validate first to reject
// them instead.
func New(o Options) *Summarizer {
	return &Summarizer{opts: o.normalized()}
}

// Summarize returns a *semantic.Semantic for p with no usage. The output
// covers exactly p.CoveredRange, cites only events of p and of
// p.PreviousSemantic, and is deterministic: the same payload gives the same
// output. A repair call (p.Repair set) gets the same output again, except
// that a repair reporting the byte limit (details "limit") shrinks it under
// that limit, which the payload does not otherwise tell. The only error is
// ctx's, as an *errcode.Error (deadline_exceeded or compaction_provider_error).
func (s *Summarizer) Summarize(ctx context.Context, p engine.Payload) (engine.Summary, error) {
	if err := ctx.Err(); err != nil {
		return engine.Summary{}, contextError(err)
	}
	out, err := summarize(ctx, s.opts, p)
	if err != nil {
		return engine.Summary{}, contextError(err)
	}
	return engine.Summary{Output: out}, nil
}

func contextError(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return errcode.Wrap(errcode.DeadlineExceeded, "offline summary ran out of time", err)
	}
	e := errcode.Wrap(errcode.ProviderError, "offline summary was cancelled", err)
	e.Retryable = true
	return e
}

// summarize is the whole extraction: analyse the chunk, merge with the
// previous semantic, bound and trim.
func summarize(ctx context.Context, o Options, p engine.Payload) (*semantic.Semantic, error) {
	d, err := summarizeDraft(ctx, o, p)
	if err != nil {
		return nil, err
	}
	out := d.output()
	out.s.Coverage = p.CoveredRange
	trim(out, budget(o, p, d.sourceBytes))
	return out.semantic(), nil
}
