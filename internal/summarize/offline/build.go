package offline

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"math"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/internal/redact"
	"github.com/cairnhq/cairn/semantic"
)

// Progress texts end with these suffixes so a later chunk can find the tool
// call an item is about.
const (
	suffixAwaiting = ": awaiting result"
	suffixFailing  = ": failing"
	suffixOK       = ": succeeded"
	failedInfix    = " failed: "
	callIDPrefix   = " (call_id "
)

// maxCallID is the longest call id written into an awaiting item.
const maxCallID = 64

// minExcerpt is the shortest excerpt worth keeping in front of a secret; a
// shorter one becomes a secret-omission record instead.
const minExcerpt = 16

// shortExcerpt is the length below which an excerpt takes in the next
// sentence too: "Fix it." says little without what follows.
const shortExcerpt = 80

// ctxCheckEvery is how many events pass between context checks.
const ctxCheckEvery = 512

// draft is a semantic under construction: carried entries first, then what
// this chunk adds, each list ordered oldest first.
type draft struct {
	o Options

	objective   ordered[semantic.Sourced]
	carriedReqs []semantic.UserRequest
	requests    []request
	constraints ordered[semantic.Sourced]
	decisions   ordered[semantic.Decision]
	completed   ordered[semantic.ProgressItem]
	active      ordered[awaiting]              // keyed by call label
	blocked     ordered[semantic.ProgressItem] // keyed by call label
	pending     []semantic.ProgressItem
	errors      []*semantic.ErrorEntry
	openErrors  map[string]*semantic.ErrorEntry // by call label
	artifacts   ordered[semantic.ArtifactRef]
	ids         *tracker
	otherCC     []semantic.Sourced // carried critical_context not in Cairn's format

	calls       map[string]call // by call_id, this chunk
	labels      map[labelKey]string
	cleaned     map[string]string
	args        map[string]callArgs
	sourceBytes int
	position    int      // index of the event being read
	completions []int    // positions of assistant events that report completion
	verified    []string // owned: cited with citeOwned
	idChunk     []string // see oneID
	spans       []span   // sentence buffer of the event being read
	hits        []hit    // keyword buffer of the event being read
	lower       lowerArena
}

// request is a new user request and where it sits in the chunk.
type request struct {
	entry     semantic.UserRequest
	position  int
	supersede bool // its text takes back the request before it
}

// call is an assistant tool call seen in this chunk.
type call struct {
	label   string
	eventID string
}

// summarizeDraft reads the chunk in order and returns the merged draft.
func summarizeDraft(ctx context.Context, o Options, p engine.Payload) (*draft, error) {
	d := newDraft(o, p.PreviousSemantic)
	for i := range p.Events {
		if i%ctxCheckEvery == ctxCheckEvery-1 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		d.position = i
		d.event(&p.Events[i])
	}
	d.settleRequests()
	return d, nil
}

func newDraft(o Options, prev *semantic.Semantic) *draft {
	d := &draft{
		o:          o,
		openErrors: map[string]*semantic.ErrorEntry{},
		ids:        newTracker(o.MaxIdentifiers),
		calls:      map[string]call{},
		labels:     map[labelKey]string{},
		cleaned:    map[string]string{},
		args:       map[string]callArgs{},
	}
	if prev != nil {
		d.carry(prev)
	}
	return d
}

// carry loads the previous semantic's entries, unchanged, as the oldest ones.
func (d *draft) carry(prev *semantic.Semantic) {
	for _, e := range prev.Objective {
		d.objective.put(e.Text, e)
	}
	d.carriedReqs = append(d.carriedReqs, prev.UserRequests...)
	for _, e := range prev.Constraints {
		d.constraints.put(e.Text, e)
	}
	for _, e := range prev.Decisions {
		d.decisions.put(e.Text, e)
	}
	for _, e := range prev.Progress.Completed {
		d.completed.put(e.Text, e)
	}
	for _, e := range prev.Progress.Active {
		d.carryActive(e)
	}
	for _, e := range prev.Progress.Blocked {
		d.blocked.put(strings.TrimSuffix(e.Text, suffixFailing), e)
	}
	d.pending = append(d.pending, prev.Progress.Pending...)
	for i := range prev.Errors {
		e := prev.Errors[i]
		d.errors = append(d.errors, &e)
		if label, _, ok := strings.Cut(e.Message, failedInfix); ok && e.Status == semantic.ErrorOpen {
			d.openErrors[label] = &e
		}
	}
	for _, a := range prev.ArtifactRefs {
		d.artifacts.put(a.ArtifactID, a)
	}
	order := 0
	for _, e := range prev.CriticalContext {
		if !d.carryIdentifiers(e, &order) {
			d.otherCC = append(d.otherCC, e)
		}
	}
}

// carryActive keeps a call that was awaiting its result; when the text
// names the call id, a result in this chunk finds the call by it.
func (d *draft) carryActive(e semantic.ProgressItem) {
	label, id := e.Text, ""
	if head, tail, ok := strings.Cut(e.Text, suffixAwaiting+callIDPrefix); ok && strings.HasSuffix(tail, ")") {
		label, id = head, strings.TrimSuffix(tail, ")")
	} else {
		label = strings.TrimSuffix(label, suffixAwaiting)
	}
	if id != "" && len(e.SourceEventIDs) > 0 {
		d.calls[id] = call{label: label, eventID: e.SourceEventIDs[len(e.SourceEventIDs)-1]}
	}
	d.active.put(label, awaiting{carried: e})
}

// awaiting is an active progress item: a call waiting for its result. The
// item of a call issued in this chunk is only written at the end, if the
// call is still waiting then; most results follow their call in the chunk.
type awaiting struct {
	carried semantic.ProgressItem // an item of the previous semantic, unless issued

	issued                 bool
	label, callID, eventID string
}

// awaitingItems returns the active items, least recently mentioned first.
func (d *draft) awaitingItems() []semantic.ProgressItem {
	list := d.active.list()
	items := make([]semantic.ProgressItem, len(list))
	for i, a := range list {
		if !a.issued {
			items[i] = a.carried
			continue
		}
		// The label is clean already; an id is only written when it is plain.
		text := a.label + suffixAwaiting
		if plainID(a.callID) {
			text = a.label + suffixAwaiting + callIDPrefix + a.callID + ")" // one allocation, not two
		}
		items[i] = semantic.ProgressItem{
			Text:                 clip(text, d.o.MaxTextBytes),
			SourceEventIDs:       d.oneID(a.eventID),
			VerificationEventIDs: []string{},
		}
	}
	return items
}

// carryIdentifiers parses a critical_context entry written by this package
// back into identifiers; it reports false for any other entry.
func (d *draft) carryIdentifiers(e semantic.Sourced, order *int) bool {
	header, body, ok := strings.Cut(e.Text, "\n")
	if !ok || len(e.SourceEventIDs) == 0 {
		return false
	}
	k := kind(-1)
	for i, h := range kindHeaders {
		if header == h {
			k = kind(i)
		}
	}
	if k < 0 {
		return false
	}
	cited := e.SourceEventIDs[len(e.SourceEventIDs)-1]
	for line := range strings.SplitSeq(body, "\n") {
		if line != "" {
			*order++
			d.ids.carry(k, line, cited, *order)
		}
	}
	return true
}

// citable reports whether an event id can be cited: 1..200 bytes of UTF-8.
func citable(id string) bool {
	return id != "" && len(id) <= 200 && utf8.ValidString(id)
}

// eventOverhead approximates the wire bytes of an event besides its text
// and ids: keys, hashes, ordinals, provenance.
const eventOverhead = 330

// wireBytes approximates the size of an event in the lane, so the output
// budget follows what compaction cuts rather than the prose alone.
func wireBytes(e *engine.EventView, text string) int {
	return eventOverhead + len(text) + len(e.EventID) + len(e.RunAgentID) + len(e.CheckpointNamespace)
}

// eventText is what the summarizer reads of an event: its content, or the
// excerpt of a projected tool result.
func eventText(e *engine.EventView) string {
	if e.Content != nil {
		return *e.Content
	}
	if s, ok := e.Tool["result_excerpt"].(string); ok {
		return s
	}
	return ""
}

func (d *draft) event(e *engine.EventView) {
	text := eventText(e)
	d.sourceBytes += wireBytes(e, text)
	if !citable(e.EventID) {
		return
	}
	switch e.Role {
	case "user":
		// Excerpts must quote the content itself; a user event without
		// content gives no request.
		if e.Content != nil {
			d.user(e.EventID, text)
		}
	case "assistant":
		d.assistant(e, text)
	case "tool":
		d.toolResult(e, text)
	}
	d.artifactRefs(e)
	d.identifiers(e.EventID, text)
}

func (d *draft) identifiers(eventID, text string) {
	scanIdentifiers(text, func(k kind, id string) { d.ids.see(k, id, eventID) })
}

func (d *draft) user(eventID, text string) {
	d.spans = sentences(d.spans[:0], text)
	l := d.lower.lowerOf(text, d.hits)
	for _, sp := range d.spans {
		if l.isConstraint(sp) {
			d.sourced(&d.constraints, d.clean(l.text[sp.start:sp.end]), eventID)
		}
	}
	d.hits = l.hits
	entry, ok := d.excerpt(eventID, text, d.spans)
	if !ok {
		return
	}
	d.requests = append(d.requests, request{entry: entry, position: d.position, supersede: isSupersede(l.lower)})
}

// excerpt builds a user request from the leading sentences of text (parts)
// that fit the excerpt bound. The excerpt is a byte-exact substring of text;
// if it would include a secret it stops before it, or becomes a
// secret-omission record when too little is left.
func (d *draft) excerpt(eventID, text string, parts []span) (semantic.UserRequest, bool) {
	if !utf8.ValidString(text) || len(parts) == 0 {
		return semantic.UserRequest{}, false
	}
	sp := parts[0]
	for _, next := range parts[1:] {
		if sp.end-sp.start >= shortExcerpt || next.end-sp.start > d.o.ExcerptBytes {
			break
		}
		sp.end = next.end
	}
	sp = clipSpan(text, sp, d.o.ExcerptBytes)
	if sp.end <= sp.start {
		return semantic.UserRequest{}, false
	}
	req := semantic.UserRequest{SourceEventID: eventID, Status: semantic.RequestActive}
	if secrets := redact.Find(text[sp.start:sp.end]); len(secrets) > 0 {
		before, ok := trimSpan(text, span{sp.start, sp.start + secrets[0].Start})
		if !ok || before.end-before.start < minExcerpt {
			sum := sha256.Sum256([]byte(text[sp.start:sp.end]))
			req.SecretOmission = &semantic.SecretOmission{Class: clip(secrets[0].Class, semantic.ClassMaxBytes), SourceSpanHash: hex.EncodeToString(sum[:])}
			return req, true
		}
		sp = before
	}
	excerpt := text[sp.start:sp.end]
	req.ExactExcerpt = &excerpt
	return req, true
}

// sourced records a mention of text by eventID in set.
func (d *draft) sourced(set *ordered[semantic.Sourced], text, eventID string) {
	if text == "" {
		return
	}
	e, _ := set.get(text)
	e.Text = text
	e.SourceEventIDs = d.cite(e.SourceEventIDs, eventID)
	set.put(text, e)
}

func (d *draft) assistant(e *engine.EventView, text string) {
	d.spans = sentences(d.spans[:0], text)
	parts := d.spans
	l := d.lower.lowerOf(text, d.hits)
	for i, sp := range parts {
		if !l.isDecision(sp) {
			continue
		}
		choice, rationale := splitDecision(l.span(sp))
		if rationale == "" && i+1 < len(parts) {
			rationale = becauseSentence(text[parts[i+1].start:parts[i+1].end])
		}
		d.decision(d.clean(choice), d.clean(rationale), e.EventID)
	}
	d.hits = l.hits
	if len(parts) > 0 {
		if s, lower := l.span(parts[0]); isCompletion(lower) {
			d.completions = append(d.completions, d.position)
			d.progressDone(d.clean(s), e.EventID)
		}
	}
	for _, c := range toolCalls(e.Tool) {
		d.issue(e.EventID, c)
	}
}

// becauseSentence returns s if it gives a reason for the sentence before it.
func becauseSentence(s string) string {
	if lowerHasPrefix(s, "because") || lowerHasPrefix(s, "this is because") || strings.HasPrefix(s, "因为") {
		return s
	}
	return ""
}

func (d *draft) decision(text, rationale, eventID string) {
	if text == "" {
		return
	}
	e, _ := d.decisions.get(text)
	e.Text = text
	if rationale != "" {
		e.Rationale = &rationale
	}
	e.SourceEventIDs = d.cite(e.SourceEventIDs, eventID)
	d.decisions.put(text, e)
}

// cite is the package function; a first citation takes no allocation of
// its own (see oneID).
func (d *draft) cite(ids []string, id string) []string {
	if len(ids) == 0 {
		return d.oneID(id)
	}
	return cite(ids, id, d.o.MaxCitations)
}

// oneID returns a list of just id, cut from a shared array: most entries
// cite one event, and a list each is an allocation each. The list's
// capacity is one, so appending to it copies it, and no two lists share an
// element.
func (d *draft) oneID(id string) []string {
	if len(d.idChunk) == 0 {
		d.idChunk = make([]string, idChunkSize)
	}
	ids := d.idChunk[:1:1]
	ids[0] = id
	d.idChunk = d.idChunk[1:]
	return ids
}

// idChunkSize is how many one-id lists share an array.
const idChunkSize = 32

// progressDone records an assistant's report of finished work, verified by
// the tool results that succeeded since the previous report.
func (d *draft) progressDone(text, eventID string) {
	if text == "" {
		return
	}
	e, _ := d.completed.get(text)
	e.Text = text
	e.SourceEventIDs = d.cite(e.SourceEventIDs, eventID)
	e.VerificationEventIDs = citeAll(e.VerificationEventIDs, d.verified, d.o.MaxCitations)
	d.completed.put(text, e)
	d.verified = d.verified[:0] // citeAll copied them
}

// toolCall is one entry of an assistant event's tool.calls.
type toolCall struct {
	id, name  string
	arguments any
}

// toolCalls reads tool.calls (a list, or a single object) without trusting
// its shape.
func toolCalls(tool map[string]any) []toolCall {
	raw, ok := tool["calls"]
	if !ok {
		return nil
	}
	list, ok := raw.([]any)
	if !ok {
		list = []any{raw}
	}
	var out []toolCall
	for _, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			continue
		}
		id, _ := m["call_id"].(string)
		name, _ := m["name"].(string)
		out = append(out, toolCall{id: id, name: name, arguments: m["arguments"]})
	}
	return out
}

// issue registers a call as awaiting its result and records the command or
// path it names as an identifier.
func (d *draft) issue(eventID string, c toolCall) {
	args := d.arguments(c.arguments)
	label := d.label(c.name, args)
	if c.id != "" {
		d.calls[c.id] = call{label: label, eventID: eventID}
	}
	d.active.put(label, awaiting{issued: true, label: label, callID: c.id, eventID: eventID})
	if cmd := args.command; cmd != "" {
		// An explicit command argument is a command whatever its first word.
		if first, _, _ := strings.Cut(strings.TrimSpace(cmd), "\n"); first != "" && len(first) <= 200 {
			d.ids.see(kindCommand, first, eventID)
		}
		d.identifiers(eventID, cmd)
	}
	if p := args.path; p != "" {
		if p, ok := path(p); ok {
			d.ids.see(kindFile, p, eventID)
		}
	}
}

// plainID reports whether a call id can be written into a text and read
// back: short, valid UTF-8, no white space or parenthesis, no secret.
func plainID(id string) bool {
	if id == "" || len(id) > maxCallID || !utf8.ValidString(id) {
		return false
	}
	for _, r := range id {
		if unicode.IsSpace(r) || r == ')' || r == '(' {
			return false
		}
	}
	return !redact.Contains(id)
}

// arguments is the package function memoized for short JSON texts.
func (d *draft) arguments(v any) callArgs {
	text, ok := v.(string)
	if !ok || len(text) > maxMemoKey {
		return arguments(v)
	}
	if a, ok := d.args[text]; ok {
		return a
	}
	a := arguments(text)
	if len(d.args) < maxMemo {
		d.args[text] = a
	}
	return a
}

// maxMemo bounds each memo of the draft (labels, cleaned texts, arguments).
const maxMemo = 4096

// maxMemoKey is the longest text worth memoizing.
const maxMemoKey = 1024

// clean is cleanText with the free-text bound, memoized: long lanes repeat
// the same sentences, and cleaning runs the secret detectors.
func (d *draft) clean(s string) string {
	if len(s) > maxMemoKey {
		return cleanText(s, d.o.MaxTextBytes)
	}
	if c, ok := d.cleaned[s]; ok {
		return c
	}
	c := cleanText(s, d.o.MaxTextBytes)
	if len(d.cleaned) < maxMemo {
		d.cleaned[s] = c
	}
	return c
}

// labelKey is what a call label is made of.
type labelKey struct{ name, command, target string }

// label is callLabel memoized: long lanes repeat the same few calls, and
// cleaning a label runs the secret detectors.
func (d *draft) label(name string, args callArgs) string {
	key := labelKey{name, args.command, args.target}
	if l, ok := d.labels[key]; ok {
		return l
	}
	l := callLabel(name, args)
	if len(d.labels) < maxMemo {
		d.labels[key] = l
	}
	return l
}

// callLabel names a call by its tool and main argument, for example
// "run_command `go test ./...`" or "read_file internal/store/kv.go".
func callLabel(name string, args callArgs) string {
	name = cleanText(name, 64)
	if name == "" {
		name = "tool"
	}
	label := name
	if cmd := args.command; cmd != "" {
		first, _, _ := strings.Cut(cmd, "\n")
		label = name + " `" + strings.TrimSpace(first) + "`"
	} else if s := args.target; s != "" {
		label = name + " " + s
	}
	return cleanText(label, 200)
}

func (d *draft) toolResult(e *engine.EventView, text string) {
	id, _ := e.Tool["call_id"].(string)
	c, known := d.calls[id]
	if !known {
		name, _ := e.Tool["name"].(string)
		c.label = callLabel(name, callArgs{})
	}
	d.active.remove(c.label)
	if failed(e.Tool, text) {
		d.failure(c, e.EventID, text)
		return
	}
	d.success(c, e.EventID)
}

// failed reads the result status; without one, the output decides.
func failed(tool map[string]any, text string) bool {
	switch status, _ := tool["status"].(string); status {
	case "error", "failed", "failure", "timeout", "cancelled":
		return true
	case "success", "ok", "succeeded":
		return false
	}
	return strings.Contains(text, "--- FAIL") || strings.Contains(text, "panic:") || strings.HasPrefix(strings.TrimSpace(text), "error")
}

// failure opens (or extends) the error of a call and marks it blocked.
func (d *draft) failure(c call, eventID, text string) {
	msg := d.clean(c.label + failedInfix + failureLines(text))
	if open := d.openErrors[c.label]; open != nil {
		open.Message = msg
		open.SourceEventIDs = d.cite(open.SourceEventIDs, eventID)
	} else {
		open = &semantic.ErrorEntry{Message: msg, Status: semantic.ErrorOpen, SourceEventIDs: d.oneID(eventID)}
		d.errors = append(d.errors, open)
		d.openErrors[c.label] = open
	}
	d.blocked.put(c.label, semantic.ProgressItem{
		Text:                 clip(c.label+suffixFailing, d.o.MaxTextBytes),
		SourceEventIDs:       d.oneID(eventID),
		VerificationEventIDs: []string{},
	})
}

// success resolves the call's open error, unblocks it and records it as done.
func (d *draft) success(c call, eventID string) {
	if open := d.openErrors[c.label]; open != nil {
		open.Status = semantic.ErrorResolved
		open.SourceEventIDs = d.cite(open.SourceEventIDs, eventID)
		delete(d.openErrors, c.label)
	}
	d.blocked.remove(c.label)
	text := clip(c.label+suffixOK, d.o.MaxTextBytes)
	item, _ := d.completed.get(text)
	item.Text = text
	source := eventID
	if c.eventID != "" {
		source = c.eventID
	}
	item.SourceEventIDs = d.cite(item.SourceEventIDs, source)
	item.VerificationEventIDs = d.cite(item.VerificationEventIDs, eventID)
	d.completed.put(text, item)
	d.verified = citeOwned(d.verified, eventID, d.o.MaxCitations)
}

// artifactRefs references every artifact the event carries; only the event
// itself is cited, which is what the validator accepts.
func (d *draft) artifactRefs(e *engine.EventView) {
	if len(e.ArtifactIDs) == 0 {
		return
	}
	purpose := "attachment of a " + cleanText(e.Role, 32) + " message"
	if e.Role == "tool" {
		id, _ := e.Tool["call_id"].(string)
		label := d.calls[id].label
		if label == "" {
			name, _ := e.Tool["name"].(string)
			label = callLabel(name, callArgs{})
		}
		status, _ := e.Tool["status"].(string)
		purpose = "full output of " + label
		if status != "" {
			purpose += " (" + cleanText(status, 32) + ")"
		}
	}
	purpose = clip(purpose, d.o.MaxTextBytes)
	for _, a := range e.ArtifactIDs {
		if !citable(a) {
			continue
		}
		ref, ok := d.artifacts.get(a)
		if !ok {
			ref = semantic.ArtifactRef{ArtifactID: a, Purpose: purpose}
		}
		ref.SourceEventIDs = d.cite(ref.SourceEventIDs, e.EventID)
		d.artifacts.put(a, ref)
	}
}

// settleRequests sets the status of this chunk's requests from what followed
// them: superseded when the next request takes it back, completed when the
// assistant reported finished work before the next request, else active. It
// also records the first and the newest request as objectives.
func (d *draft) settleRequests() {
	next := 0
	for i := range d.requests {
		r := &d.requests[i]
		end := math.MaxInt
		if i+1 < len(d.requests) {
			end = d.requests[i+1].position
		}
		for next < len(d.completions) && d.completions[next] <= r.position {
			next++
		}
		switch {
		case i+1 < len(d.requests) && d.requests[i+1].supersede:
			r.entry.Status = semantic.RequestSuperseded
		case next < len(d.completions) && d.completions[next] < end:
			r.entry.Status = semantic.RequestCompleted
		}
	}
	if len(d.requests) == 0 {
		return
	}
	if len(d.objective.nodes) == 0 {
		d.objectiveFrom(d.requests[0].entry)
	}
	for i := len(d.requests) - 1; i >= 0; i-- {
		if d.requests[i].entry.Status != semantic.RequestSuperseded {
			d.objectiveFrom(d.requests[i].entry)
			break
		}
	}
}

func (d *draft) objectiveFrom(r semantic.UserRequest) {
	if r.ExactExcerpt != nil {
		d.sourced(&d.objective, d.clean(*r.ExactExcerpt), r.SourceEventID)
	}
}

// lastOfEach keeps, of user requests that say the same thing (requestKey),
// only the newest, in the place of the newest: a user who repeats an
// instruction restates it, and its newest status is the current one. The
// rest keep their order. Two entries equal in every field say the same
// thing, so the list is also free of exact duplicates, which the validator
// rejects.
func lastOfEach(reqs []semantic.UserRequest) []semantic.UserRequest {
	last := make(map[string]int, len(reqs))
	keys := make([]string, len(reqs))
	for i, r := range reqs {
		keys[i] = requestKey(r)
		last[keys[i]] = i
	}
	out := make([]semantic.UserRequest, 0, len(last))
	for i, r := range reqs {
		if last[keys[i]] == i {
			out = append(out, r)
		}
	}
	return out
}

// requestKey says when two user requests are the same request: excerpts
// equal but for letter case, runs of white space and trailing punctuation
// ("Add a retry." and "add a  retry!"), or omissions of the same secret
// span. An entry with neither is only the same as another of its event.
func requestKey(r semantic.UserRequest) string {
	switch {
	case r.ExactExcerpt != nil:
		text := strings.Join(strings.Fields(strings.ToLower(*r.ExactExcerpt)), " ")
		return "x" + strings.TrimRightFunc(text, func(c rune) bool { return unicode.IsPunct(c) || unicode.IsSpace(c) })
	case r.SecretOmission != nil:
		return "s" + r.SecretOmission.Class + "\x00" + r.SecretOmission.SourceSpanHash
	}
	return "e" + r.SourceEventID
}
