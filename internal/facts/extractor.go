package facts

import (
	"context"
	"fmt"
	"strings"

	"github.com/cairnhq/cairn/events"
)

// Candidate is a fact an extractor proposes, before it is sanitized,
// redacted and deduplicated.
type Candidate struct {
	Title  string   `json:"title"`
	Body   string   `json:"body"`
	Topics []string `json:"topics"`
	// Kind is one of Kinds; an unknown or empty kind is stored as KindNote.
	Kind Kind `json:"kind"`
	// Rule names what made the extractor propose the fact (a heuristic
	// rule, or "model"), for `processor facts extract`; it is not stored.
	Rule string `json:"-"`
	// Score ranks candidates when a job proposes more than it may store:
	// the highest are kept, ties in transcript order.
	Score float64 `json:"-"`
	// EntryID is the cut entry the fact was stated in, when known.
	EntryID string `json:"-"`
}

// Extraction is what an extractor proposes from one job, and how much of
// the cut it read to do so.
type Extraction struct {
	Candidates []Candidate
	// Coverage says how much of the cut was read; an extractor that read
	// every entry sets EntriesRead to EntriesCut.
	Coverage Coverage
}

// Coverage is how much of a job's cut an extractor read
// (memory.flushed "coverage").
type Coverage = events.Coverage

// Extractor proposes durable facts from a harvest job's cut.
//
// Extract honours ctx and reads the job's entries (Job.CutEntries). An
// error fails the attempt: the worker writes nothing and retries the job
// later. An *errcode.Error is reported as is in memory.failed; any other
// error as harvest_failed. Implementations must be safe for concurrent use.
type Extractor interface {
	Extract(ctx context.Context, job Job) (Extraction, error)
	// Name is reported in the flushed event's "extractor" field.
	Name() string
}

// Route sends the jobs of one scope, or of every scope of a kind (ID "*"),
// to an extractor.
type Route struct {
	Kind      string
	ID        string
	Extractor Extractor
}

// Router picks the extractor of a job by its scope: an exact kind and id
// route first, then a kind wildcard route, then the default. It is immutable
// and safe for concurrent use.
type Router struct {
	def   Extractor
	exact map[Scope]Extractor
	kinds map[string]Extractor
}

// NewRouter returns a Router with the given default extractor (Heuristic when
// nil) and routes. Two routes for the same scope, or a route without a kind,
// id or extractor, are an error.
func NewRouter(def Extractor, routes ...Route) (*Router, error) {
	if def == nil {
		def = Heuristic{}
	}
	r := &Router{def: def, exact: map[Scope]Extractor{}, kinds: map[string]Extractor{}}
	for _, rt := range routes {
		if rt.Kind == "" || rt.ID == "" || rt.Extractor == nil {
			return nil, fmt.Errorf("facts: route %q:%q needs a kind, an id (or \"*\") and an extractor", rt.Kind, rt.ID)
		}
		if rt.ID == "*" {
			if _, dup := r.kinds[rt.Kind]; dup {
				return nil, fmt.Errorf("facts: two routes for scope kind %q", rt.Kind)
			}
			r.kinds[rt.Kind] = rt.Extractor
			continue
		}
		s := Scope{Kind: rt.Kind, ID: rt.ID}
		if _, dup := r.exact[s]; dup {
			return nil, fmt.Errorf("facts: two routes for scope %s:%s", rt.Kind, rt.ID)
		}
		r.exact[s] = rt.Extractor
	}
	return r, nil
}

// For returns the extractor for scope.
func (r *Router) For(scope Scope) Extractor {
	if e, ok := r.exact[scope]; ok {
		return e
	}
	if e, ok := r.kinds[scope.Kind]; ok {
		return e
	}
	return r.def
}

// ParseRoutes parses routes written as "kind:id=name" pairs separated by
// commas (id "*" routes a whole kind), as a flag or environment variable
// gives them, e.g. "tenant:acme=model,user:*=heuristic". Each name must be a
// key of byName. An empty spec yields no routes.
func ParseRoutes(spec string, byName map[string]Extractor) ([]Route, error) {
	var out []Route
	for part := range strings.SplitSeq(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		scope, name, ok := strings.Cut(part, "=")
		if !ok {
			return nil, fmt.Errorf("facts: route %q: want kind:id=extractor", part)
		}
		kind, id, ok := strings.Cut(scope, ":")
		if !ok || kind == "" || id == "" {
			return nil, fmt.Errorf("facts: route %q: want kind:id=extractor", part)
		}
		ex, ok := byName[name]
		if !ok {
			return nil, fmt.Errorf("facts: route %q: unknown extractor %q", part, name)
		}
		out = append(out, Route{Kind: kind, ID: id, Extractor: ex})
	}
	return out, nil
}
