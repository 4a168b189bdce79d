package offline

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/internal/lanegen"
	"github.com/cairnhq/cairn/semantic"
)

// project replaces tool outputs over 2 048 bytes by their excerpt, as the
// engine does before summarizing.
func project(v engine.EventView) engine.EventView {
	if v.Role != "tool" || v.Content == nil || len(*v.Content) <= 2048 {
		return v
	}
	c := *v.Content
	head, tail := c[:1024], c[len(c)-1024:]
	for !utf8.ValidString(head) {
		head = head[:len(head)-1]
	}
	for !utf8.ValidString(tail) {
		tail = tail[1:]
	}
	tool := maps.Clone(v.Tool)
	if tool == nil {
		tool = map[string]any{}
	}
	tool["result_excerpt"] = head + "\n...[projected]...\n" + tail
	tool["artifact_ids"] = v.ArtifactIDs
	v.Tool, v.Content, v.Truncated = tool, nil, true
	return v
}

// laneViews generates a lane and returns it projected, as a summarizer sees it.
func laneViews(t testing.TB, o lanegen.Options) []engine.EventView {
	t.Helper()
	lane := lanegen.Lane(o)
	out := make([]engine.EventView, len(lane))
	for i, e := range lane {
		out[i] = project(engine.View(e))
	}
	return out
}

// payload builds the summarizer payload of one chunk.
func payload(chunk []engine.EventView, first int64, prev *semantic.Semantic) engine.Payload {
	return engine.Payload{
		SchemaVersion:       engine.PayloadSchemaVersion,
		CheckpointID:        "req-1",
		CoveredRange:        semantic.Coverage{FirstChatSeq: first, LastChatSeq: chunk[len(chunk)-1].ChatSeq},
		PreviousSemantic:    prev,
		Events:              chunk,
		MaximumOutputTokens: 4096,
	}
}

// rollingSummary runs the summarizer over chunks the way the engine does
// and checks every intermediate output against the sources
// processed so far, with the request's previous semantic as lineage, and
// for user requests that say the same thing twice.
func rollingSummary(t testing.TB, s *Summarizer, chunks [][]engine.EventView, lineage *semantic.Semantic) *semantic.Semantic {
	t.Helper()
	prev := lineage
	var processed []engine.EventView
	for i, chunk := range chunks {
		processed = append(processed, chunk...)
		p := payload(chunk, processed[0].ChatSeq, prev)
		got, err := s.Summarize(context.Background(), p)
		if err != nil {
			t.Fatalf("chunk %d: %v", i, err)
		}
		out, ok := got.Output.(*semantic.Semantic)
		if !ok || got.Usage != nil {
			t.Fatalf("chunk %d: output %T usage %v, want *semantic.Semantic and no usage", i, got.Output, got.Usage)
		}
		if err := check(out, processed, p.CoveredRange, lineage, maxSemanticBytes); err != nil {
			t.Fatalf("chunk %d: invalid semantic: %v\n%s", i, err, dump(out))
		}
		if err := semantic.Validate(out, sources(processed, p.CoveredRange, lineage)); err != nil {
			t.Fatalf("chunk %d: semantic.Validate: %v\n%s", i, err, dump(out))
		}
		if repeats := repeatedRequests(out.UserRequests); len(repeats) > 0 {
			t.Fatalf("chunk %d: %s", i, strings.Join(repeats, "\n"))
		}
		prev = out
	}
	return prev
}

func dump(s *semantic.Semantic) string {
	data, _ := json.MarshalIndent(s, "", "  ")
	return string(data)
}

// splitChunks cuts events into n nearly equal consecutive chunks.
func splitChunks(events []engine.EventView, n int) [][]engine.EventView {
	n = max(1, min(n, len(events)))
	var out [][]engine.EventView
	size := (len(events) + n - 1) / n
	for len(events) > 0 {
		k := min(size, len(events))
		out = append(out, events[:k])
		events = events[k:]
	}
	return out
}

var hash64 = regexp.MustCompile(`^[0-9a-f]{64}$`)

// check is an independent implementation of the source-backed validation of
// the semantic package, so this package's tests do not depend on the engine.
func check(s *semantic.Semantic, processed []engine.EventView, cov semantic.Coverage, lineage *semantic.Semantic, maxBytes int) error {
	if s.Version != 1 {
		return fmt.Errorf("version %d", s.Version)
	}
	if s.Coverage != cov {
		return fmt.Errorf("coverage %+v, want %+v", s.Coverage, cov)
	}
	allowed := map[string]bool{}
	users := map[string]string{}
	carriers := map[string]map[string]bool{}
	for _, e := range processed {
		allowed[e.EventID] = true
		if e.Role == "user" {
			users[e.EventID] = ""
			if e.Content != nil {
				users[e.EventID] = *e.Content
			}
		}
		for _, a := range e.ArtifactIDs {
			if carriers[a] == nil {
				carriers[a] = map[string]bool{}
			}
			carriers[a][e.EventID] = true
		}
	}
	var lineageReqs map[string]bool
	if lineage != nil {
		lineageReqs = map[string]bool{}
		for _, id := range citations(lineage) {
			allowed[id] = true
		}
		for _, r := range lineage.UserRequests {
			data, _ := json.Marshal(r)
			lineageReqs[string(data)] = true
		}
		for _, a := range lineage.ArtifactRefs {
			if carriers[a.ArtifactID] == nil {
				carriers[a.ArtifactID] = map[string]bool{}
			}
			for _, id := range a.SourceEventIDs {
				carriers[a.ArtifactID][id] = true
			}
		}
	}
	for _, id := range citations(s) {
		if !allowed[id] {
			return fmt.Errorf("cites unknown event %q", id)
		}
	}
	if err := checkShape(s); err != nil {
		return err
	}
	for _, a := range s.ArtifactRefs {
		for _, id := range a.SourceEventIDs {
			if !carriers[a.ArtifactID][id] {
				return fmt.Errorf("artifact %s cited from %s without provenance", a.ArtifactID, id)
			}
		}
	}
	for _, r := range s.UserRequests {
		data, _ := json.Marshal(r)
		if lineageReqs[string(data)] {
			continue
		}
		content, ok := users[r.SourceEventID]
		if !ok {
			return fmt.Errorf("user request cites %s, not a processed user event", r.SourceEventID)
		}
		if r.ExactExcerpt != nil && !bytes.Contains([]byte(content), []byte(*r.ExactExcerpt)) {
			return fmt.Errorf("excerpt %q is not in its event", *r.ExactExcerpt)
		}
	}
	if n := jsonSize(s); n > maxBytes {
		return fmt.Errorf("%d bytes, over %d", n, maxBytes)
	}
	return nil
}

// citations collects source_event_id(s) anywhere in s, not verification ids.
func citations(s *semantic.Semantic) []string {
	var ids []string
	add := func(list []string) { ids = append(ids, list...) }
	for _, e := range s.Objective {
		add(e.SourceEventIDs)
	}
	for _, r := range s.UserRequests {
		ids = append(ids, r.SourceEventID)
	}
	for _, e := range s.Constraints {
		add(e.SourceEventIDs)
	}
	for _, e := range s.Decisions {
		add(e.SourceEventIDs)
	}
	for _, l := range [][]semantic.ProgressItem{s.Progress.Completed, s.Progress.Active, s.Progress.Blocked, s.Progress.Pending} {
		for _, e := range l {
			add(e.SourceEventIDs)
		}
	}
	for _, e := range s.CriticalContext {
		add(e.SourceEventIDs)
	}
	for _, e := range s.Errors {
		add(e.SourceEventIDs)
	}
	for _, e := range s.ArtifactRefs {
		add(e.SourceEventIDs)
	}
	return ids
}

func checkShape(s *semantic.Semantic) error {
	var errs []error
	text := func(t string) {
		if len(t) == 0 || len(t) > 4000 || !utf8.ValidString(t) {
			errs = append(errs, fmt.Errorf("bad text %q", t))
		}
	}
	ids := func(list []string, min int) {
		seen := map[string]bool{}
		if list == nil || len(list) < min || len(list) > 32 {
			errs = append(errs, fmt.Errorf("id list %v", list))
		}
		for _, id := range list {
			if seen[id] || id == "" || len(id) > 200 {
				errs = append(errs, fmt.Errorf("bad id list %v", list))
			}
			seen[id] = true
		}
	}
	bound := func(name string, n, max int, list any) {
		if n > max {
			errs = append(errs, fmt.Errorf("%s has %d entries, over %d", name, n, max))
		}
		if list == nil {
			errs = append(errs, fmt.Errorf("%s is null", name))
		}
		data, _ := json.Marshal(list)
		var items []json.RawMessage
		_ = json.Unmarshal(data, &items)
		seen := map[string]bool{}
		for _, it := range items {
			if seen[string(it)] {
				errs = append(errs, fmt.Errorf("%s has duplicate %s", name, it))
			}
			seen[string(it)] = true
		}
	}
	bound("objective", len(s.Objective), 8, s.Objective)
	bound("user_requests", len(s.UserRequests), 64, s.UserRequests)
	bound("constraints", len(s.Constraints), 64, s.Constraints)
	bound("decisions", len(s.Decisions), 64, s.Decisions)
	bound("completed", len(s.Progress.Completed), 128, s.Progress.Completed)
	bound("active", len(s.Progress.Active), 64, s.Progress.Active)
	bound("blocked", len(s.Progress.Blocked), 64, s.Progress.Blocked)
	bound("pending", len(s.Progress.Pending), 64, s.Progress.Pending)
	bound("critical_context", len(s.CriticalContext), 128, s.CriticalContext)
	bound("errors", len(s.Errors), 64, s.Errors)
	bound("artifact_refs", len(s.ArtifactRefs), 128, s.ArtifactRefs)
	for _, l := range [][]semantic.Sourced{s.Objective, s.Constraints, s.CriticalContext} {
		for _, e := range l {
			text(e.Text)
			ids(e.SourceEventIDs, 1)
		}
	}
	for _, r := range s.UserRequests {
		switch r.Status {
		case "active", "completed", "superseded":
		default:
			errs = append(errs, fmt.Errorf("request status %q", r.Status))
		}
		switch {
		case (r.ExactExcerpt == nil) == (r.SecretOmission == nil):
			errs = append(errs, fmt.Errorf("request %s: excerpt xor omission", r.SourceEventID))
		case r.ExactExcerpt != nil:
			text(*r.ExactExcerpt)
		default:
			if c := r.SecretOmission.Class; c == "" || len(c) > 64 || !hash64.MatchString(r.SecretOmission.SourceSpanHash) {
				errs = append(errs, fmt.Errorf("bad omission %+v", r.SecretOmission))
			}
		}
	}
	for _, e := range s.Decisions {
		text(e.Text)
		if e.Rationale != nil {
			text(*e.Rationale)
		}
		ids(e.SourceEventIDs, 1)
	}
	for _, l := range [][]semantic.ProgressItem{s.Progress.Completed, s.Progress.Active, s.Progress.Blocked, s.Progress.Pending} {
		for _, e := range l {
			text(e.Text)
			ids(e.SourceEventIDs, 1)
			ids(e.VerificationEventIDs, 0)
		}
	}
	for _, e := range s.Errors {
		text(e.Message)
		if e.Status != "open" && e.Status != "resolved" {
			errs = append(errs, fmt.Errorf("error status %q", e.Status))
		}
		ids(e.SourceEventIDs, 1)
	}
	for _, e := range s.ArtifactRefs {
		text(e.Purpose)
		ids(e.SourceEventIDs, 1)
		if e.ArtifactID == "" || len(e.ArtifactID) > 200 {
			errs = append(errs, fmt.Errorf("artifact id %q", e.ArtifactID))
		}
	}
	if s.Coverage.FirstChatSeq <= 0 || s.Coverage.LastChatSeq < s.Coverage.FirstChatSeq {
		errs = append(errs, fmt.Errorf("coverage %+v", s.Coverage))
	}
	if len(errs) > 0 {
		return errs[0]
	}
	return nil
}

func laneOpts(events int, seed uint64) lanegen.Options {
	return lanegen.Options{Events: events, Seed: seed}
}

// sources is the validator's view of the processed events.
func sources(processed []engine.EventView, cov semantic.Coverage, lineage *semantic.Semantic) semantic.Sources {
	events := make([]semantic.SourceEvent, len(processed))
	for i, e := range processed {
		events[i] = semantic.SourceEvent{EventID: e.EventID, Role: e.Role, Content: e.Content, ChatSeq: e.ChatSeq, ArtifactIDs: e.ArtifactIDs}
	}
	return semantic.Sources{Events: events, Coverage: cov, Lineage: lineage}
}
