package semantic

import (
	"cmp"
	"slices"
	"strings"

	"github.com/cairnhq/cairn/errcode"
)

// Source-backed validation messages.
const (
	msgCoverageMismatch = "semantic coverage does not match the source range"
	msgUnknownSources   = "semantic cites unknown source events"
	msgArtifacts        = "semantic cites artifacts without host source provenance"
	msgExcerpt          = "user request excerpt is not source-backed"
	msgDuplicates       = "semantic output contains duplicate entries"
	msgTooLarge         = "semantic output exceeds the byte limit"
	msgNotCanonical     = "semantic output is not canonical JSON"
)

// RoleUser is the role of events whose content user requests may quote.
const RoleUser = "user"

// SourceEvent is the part of a processed (projected) event the validator
// reads.
type SourceEvent struct {
	EventID     string
	Role        string  // user | assistant | tool
	Content     *string // nil content quotes as ""
	ChatSeq     int64
	ArtifactIDs []string
}

// Sources is the evidence a candidate semantic is checked against.
type Sources struct {
	// Events are all prefix events processed so far, cumulative across
	// chunks, in their projected form.
	Events []SourceEvent
	// Coverage is the exact range the candidate must declare.
	Coverage Coverage
	// MaxBytes caps the candidate's canonical size; 0 means DefaultMaxBytes.
	MaxBytes int
	// Lineage is the request's previous_semantic (not a chunk-level one), or
	// nil. Its cited event ids and artifact refs count as known sources, and
	// its user requests may be carried forward unchanged.
	Lineage *Semantic
}

// Validate checks a candidate against its sources in this order: shape,
// exact coverage, known sources, source-backed artifacts, exact excerpts,
// uniqueness, byte size. A user request whose source_event_id, excerpt and
// omission equal an entry of src.Lineage is accepted without quoting a
// processed event (its status may change): the events it quoted were
// compacted away by an earlier checkpoint, so carrying it forward must not
// need them. New requests must quote a user event of src.Events. The first failure is returned as an *errcode.Error with code
// invalid_compaction_semantic.
func Validate(s *Semantic, src Sources) error {
	if err := s.Validate(); err != nil {
		return err
	}
	if s.Coverage != src.Coverage {
		return invalid(msgCoverageMismatch)
	}
	if err := knownSources(s, src); err != nil {
		return err
	}
	if err := sourceBackedArtifacts(s, src); err != nil {
		return err
	}
	if err := exactExcerpts(s, src); err != nil {
		return err
	}
	if err := uniqueEntries(s); err != nil {
		return err
	}
	return withinSize(s, src.MaxBytes)
}

// citedEventIDs returns, in canonical field order and without repeats, every
// id s cites as a source: each user request's source_event_id and every
// source_event_ids list. verification_event_ids are not citations. A nil s
// cites nothing.
func citedEventIDs(s *Semantic) []string {
	if s == nil {
		return nil
	}
	var out []string
	add := func(ids ...string) {
		for _, id := range ids {
			if !slices.Contains(out, id) {
				out = append(out, id)
			}
		}
	}
	for _, e := range s.Objective {
		add(e.SourceEventIDs...)
	}
	for _, r := range s.UserRequests {
		add(r.SourceEventID)
	}
	for _, e := range s.Constraints {
		add(e.SourceEventIDs...)
	}
	for _, d := range s.Decisions {
		add(d.SourceEventIDs...)
	}
	for _, items := range s.Progress.lists() {
		for _, p := range items {
			add(p.SourceEventIDs...)
		}
	}
	for _, e := range s.CriticalContext {
		add(e.SourceEventIDs...)
	}
	for _, e := range s.Errors {
		add(e.SourceEventIDs...)
	}
	for _, a := range s.ArtifactRefs {
		add(a.SourceEventIDs...)
	}
	return out
}

func (p Progress) lists() [4][]ProgressItem {
	return [4][]ProgressItem{p.Completed, p.Active, p.Blocked, p.Pending}
}

func knownSources(s *Semantic, src Sources) error {
	allowed := make(map[string]bool, len(src.Events))
	for _, e := range src.Events {
		allowed[e.EventID] = true
	}
	for _, id := range citedEventIDs(src.Lineage) {
		allowed[id] = true
	}
	var unknown []string
	for _, id := range citedEventIDs(s) {
		if !allowed[id] {
			unknown = append(unknown, id)
		}
	}
	if len(unknown) > 0 {
		return invalidWith(msgUnknownSources, map[string]any{"rule": "reference", "event_ids": unknown})
	}
	return nil
}

// sourceBackedArtifacts requires every artifact ref to name an artifact some
// processed event carries (or a lineage ref proves), citing only events that
// carry it.
func sourceBackedArtifacts(s *Semantic, src Sources) error {
	carriers := map[string]map[string]bool{}
	prove := func(artifactID string, eventIDs ...string) {
		set := carriers[artifactID]
		if set == nil {
			set = map[string]bool{}
			carriers[artifactID] = set
		}
		for _, id := range eventIDs {
			set[id] = true
		}
	}
	for _, e := range src.Events {
		for _, a := range e.ArtifactIDs {
			prove(a, e.EventID)
		}
	}
	if src.Lineage != nil {
		for _, ref := range src.Lineage.ArtifactRefs {
			prove(ref.ArtifactID, ref.SourceEventIDs...)
		}
	}
	var bad []string
	for _, ref := range s.ArtifactRefs {
		set, known := carriers[ref.ArtifactID]
		backed := known && !slices.ContainsFunc(ref.SourceEventIDs, func(id string) bool { return !set[id] })
		if !backed && !slices.Contains(bad, ref.ArtifactID) {
			bad = append(bad, ref.ArtifactID)
		}
	}
	if len(bad) > 0 {
		return invalidWith(msgArtifacts, map[string]any{"rule": "reference", "artifact_ids": bad})
	}
	return nil
}

// exactExcerpts requires each new user request to cite a user event among
// the processed events and, when it carries an excerpt, to quote that
// event's content byte for byte.
func exactExcerpts(s *Semantic, src Sources) error {
	direct := map[string]string{}
	for _, e := range src.Events {
		if e.Role != RoleUser {
			continue
		}
		content := ""
		if e.Content != nil {
			content = *e.Content
		}
		direct[e.EventID] = content
	}
	for _, r := range s.UserRequests {
		if carriedForward(r, src.Lineage) {
			continue
		}
		content, ok := direct[r.SourceEventID]
		if !ok || (r.ExactExcerpt != nil && !strings.Contains(content, *r.ExactExcerpt)) {
			return invalid(msgExcerpt)
		}
	}
	return nil
}

// carriedForward reports whether r repeats a user request of the lineage:
// same source event, same excerpt and same omission (status may differ).
func carriedForward(r UserRequest, lineage *Semantic) bool {
	if lineage == nil {
		return false
	}
	for _, old := range lineage.UserRequests {
		if old.SourceEventID == r.SourceEventID && equalString(old.ExactExcerpt, r.ExactExcerpt) &&
			equalOmission(old.SecretOmission, r.SecretOmission) {
			return true
		}
	}
	return false
}

func equalString(a, b *string) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}

func equalOmission(a, b *SecretOmission) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}

// uniqueEntries rejects two entries of one list with the same canonical
// encoding. It compares the typed entries instead of encoding them: Validate
// has shape-checked s first, so every string is valid UTF-8, whose
// canonical encoding is one-to-one, and the only values Map merges, a nil
// and an empty id list, compare equal.
func uniqueEntries(s *Semantic) error {
	p := s.Progress
	if hasDuplicate(s.Objective, compareSourced) || hasDuplicate(s.UserRequests, compareUserRequests) ||
		hasDuplicate(s.Constraints, compareSourced) || hasDuplicate(s.Decisions, compareDecisions) ||
		hasDuplicate(p.Completed, compareProgressItems) || hasDuplicate(p.Active, compareProgressItems) ||
		hasDuplicate(p.Blocked, compareProgressItems) || hasDuplicate(p.Pending, compareProgressItems) ||
		hasDuplicate(s.CriticalContext, compareSourced) || hasDuplicate(s.Errors, compareErrors) ||
		hasDuplicate(s.ArtifactRefs, compareArtifactRefs) {
		return invalid(msgDuplicates)
	}
	return nil
}

// hasDuplicate reports whether two entries of list compare equal. It sorts
// the entries' indices, so a long list costs n log n comparisons, not n².
func hasDuplicate[T any](list []T, compare func(a, b *T) int) bool {
	if len(list) < 2 {
		return false
	}
	order := make([]int, len(list))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(i, j int) int { return compare(&list[i], &list[j]) })
	for k := 1; k < len(order); k++ {
		if compare(&list[order[k-1]], &list[order[k]]) == 0 {
			return true
		}
	}
	return false
}

func compareSourced(a, b *Sourced) int {
	return cmp.Or(strings.Compare(a.Text, b.Text), slices.Compare(a.SourceEventIDs, b.SourceEventIDs))
}

func compareUserRequests(a, b *UserRequest) int {
	return cmp.Or(strings.Compare(a.SourceEventID, b.SourceEventID), strings.Compare(a.Status, b.Status),
		compareNullable(a.ExactExcerpt, b.ExactExcerpt), compareOmissions(a.SecretOmission, b.SecretOmission))
}

func compareDecisions(a, b *Decision) int {
	return cmp.Or(strings.Compare(a.Text, b.Text), compareNullable(a.Rationale, b.Rationale),
		slices.Compare(a.SourceEventIDs, b.SourceEventIDs))
}

func compareProgressItems(a, b *ProgressItem) int {
	return cmp.Or(strings.Compare(a.Text, b.Text), slices.Compare(a.SourceEventIDs, b.SourceEventIDs),
		slices.Compare(a.VerificationEventIDs, b.VerificationEventIDs))
}

func compareErrors(a, b *ErrorEntry) int {
	return cmp.Or(strings.Compare(a.Message, b.Message), strings.Compare(a.Status, b.Status),
		slices.Compare(a.SourceEventIDs, b.SourceEventIDs))
}

func compareArtifactRefs(a, b *ArtifactRef) int {
	return cmp.Or(strings.Compare(a.ArtifactID, b.ArtifactID), strings.Compare(a.Purpose, b.Purpose),
		slices.Compare(a.SourceEventIDs, b.SourceEventIDs))
}

// compareNullable orders null before every string.
func compareNullable(a, b *string) int {
	if a == nil || b == nil {
		return cmp.Compare(boolRank(a != nil), boolRank(b != nil))
	}
	return strings.Compare(*a, *b)
}

func compareOmissions(a, b *SecretOmission) int {
	if a == nil || b == nil {
		return cmp.Compare(boolRank(a != nil), boolRank(b != nil))
	}
	return cmp.Or(strings.Compare(a.Class, b.Class), strings.Compare(a.SourceSpanHash, b.SourceSpanHash))
}

func boolRank(present bool) int {
	if present {
		return 1
	}
	return 0
}

func withinSize(s *Semantic, maxBytes int) error {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	size, err := s.encodedSize()
	if err != nil {
		return errcode.Wrap(errcode.InvalidSemantic, msgNotCanonical, err).With("rule", "canonical")
	}
	if size > maxBytes {
		return invalidWith(msgTooLarge, map[string]any{"rule": "range", "bytes": size, "limit": maxBytes})
	}
	return nil
}
