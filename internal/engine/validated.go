package engine

import "encoding/json"

// eventsRecord is DecodeRequestValue's private record of every value
// InputEvent.Validate read when the decoded events passed it.
//
// Compact validates its request again because a caller may build or change
// the events after decoding; yet the consumer decodes and compacts the same
// untouched events, and validating an event costs two canonical encodings
// and two SHA-256s. Identities (of the slice, its maps) would prove nothing,
// since a caller can assign a field of req.Events[i], write through Content
// or TokenCount, or edit ArtifactIDs, Tool or Provenance in place. So the
// record keeps the values themselves, in the order one walk of the events
// visits them, and checkEvents replays that walk against the current
// events. Replaying hashes, sorts and allocates nothing: a string unchanged
// since decoding shares its bytes with the record and compares in constant
// time, and a map is matched by looking up the recorded keys. Any
// difference, or a value canonical.Decode cannot produce, fails the replay
// and the events are validated in full; so the record only skips checks
// whose every input equals one that passed. It is never changed once made:
// Compact only reads it, and copies of a Request may share it.
type eventsRecord struct {
	scalars []eventScalars // one per event
	tokens  []recordToken  // each event's provenance, tool and artifact ids
}

// eventScalars are an event's validated fields other than its JSON trees,
// with Content and TokenCount read through their pointers (writing through
// them changes what Validate reads), in one value compared at once.
type eventScalars struct {
	eventID, runAgentID, namespace, role string
	provenanceSHA256, contentHash        string
	content                              string
	chatSeq, ordinal, tokenCount         int64
	hasContent, hasTokenCount, truncated bool
}

func scalarsOf(e *InputEvent) eventScalars {
	s := eventScalars{
		eventID: e.EventID, runAgentID: e.RunAgentID, namespace: e.CheckpointNamespace, role: e.Role,
		provenanceSHA256: e.ProvenanceSHA256, contentHash: e.ContentHash,
		chatSeq: e.ChatSeq, ordinal: e.LaneEventOrdinal, truncated: e.Truncated,
	}
	if e.Content != nil {
		s.content, s.hasContent = *e.Content, true
	}
	if e.TokenCount != nil {
		s.tokenCount, s.hasTokenCount = *e.TokenCount, true
	}
	return s
}

// recordToken is one value of a JSON tree: a scalar, an object key, or the
// length of an object or list whose members follow it.
type recordToken struct {
	kind tokenKind
	n    int    // a length, or a boolean as 0 or 1
	text string // a string, a number's text or an object key
}

type tokenKind uint8

const (
	tokenNull tokenKind = iota
	tokenBool
	tokenString
	tokenNumber
	tokenKey
	tokenObject
	tokenList
)

// tokensPerEvent sizes the tokens for a typical event (a one-member
// provenance, no tool, no artifacts), so that recording rarely grows them.
const tokensPerEvent = 5

// recordEvents returns the record of events that have just passed
// InputEvent.Validate, or nil when they hold a value it cannot record.
func recordEvents(events []InputEvent) *eventsRecord {
	w := eventWalk{record: &eventsRecord{
		scalars: make([]eventScalars, 0, len(events)),
		tokens:  make([]recordToken, 0, tokensPerEvent*len(events)),
	}, ok: true}
	w.events(events)
	if !w.ok {
		return nil
	}
	return w.record
}

// matches reports whether events hold exactly the recorded values.
func (rec *eventsRecord) matches(events []InputEvent) bool {
	if rec == nil || len(events) != len(rec.scalars) {
		return false
	}
	w := eventWalk{record: rec, replaying: true, ok: true}
	w.events(events)
	return w.ok && w.nextToken == len(rec.tokens)
}

// eventWalk visits every value InputEvent.Validate reads, appending each to
// the record or, when replaying, matching it against the record: one walk
// for both keeps what is recorded and what is compared from drifting apart.
type eventWalk struct {
	record     *eventsRecord
	replaying  bool
	nextScalar int  // the recorded event to match next
	nextToken  int  // the recorded token to match next
	ok         bool // false once a value differs or cannot be recorded
}

func (w *eventWalk) events(events []InputEvent) {
	for i := range events {
		if !w.ok {
			return
		}
		w.event(&events[i])
	}
}

// event visits the fields Validate reads: all but Protected.
func (w *eventWalk) event(e *InputEvent) {
	w.scalars(scalarsOf(e))
	w.value(e.Provenance)
	w.value(mapOrNil(e.Tool)) // as the content hash sees it: a nil map is null
	w.texts(e.ArtifactIDs)
}

// scalars records s, or matches it against the next recorded event.
func (w *eventWalk) scalars(s eventScalars) { step(w, &w.record.scalars, &w.nextScalar, s) }

// visit records t, or matches it against the next recorded token.
func (w *eventWalk) visit(t recordToken) { step(w, &w.record.tokens, &w.nextToken, t) }

// step appends v to recorded, or, when replaying, matches it against
// recorded[*next] and moves on; a mismatch ends the walk's ok.
func step[T comparable](w *eventWalk, recorded *[]T, next *int, v T) {
	switch {
	case !w.ok:
	case !w.replaying:
		*recorded = append(*recorded, v)
	case *next < len(*recorded) && (*recorded)[*next] == v:
		*next++
	default:
		w.ok = false
	}
}

func (w *eventWalk) text(s string) { w.visit(recordToken{kind: tokenString, text: s}) }

func (w *eventWalk) flag(b bool) {
	t := recordToken{kind: tokenBool}
	if b {
		t.n = 1
	}
	w.visit(t)
}

func (w *eventWalk) texts(list []string) {
	w.visit(recordToken{kind: tokenList, n: len(list)})
	for _, s := range list {
		w.text(s)
	}
}

// value visits a JSON value of the kinds canonical.Decode produces; any
// other kind ends the walk unmatched.
func (w *eventWalk) value(v any) {
	switch x := v.(type) {
	case nil:
		w.visit(recordToken{kind: tokenNull})
	case bool:
		w.flag(x)
	case string:
		w.text(x)
	case json.Number:
		w.visit(recordToken{kind: tokenNumber, text: string(x)})
	case []any:
		w.list(x)
	case map[string]any:
		w.object(x)
	default:
		w.ok = false
	}
}

func (w *eventWalk) list(list []any) {
	w.visit(recordToken{kind: tokenList, n: len(list)})
	for _, v := range list {
		if !w.ok {
			return
		}
		w.value(v)
	}
}

// object visits a map's members. Replaying looks the recorded keys up
// rather than ranging, as a map's order differs from one range to the
// next; a map of the recorded length that holds every recorded key (which
// are distinct) holds exactly the recorded keys.
func (w *eventWalk) object(m map[string]any) {
	w.visit(recordToken{kind: tokenObject, n: len(m)})
	if !w.replaying {
		for k, v := range m {
			if !w.ok {
				return
			}
			w.visit(recordToken{kind: tokenKey, text: k})
			w.value(v)
		}
		return
	}
	for range len(m) {
		v, present := w.recordedMember(m)
		if !present {
			w.ok = false
			return
		}
		w.value(v)
	}
}

// recordedMember reads the next recorded key and returns its value in m.
func (w *eventWalk) recordedMember(m map[string]any) (any, bool) {
	tokens := w.record.tokens
	if !w.ok || w.nextToken >= len(tokens) || tokens[w.nextToken].kind != tokenKey {
		return nil, false
	}
	v, present := m[tokens[w.nextToken].text]
	w.nextToken++
	return v, present
}
