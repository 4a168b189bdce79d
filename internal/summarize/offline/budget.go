package offline

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/semantic"
)

// ccEntryBytes is the target size of one packed critical_context entry.
const ccEntryBytes = 1000

// budget is the size the output is trimmed to: Ratio of the chunk's source
// text plus the previous semantic, at least MinBytes, at most MaxBytes, and
// no more than about four bytes per allowed output token. The payload does
// not carry the policy's semantic_max_bytes; when a repair call reports that
// the previous output exceeded it, the reported limit caps the budget.
func budget(o Options, p engine.Payload, sourceBytes int) int {
	b := int(o.Ratio * float64(sourceBytes))
	if p.PreviousSemantic != nil {
		b += semanticSize(p.PreviousSemantic)
	}
	b = max(b, o.MinBytes)
	if p.MaximumOutputTokens > 0 {
		b = min(b, max(4*p.MaximumOutputTokens, minBudget))
	}
	b = min(b, o.MaxBytes)
	if limit, ok := repairLimit(p.Repair); ok {
		b = min(b, limit)
	}
	return b
}

// repairLimit reads the byte limit from a repair that rejected an oversized
// output (details {"bytes", "limit"}).
func repairLimit(r *engine.Repair) (int, bool) {
	if r == nil {
		return 0, false
	}
	var limit float64
	switch x := r.Error.Details["limit"].(type) {
	case int:
		limit = float64(x)
	case int64:
		limit = float64(x)
	case float64:
		limit = x
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			return 0, false
		}
		limit = f
	default:
		return 0, false
	}
	if limit < 1 || limit > maxSemanticBytes {
		return 0, false
	}
	return int(limit), true
}

// output is the draft flattened into bounded lists, with critical_context
// kept as identifiers until the end so it can be trimmed one at a time.
type output struct {
	s        *semantic.Semantic
	ids      []*ident // oldest first
	otherCC  []semantic.Sourced
	maxCites int

	// Measurements of size.
	buf      []byte // scratch for encoding
	skeleton int    // encoded size without the lists
	ccKey    [2]int // len(ids), len(otherCC) when critical_context was measured
	ccBytes  int
	lists    listTally
}

func (d *draft) output() *output {
	reqs := slices.Clone(d.carriedReqs)
	for _, r := range d.requests {
		reqs = append(reqs, r.entry)
	}
	errs := make([]semantic.ErrorEntry, len(d.errors))
	for i, e := range d.errors {
		errs[i] = *e
	}
	s := &semantic.Semantic{
		Version:      semantic.Version,
		Objective:    newest(unique(d.objective.list()), bounds.Objective),
		UserRequests: newest(lastOfEach(reqs), bounds.UserRequests),
		Constraints:  newest(unique(d.constraints.list()), bounds.Constraints),
		Decisions:    newest(unique(d.decisions.list()), bounds.Decisions),
		Progress: semantic.Progress{
			Completed: newest(unique(d.completed.list()), bounds.ProgressCompleted),
			Active:    newest(unique(d.awaitingItems()), bounds.ProgressActive),
			Blocked:   newest(unique(d.blocked.list()), bounds.ProgressBlocked),
			Pending:   newest(unique(d.pending), bounds.ProgressPending),
		},
		Errors:       newest(unique(errs), bounds.Errors),
		ArtifactRefs: newest(unique(d.artifacts.list()), bounds.ArtifactRefs),
	}
	return &output{s: s, ids: withoutContained(d.ids.list()), otherCC: unique(d.otherCC), maxCites: d.o.MaxCitations, ccKey: [2]int{-1, -1},
		buf: make([]byte, 0, scratchBytes)}
}

// maxContainmentCheck bounds the quadratic containment pass.
const maxContainmentCheck = 2048

// withoutContained drops identifiers that another identifier contains
// ("csv_test.go" beside "internal/export/csv_test.go", "./internal/export"
// beside "go test ./internal/export/..."): the longer one keeps them
// verbatim, so they cost bytes and say nothing new.
func withoutContained(ids []*ident) []*ident {
	if len(ids) > maxContainmentCheck {
		return ids
	}
	out := make([]*ident, 0, len(ids))
	for _, id := range ids {
		contained := false
		for _, other := range ids {
			if other != id && len(other.text) > len(id.text) && strings.Contains(other.text, id.text) {
				contained = true
				break
			}
		}
		if !contained {
			out = append(out, id)
		}
	}
	return out
}

// newest keeps the last n entries, dropping the oldest.
func newest[T any](list []T, n int) []T {
	if list == nil {
		return []T{}
	}
	if len(list) > n {
		return list[len(list)-n:]
	}
	return list
}

// unique drops entries equal to an earlier one; the validator rejects a list
// with two identical entries. Equal JSON of the same struct type means equal
// canonical encodings. A list without duplicates, the usual case, is
// returned as it is.
func unique[T any](list []T) []T {
	if list == nil {
		return []T{}
	}
	seen := make(map[string]bool, len(list))
	var key []byte
	var out []T // the kept entries once one was dropped; until then list[:i]
	for i := range list {
		key = appendJSON(key[:0], &list[i])
		if seen[string(key)] {
			if out == nil {
				out = slices.Clone(list[:i])
			}
			continue
		}
		seen[string(key)] = true
		if out != nil {
			out = append(out, list[i])
		}
	}
	if out == nil {
		return list
	}
	return out
}

// semantic returns the final value with critical_context packed.
func (o *output) semantic() *semantic.Semantic {
	o.s.CriticalContext = o.criticalContext()
	return o.s
}

// criticalContext is the carried entries followed by the packed identifiers.
func (o *output) criticalContext() []semantic.Sourced {
	cc := make([]semantic.Sourced, len(o.otherCC), len(o.otherCC)+int(kindCount))
	copy(cc, o.otherCC)
	return newest(pack(cc, o.ids, o.maxCites), bounds.CriticalContext)
}

// pack appends to dst the identifiers grouped by kind into entries of about
// ccEntryBytes: a header line ("Files:") and one identifier per line, citing
// the newest events that mention them.
func pack(dst []semantic.Sourced, ids []*ident, maxCites int) []semantic.Sourced {
	for k, list := range byKind(ids) {
		for len(list) > 0 {
			n, size := packCount(kindHeaders[k], list)
			var text strings.Builder
			text.Grow(size)
			text.WriteString(kindHeaders[k])
			// citeOwned holds at most one more than maxCites.
			cites := make([]string, 0, min(n, maxCites)+1)
			for _, id := range list[:n] {
				text.WriteByte('\n')
				text.WriteString(id.text)
				cites = citeOwned(cites, id.eventID, maxCites)
			}
			dst = append(dst, semantic.Sourced{Text: clip(text.String(), bounds.TextBytes), SourceEventIDs: cites})
			list = list[n:]
		}
	}
	return dst
}

// byKind splits ids by kind, keeping their order, in one array.
func byKind(ids []*ident) [kindCount][]*ident {
	var count [kindCount]int
	for _, id := range ids {
		count[id.kind]++
	}
	all := make([]*ident, 0, len(ids))
	var lists [kindCount][]*ident
	for k, n := range count {
		lists[k] = all[len(all) : len(all) : len(all)+n]
		all = all[:len(all)+n]
	}
	for _, id := range ids {
		lists[id.kind] = append(lists[id.kind], id)
	}
	return lists
}

// packCount returns how many identifiers of list (at least one) go into the
// entry under header, and the length of its text.
func packCount(header string, list []*ident) (n, size int) {
	size = len(header)
	for n < len(list) && (n == 0 || size+1+len(list[n].text) <= ccEntryBytes) {
		size += 1 + len(list[n].text)
		n++
	}
	return n, size
}

// semanticSize is the length of the JSON encoding of s without HTML
// escaping. It is never less than the canonical encoding: the same keys and
// values, with escapes at least as long.
func semanticSize(s *semantic.Semantic) int {
	return len(appendJSON(nil, s))
}

// entrySize is the length of the JSON encoding of one list entry.
func entrySize[T any](e *T) int {
	var buf [512]byte
	return len(appendJSON(buf[:0], e))
}

// maxTrimRounds bounds the measure-and-shed rounds before the last resort.
const maxTrimRounds = 64

// trim sheds entries, least important and oldest first, until the output's
// JSON fits the budget.
func trim(o *output, budget int) {
	ladder := o.ladder()
	for range maxTrimRounds {
		size := o.size()
		if size <= budget {
			return
		}
		if !o.shed(ladder, size-budget) {
			break
		}
	}
	if o.size() > budget {
		o.clear()
	}
}

// size is the length of the output's JSON encoding. The lists other than
// critical_context are measured once and then kept up to date as entries
// are dropped; critical_context is packed and measured again only when
// identifiers or carried entries were dropped.
func (o *output) size() int {
	s := o.s
	if o.skeleton == 0 {
		// The encoding without any list: each nil list encodes as null.
		o.buf = appendJSON(o.buf[:0], &semantic.Semantic{Version: s.Version, Coverage: s.Coverage})
		o.skeleton = len(o.buf) - listCount*len("null")
	}
	if key := [2]int{len(o.ids), len(o.otherCC)}; key != o.ccKey {
		o.ccKey = key
		o.ccBytes = listLen(&o.buf, o.criticalContext())
	}
	if !o.lists.valid {
		o.lists = listTally{bytes: o.measureLists(), valid: true}
	}
	return o.skeleton + o.ccBytes + o.lists.bytes
}

// scratchBytes is the first size of the buffer lists are measured in, which
// then grows to the longest list: a few kilobytes for most outputs.
const scratchBytes = 4096

// listCount is the number of lists in a semantic, critical_context included.
const listCount = 11

// measureLists returns the encoded size of the lists other than
// critical_context.
func (o *output) measureLists() int {
	s, b := o.s, &o.buf
	return listLen(b, s.Objective) + listLen(b, s.UserRequests) + listLen(b, s.Constraints) +
		listLen(b, s.Decisions) + listLen(b, s.Progress.Completed) + listLen(b, s.Progress.Active) +
		listLen(b, s.Progress.Blocked) + listLen(b, s.Progress.Pending) + listLen(b, s.Errors) +
		listLen(b, s.ArtifactRefs)
}

// listLen is the encoded size of list, encoded in *buf.
func listLen[T any](buf *[]byte, list []T) int {
	*buf = appendJSON((*buf)[:0], list)
	return len(*buf)
}

// listTally is the encoded size of the lists other than critical_context,
// once measured.
type listTally struct {
	bytes int
	valid bool
}

// dropped accounts for an entry of encoded size e leaving a list that now
// has n entries: the entry goes, and a comma with it unless it was alone. A
// nil tally counts nothing.
func (t *listTally) dropped(e, n int) {
	if t == nil || !t.valid {
		return
	}
	t.bytes -= e
	if n > 0 {
		t.bytes--
	}
}

// shed drops entries until their estimated size covers excess; it reports
// whether anything was dropped.
func (o *output) shed(ladder []step, excess int) bool {
	freed, any := 0, false
	for freed < excess {
		progressed := false
		for _, st := range ladder {
			if f := o.drop(st); f > 0 {
				freed += f
				progressed, any = true, true
				break
			}
		}
		if !progressed {
			break
		}
	}
	return any
}

// clear is the last resort: an empty semantic is always valid.
func (o *output) clear() {
	cov := o.s.Coverage
	*o.s = semantic.Semantic{
		Version: semantic.Version, Objective: []semantic.Sourced{}, UserRequests: []semantic.UserRequest{},
		Constraints: []semantic.Sourced{}, Decisions: []semantic.Decision{},
		Progress: semantic.Progress{
			Completed: []semantic.ProgressItem{}, Active: []semantic.ProgressItem{},
			Blocked: []semantic.ProgressItem{}, Pending: []semantic.ProgressItem{},
		},
		Errors: []semantic.ErrorEntry{}, ArtifactRefs: []semantic.ArtifactRef{}, Coverage: cov,
	}
	o.ids, o.otherCC = nil, nil
	o.lists.valid, o.ccKey = false, [2]int{-1, -1}
}

// step is one rung of the trimming ladder: drop the oldest entry of a list
// (of its settled entries only, for requests and errors, when settled is
// set) while more than floor such entries remain.
type step struct {
	list    listID
	floor   int
	settled bool
}

// listID names a list trimming drops entries from.
type listID int

const (
	listCompleted listID = iota
	listErrors
	listRequests
	listPending
	listActive
	listBlocked
	listArtifacts
	listDecisions
	listObjective
	listOtherCC
	listConstraints
	listIdentifiers
)

// ladder lists the trimming steps in order of expendability. History
// (finished work, resolved errors, settled requests, decisions) shrinks
// first, to a few entries and then to the newest one of each kind; then the
// identifiers a continuation needs verbatim shrink to the most recent ones;
// then history goes entirely, and only then what is still open.
func (o *output) ladder() []step { return trimLadder }

// trimLadder is the ladder; it is the same for every output, so it is built
// once.
var trimLadder = func() []step {
	history := func(floor int) []step {
		return []step{
			{list: listCompleted, floor: floor},
			{list: listErrors, floor: floor, settled: true},
			{list: listRequests, floor: floor, settled: true},
			{list: listPending, floor: floor},
			{list: listActive, floor: floor},
			{list: listBlocked, floor: floor},
			{list: listArtifacts, floor: floor},
			{list: listDecisions, floor: floor},
			{list: listObjective, floor: min(floor, 2)},
			{list: listOtherCC, floor: floor},
		}
	}
	var steps []step
	steps = append(steps, history(4)...)
	steps = append(steps, history(1)...)
	steps = append(steps, step{list: listIdentifiers, floor: 64})
	steps = append(steps, history(0)...)
	steps = append(steps, step{list: listIdentifiers, floor: 32})
	return append(steps,
		step{list: listConstraints, floor: 8},
		step{list: listErrors, floor: 4},
		step{list: listRequests, floor: 4},
		step{list: listIdentifiers, floor: 0},
		step{list: listConstraints, floor: 0},
		step{list: listErrors, floor: 0},
		step{list: listRequests, floor: 0},
	)
}()

// drop takes one step and returns the bytes it freed (0 when it had
// nothing to drop).
func (o *output) drop(st step) int {
	s, t := o.s, &o.lists
	switch st.list {
	case listCompleted:
		return dropOldest(&s.Progress.Completed, st.floor, nil, t)
	case listErrors:
		if st.settled {
			return dropOldest(&s.Errors, st.floor, resolved, t)
		}
		return dropOldest(&s.Errors, st.floor, nil, t)
	case listRequests:
		if st.settled {
			return dropOldest(&s.UserRequests, st.floor, settled, t)
		}
		return dropOldest(&s.UserRequests, st.floor, nil, t)
	case listPending:
		return dropOldest(&s.Progress.Pending, st.floor, nil, t)
	case listActive:
		return dropOldest(&s.Progress.Active, st.floor, nil, t)
	case listBlocked:
		return dropOldest(&s.Progress.Blocked, st.floor, nil, t)
	case listArtifacts:
		return dropOldest(&s.ArtifactRefs, st.floor, nil, t)
	case listDecisions:
		return dropOldest(&s.Decisions, st.floor, nil, t)
	case listObjective:
		return dropOldest(&s.Objective, st.floor, nil, t)
	case listOtherCC:
		return dropOldest(&o.otherCC, st.floor, nil, nil) // measured with critical_context
	case listConstraints:
		return dropOldest(&s.Constraints, st.floor, nil, t)
	case listIdentifiers:
		return o.dropIdentifier(st.floor)
	}
	panic("offline: unknown trimming list")
}

func settled(r semantic.UserRequest) bool { return r.Status != semantic.RequestActive }

func resolved(e semantic.ErrorEntry) bool { return e.Status == semantic.ErrorResolved }

// dropOldest removes the oldest entry of *list that matches (any entry when
// match is nil), if more than floor such entries remain, and returns the
// bytes it freed. It accounts for them in tally, if any.
func dropOldest[T any](list *[]T, floor int, match func(T) bool, tally *listTally) int {
	count, first := 0, -1
	for i, e := range *list {
		if match == nil || match(e) {
			if first < 0 {
				first = i
			}
			count++
		}
	}
	if count <= floor || first < 0 {
		return 0
	}
	e := entrySize(&(*list)[first])
	*list = slices.Delete(*list, first, first+1)
	tally.dropped(e, len(*list))
	return e + 1
}

// dropIdentifier drops the least recently seen identifier while more than
// floor remain.
func (o *output) dropIdentifier(floor int) int {
	if len(o.ids) <= floor {
		return 0
	}
	freed := len(o.ids[0].text) + 1
	o.ids = o.ids[1:]
	return freed
}
