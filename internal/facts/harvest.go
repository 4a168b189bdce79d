package facts

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/events"
	"github.com/cairnhq/cairn/internal/redact"
)

// Result is what one harvest stored.
type Result struct {
	// Facts are the stored facts, in transcript order.
	Facts []Fact
	// Duplicates counts candidates skipped because a fact with the same
	// normalized body is already stored for the scope (or earlier in the job).
	Duplicates int
	// Redacted counts candidates in which a secret was masked, including
	// those dropped for holding nothing but secrets.
	Redacted int
	// LeftOut counts candidates not stored because the job reached its
	// facts bound: the weakest are left out.
	LeftOut int
	// Extractor names the extractor that proposed the facts.
	Extractor string
	// Coverage says how much of the cut the extractor read.
	Coverage Coverage
}

// Harvester runs one job: extract, sanitize, redact, deduplicate, store. It
// writes nothing when the extractor fails. It is safe for concurrent use.
type Harvester struct {
	Store      *Store
	Extractors *Router
	// MaxFacts bounds the facts stored per job.
	MaxFacts int
}

// Harvest extracts facts from job and upserts them. A second run of the same
// job lands on the same slugs, so it adds nothing new. The error is the
// extractor's (the attempt failed and nothing was written) or a store error.
func (h *Harvester) Harvest(ctx context.Context, job Job) (Result, error) {
	ex := h.Extractors.For(job.Scope)
	ext, err := safeExtract(ctx, ex, job)
	if err != nil {
		return Result{}, err
	}
	found, err := h.Store.watchScope(ctx, job.Scope)
	if err != nil {
		return Result{}, err
	}
	existing := make(map[string]string, len(found)) // sameness key → slug
	bySlug := make(map[string]stored, len(found))
	for _, st := range found {
		existing[SamenessKey(st.Body)] = st.Slug
		bySlug[st.Slug] = st
	}
	picked, res := choose(ext.Candidates, existing, job, h.MaxFacts)
	res.Extractor, res.Coverage = ex.Name(), ext.Coverage
	for _, f := range picked {
		// What the watch read is the key's state unless a concurrent run
		// wrote since; the compare-and-swap tells, and only then is it read.
		known := bySlug[f.Slug]
		saved, err := h.Store.upsert(ctx, f, &known)
		if err != nil {
			return Result{}, err
		}
		res.Facts = append(res.Facts, saved)
	}
	return res, nil
}

// safeExtract calls the extractor, turning a panic into an error.
func safeExtract(ctx context.Context, ex Extractor, job Job) (ext Extraction, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = errcode.WithDetails(errcode.HarvestFailed, fmt.Sprintf("extractor %s panicked", ex.Name()), map[string]any{"panic": fmt.Sprint(r)})
		}
	}()
	return ex.Extract(ctx, job)
}

// choose turns candidates into facts: sanitize, redact (dropping facts
// that are nothing but secrets), skip duplicates (SamenessKey) of stored
// facts and of earlier candidates, then keep the maxFacts highest-scored (ties in
// transcript order) and return them in transcript order. A stored fact with
// the same slug is the same note from an earlier run of this job, not a
// duplicate.
func choose(cands []Candidate, existing map[string]string, job Job, maxFacts int) ([]Fact, Result) {
	var res Result
	var out []Fact
	var scores []float64
	seenSame, seenSlug := map[string]bool{}, map[string]bool{}
	for _, raw := range cands {
		c, red, only := redactCandidate(raw)
		// Sanitizing may join text a control character split; mask again.
		c2, red2, only2 := redactCandidate(sanitize(c))
		if red || red2 {
			res.Redacted++
		}
		if only || only2 || c2.Body == "" {
			continue
		}
		hash, same := BodyHash(c2.Body), SamenessKey(c2.Body)
		slug := Slug(job.HeadEntryID, c2.Title)
		if prev, ok := existing[same]; (ok && prev != slug) || seenSame[same] || seenSlug[slug] {
			res.Duplicates++
			continue
		}
		seenSame[same], seenSlug[slug] = true, true
		out = append(out, Fact{
			Slug:       slug,
			Scope:      job.Scope,
			Kind:       validKind(raw.Kind),
			Title:      c2.Title,
			Body:       c2.Body,
			Topics:     c2.Topics,
			Provenance: ProvenanceCompaction,
			Confidence: CompactionConfidence,
			Source:     Source(job.ConversationID, job.HeadEntryID),
			Pinned:     false,
			BodySHA256: hash,
			EntryID:    raw.EntryID,
			Rule:       raw.Rule,
		})
		scores = append(scores, raw.Score)
	}
	kept := strongest(scores, maxFacts)
	res.LeftOut = len(out) - len(kept)
	picked := make([]Fact, 0, len(kept))
	for _, i := range kept {
		picked = append(picked, out[i])
	}
	return picked, res
}

// strongest returns the indexes of the n highest scores, ties to the
// earlier, in ascending index order.
func strongest(scores []float64, n int) []int {
	idx := make([]int, len(scores))
	for i := range idx {
		idx[i] = i
	}
	if len(idx) <= n {
		return idx
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(scores[b], scores[a]) })
	idx = idx[:n]
	slices.Sort(idx)
	return idx
}

// PreviewHeuristic is what the default extractor would store from a job,
// offline: the heuristic extractor and the harvest's sanitizing,
// redaction, dedupe and facts bound over job, with no store (no dedupe
// against stored facts) and nothing written.
func PreviewHeuristic(ctx context.Context, job Job, maxFacts int) Result {
	ext, _ := Heuristic{}.Extract(ctx, job)
	picked, res := choose(ext.Candidates, nil, job, maxFacts)
	res.Facts, res.Extractor, res.Coverage = picked, Heuristic{}.Name(), ext.Coverage
	return res
}

// FlushedEventID is the event id of a job's memory.flushed event: derived
// from the head entry (the checkpoint id), so a re-run publishes the same id
// and the event stream drops the repeat.
func FlushedEventID(headEntryID string) string { return headEntryID + ":" + events.KindMemoryFlush }

// FailedEventID is the event id of a job's memory.failed event.
func FailedEventID(headEntryID string) string { return headEntryID + ":" + events.KindMemoryFailed }

// Flushed returns the memory.flushed event of a harvest.
func Flushed(job Job, res Result, now time.Time) events.MemoryFlushed {
	list := make([]events.Fact, 0, len(res.Facts))
	for _, f := range res.Facts {
		list = append(list, events.Fact{
			Slug: f.Slug, Kind: validKind(f.Kind), Title: f.Title, Body: f.Body, Topics: f.Topics,
			Confidence: f.Confidence, Provenance: f.Provenance, Source: f.Source,
		})
	}
	return events.MemoryFlushed{
		V:              events.Version,
		EventID:        FlushedEventID(job.HeadEntryID),
		Kind:           events.KindMemoryFlush,
		ConversationID: job.ConversationID,
		HeadEntryID:    job.HeadEntryID,
		Scope:          job.Scope,
		Facts:          list,
		Count:          len(list),
		Duplicates:     res.Duplicates,
		Redacted:       res.Redacted,
		LeftOut:        res.LeftOut,
		Extractor:      res.Extractor,
		Coverage:       res.Coverage,
		OccurredAt:     eventTime(now),
	}
}

// Failed returns the memory.failed event of a job that gave up with err.
func Failed(job Job, err error, now time.Time) events.MemoryFailed {
	e := errcode.As(err)
	if e == nil {
		e = errcode.Wrap(errcode.HarvestFailed, "harvest failed", err)
	}
	msg := e.Message
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	msg, _ = redact.String(msg)
	details := e.Details
	if details == nil {
		details = map[string]any{}
	}
	return events.MemoryFailed{
		V:              events.Version,
		EventID:        FailedEventID(job.HeadEntryID),
		Kind:           events.KindMemoryFailed,
		ConversationID: job.ConversationID,
		HeadEntryID:    job.HeadEntryID,
		Scope:          job.Scope,
		Error:          events.Error{Code: e.Code, Message: msg, Details: details, Retryable: false},
		OccurredAt:     eventTime(now),
	}
}

// eventTime is an event's occurred_at: UTC, whole seconds, as every
// Cairn event has it (subjects.md).
func eventTime(now time.Time) time.Time { return now.UTC().Truncate(time.Second) }
