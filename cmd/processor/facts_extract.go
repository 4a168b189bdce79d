package main

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/cairnhq/cairn/events"

	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/internal/facts"
)

// extractReport is what `facts extract --json` prints.
type extractReport struct {
	Status   string           `json:"status"`
	Cut      int              `json:"cut_entries"`
	Coverage facts.Coverage   `json:"coverage"`
	Facts    []extractedFact  `json:"facts"`
	LeftOut  int              `json:"left_out"`
	Explain  []explainedEntry `json:"explain,omitempty"`
	Skipped  map[string]int   `json:"skipped,omitempty"`
	Redacted int              `json:"redacted"`
	Scope    facts.Scope      `json:"scope"`
}

type extractedFact struct {
	EntryID string   `json:"entry_id"`
	Kind    string   `json:"kind"`
	Rule    string   `json:"rule"`
	Title   string   `json:"title"`
	Body    string   `json:"body"`
	Topics  []string `json:"topics"`
}

type explainedEntry struct {
	EntryID  string          `json:"entry_id"`
	Role     string          `json:"role"`
	Verdicts []facts.Verdict `json:"verdicts"`
}

// runFactsExtract shows offline what the default extractor would store
// from a request's cut: it compacts the request as `compact` does (the
// offline summarizer, no NATS), takes the events the compaction cut, and
// runs the heuristic extractor and the harvest's sanitizing, redaction,
// dedupe and facts bound over them. Exit 0 when it ran, 1 when the request
// fails to compact, 2 on a usage error.
func runFactsExtract(ctx context.Context, args []string, io stdio) int {
	fs := newFlagSet("facts extract", "facts extract [flags] FILE\n\nCompacts the request in FILE offline, as `compact` does, and shows the facts the\ndefault (heuristic) extractor would store from what the compaction cut, with the\nrule that kept each. Nothing is sent or stored.", io)
	whole := fs.Bool("whole-lane", false, "read every event of the request, not only what a compaction would cut (for a lane that would not compact)")
	explain := fs.Bool("explain", false, "also show every sentence read and why it was kept or skipped")
	asJSON := fs.Bool("json", false, "print one JSON object")
	maxFacts := fs.Int("harvest-max-facts", facts.DefaultConfig().MaxFacts, "facts stored per harvest, as serve's flag")
	if ok, code := parseFlags(fs, args, nil); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return usageError(io, "usage: processor facts extract [--whole-lane] [--explain] [--json] FILE")
	}
	if *maxFacts < 1 || *maxFacts > 64 {
		return usageError(io, "processor facts extract: --harvest-max-facts must be 1..64")
	}
	data, err := readRequest(fs.Arg(0), io.in)
	if err != nil {
		return usageError(io, "processor facts extract: %v", err)
	}
	req, err := engine.DecodeRequest(data)
	if err != nil {
		return printError(io, err)
	}
	if req.Events == nil {
		return usageError(io, "processor facts extract: the request names events_object %q; offline extraction needs the events inline (\"events\")", req.EventsObject)
	}
	status, cut, err := cutOf(ctx, req, *whole)
	if err != nil {
		return printError(io, err)
	}
	rep := extract(ctx, req, status, cut, *maxFacts, *explain)
	if *asJSON || !isTerminal(io.out) {
		printJSON(io.out, rep)
		return 0
	}
	printExtract(io, rep)
	return 0
}

// cutOf returns the request's outcome offline and the entries a harvest of
// it would read: the cut of a compaction, every event with whole.
func cutOf(ctx context.Context, req *engine.Request, whole bool) (string, []facts.Entry, error) {
	status := "whole_lane"
	retained := map[string]bool{}
	if !whole {
		s, err := summarizerFor("offline", modelFlags{})
		if err != nil {
			return "", nil, err
		}
		res, err := engine.Compact(ctx, req, s, time.Now())
		if err != nil {
			return "", nil, err
		}
		status = res.Status
		if res.Status != events.StatusCompacted {
			return status, nil, nil
		}
		for _, id := range res.Checkpoint.RetainedEventIDs {
			retained[id] = true
		}
	}
	var cut []facts.Entry
	for _, e := range req.Events {
		if retained[e.EventID] {
			continue
		}
		entry := facts.Entry{ID: e.EventID, Role: e.Role}
		if e.Content != nil {
			entry.Content = *e.Content
		}
		entry.ToolName, _ = e.Tool["name"].(string)
		cut = append(cut, entry)
	}
	return status, cut, nil
}

func extract(ctx context.Context, req *engine.Request, status string, cut []facts.Entry, maxFacts int, explain bool) extractReport {
	scope := facts.Scope(req.EffectiveScope())
	rep := extractReport{Status: status, Cut: len(cut), Scope: scope, Facts: []extractedFact{}}
	if len(cut) == 0 {
		return rep
	}
	job := facts.Job{V: facts.PointerJobVersion, ConversationID: req.ThreadID, HeadEntryID: req.RequestID, Scope: scope, Entries: cut, RequestSeq: 1}
	preview := facts.PreviewHeuristic(ctx, job, maxFacts)
	rep.Coverage, rep.LeftOut, rep.Redacted = preview.Coverage, preview.LeftOut, preview.Redacted
	for _, f := range preview.Facts {
		rep.Facts = append(rep.Facts, extractedFact{EntryID: f.EntryID, Kind: f.Kind, Rule: f.Rule, Title: f.Title, Body: f.Body, Topics: f.Topics})
	}
	if explain {
		rep.Skipped = map[string]int{}
		for _, e := range cut {
			verdicts := facts.Explain(e)
			if len(verdicts) == 0 {
				continue
			}
			for _, v := range verdicts {
				if !v.Kept {
					rep.Skipped[v.Skipped]++
				}
			}
			rep.Explain = append(rep.Explain, explainedEntry{EntryID: e.ID, Role: e.Role, Verdicts: verdicts})
		}
	}
	return rep
}

func printExtract(io stdio, rep extractReport) {
	fmt.Fprintf(io.out, "%s: %d cut entries read of %d; %d facts for %s:%s", rep.Status, rep.Coverage.EntriesRead, rep.Cut, len(rep.Facts), rep.Scope.Kind, rep.Scope.ID)
	if rep.LeftOut > 0 {
		fmt.Fprintf(io.out, " (%d more left out by --harvest-max-facts)", rep.LeftOut)
	}
	fmt.Fprintln(io.out)
	if rep.Status != events.StatusCompacted && rep.Status != "whole_lane" {
		fmt.Fprintln(io.out, "nothing is cut, so nothing is harvested; --whole-lane reads every event")
	}
	tw := tabwriter.NewWriter(io.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ENTRY\tKIND\tRULE\tTOPICS\tTITLE")
	for _, f := range rep.Facts {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", f.EntryID, f.Kind, f.Rule, topicList(f.Topics), f.Title)
	}
	tw.Flush()
	for _, e := range rep.Explain {
		for _, v := range e.Verdicts {
			verdict := "skip " + v.Skipped
			if v.Kept {
				verdict = fmt.Sprintf("keep %s (%s, %.2f)", v.Kind, v.Rule, v.Score)
			}
			fmt.Fprintf(io.out, "  %s %s: %-40s %s\n", e.EntryID, e.Role, verdict, v.Text)
		}
	}
}
