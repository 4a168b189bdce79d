package engine

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"

	"github.com/cairnhq/cairn/events"

	"github.com/cairnhq/cairn/internal/tokens"
)

// CountCache keeps the token counts of event views across compactions. A
// lane is resent whole with every compaction request, so a caller that
// hands the same cache to every Compact of a worker counts each event once
// instead of once per request. The engine reads and fills it but owns no
// state: without one, it counts each view once per compaction. It is
// bounded and safe for concurrent use.
type CountCache struct {
	counts *tokens.Cache[viewKey]
}

// NewCountCache returns a cache of at most capacity event counts.
func NewCountCache(capacity int) *CountCache {
	return &CountCache{counts: tokens.NewCache[viewKey](capacity)}
}

// viewKey identifies the bytes of an event's canonical view for one
// counter: the hashes cover content, tool, artifact ids, truncation and
// provenance (the request is validated against them), the rest of the
// view is the event's identity. It is the SHA-256 of those fields, each
// prefixed with its length, rather than the fields themselves: a key
// holds no pointer, so the cache's entries are not the garbage
// collector's to scan, keep no request's buffers alive and cost no
// allocation to store, and the map hashes 32 bytes instead of seven
// strings. Telling two views apart rests on SHA-256, as content_hash
// already does.
type viewKey [sha256.Size]byte

func keyOf(c counter, e *events.InputEvent) viewKey {
	var buf [512]byte
	b := buf[:0]
	for _, s := range [...]string{c.name, e.EventID, e.ContentHash, e.ProvenanceSHA256, e.Role, e.RunAgentID, e.CheckpointNamespace} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	b = binary.AppendVarint(b, e.ChatSeq)
	b = binary.AppendVarint(b, e.LaneEventOrdinal)
	return sha256.Sum256(b)
}

// viewSpan is where the canonical view of event sits in a rendering;
// index is the event's position in the request's lane when the view is
// the lane event's own (not a projection of it), else -1; copyOf is the
// lane position of the event a projected view replaces, else -1.
type viewSpan struct {
	start, end int
	event      *events.InputEvent
	index      int
	copyOf     int
}

// viewCounts are the view counts of one compaction: the caller's cache,
// and the counts already used in this compaction by lane position, so
// that the views every budget of a compaction measures again are looked
// up once. kept holds, by lane position, the counts of the parts of a
// view that projection keeps, so that a projected copy counts only what
// projection replaced; lane returns the lane view at a position (nil
// when it has none) to check that the copy's kept parts are its bytes.
// counted is the bytes handed to the counter.
type viewCounts struct {
	cache    *CountCache
	lane     []int64 // by lane position; -1 until counted
	kept     []keptCounts
	laneView func(i int) []byte
	counted  int64
}

// keptCounts are the counts of the two parts of a view that its projected
// copy shares: from the view's first key to content, and from event_id to
// tool.
type keptCounts struct {
	head, middle int64
	ok           bool
}

func newViewCounts(cache *CountCache, laneEvents int) *viewCounts {
	lane := make([]int64, laneEvents)
	for i := range lane {
		lane[i] = -1
	}
	return &viewCounts{cache: cache, lane: lane, kept: make([]keptCounts, laneEvents)}
}

// text counts text that is no view (the framing between views).
func (vc *viewCounts) text(c counter, text []byte) int64 {
	if vc != nil {
		vc.counted += int64(len(text))
	}
	return c.count(text)
}

// count returns the count of inner, the view v without its braces.
func (vc *viewCounts) count(c counter, v viewSpan, inner []byte) int64 {
	if vc == nil {
		return c.count(inner)
	}
	own := v.index >= 0 && v.index < len(vc.lane)
	if own && vc.lane[v.index] >= 0 {
		return vc.lane[v.index]
	}
	var key viewKey
	if vc.cache != nil {
		key = keyOf(c, v.event)
	}
	n, ok := vc.cache.get(key)
	if !ok {
		n = vc.countView(c, v, inner)
		vc.cache.put(key, n)
	}
	if own {
		vc.lane[v.index] = n
	}
	return n
}

// countView counts inner part by part: the parts projection keeps and the
// parts it replaces, split where every counter splits (tokens.SplitsAt),
// so the sum is the count of inner. A lane view's kept parts' counts are
// remembered; a projected copy takes them when its kept parts are the
// lane view's bytes.
func (vc *viewCounts) countView(c counter, v viewSpan, inner []byte) int64 {
	parts, ok := splitView(inner)
	if !ok {
		return vc.text(c, inner)
	}
	kept, shared := vc.keptOf(v.copyOf, parts)
	if !shared {
		kept = keptCounts{head: vc.text(c, parts[0]), middle: vc.text(c, parts[2]), ok: true}
	}
	if v.index >= 0 && v.index < len(vc.kept) {
		vc.kept[v.index] = kept
	}
	return kept.head + vc.text(c, parts[1]) + kept.middle + vc.text(c, parts[3])
}

// keptOf returns the kept parts' counts of the lane view at position i
// when parts, a projected copy's, keep that view's bytes.
func (vc *viewCounts) keptOf(i int, parts [4][]byte) (keptCounts, bool) {
	if i < 0 || i >= len(vc.kept) || !vc.kept[i].ok || vc.laneView == nil {
		return keptCounts{}, false
	}
	view := vc.laneView(i)
	if len(view) < len(`{"}`) {
		return keptCounts{}, false
	}
	orig, ok := splitView(view[len(`{"`) : len(view)-len(`}`)])
	if !ok || !bytes.Equal(orig[0], parts[0]) || !bytes.Equal(orig[2], parts[2]) {
		return keptCounts{}, false
	}
	return vc.kept[i], true
}

// splitView splits inner, a view without its braces, into its parts: up
// to the key content, from content to event_id (replaced by projection),
// from event_id to tool, and from tool on (replaced); false when a key is
// not found or a count may not be split there. In canonical JSON a quote
// inside a string is escaped, so `,"` is always a member's start: the
// values before content and between content and event_id are strings,
// a list of strings and an integer, so the first content and event_id
// members found are the view's own. Provenance and tool may hold a
// "tool" member of their own, so the last one found may lie inside the
// tool: the parts then still add up to inner, and a projected copy only
// shares less of its count.
func splitView(inner []byte) (parts [4][]byte, ok bool) {
	content := bytes.Index(inner, []byte(`,"content":`))
	eventID := -1
	if content >= 0 {
		eventID = bytes.Index(inner[content:], []byte(`,"event_id":`))
	}
	tool := bytes.LastIndex(inner, []byte(`,"tool":`))
	if content < 0 || eventID < 0 || tool < 0 {
		return parts, false
	}
	at := [3]int{content + len(`,"`), content + eventID + len(`,"`), tool + len(`,"`)}
	prev := 0
	for i, p := range at {
		if p <= prev || p >= len(inner) || !tokens.SplitsAt(inner, p) {
			return parts, false
		}
		parts[i], prev = inner[prev:p], p
	}
	parts[3] = inner[prev:]
	return parts, true
}

// countRendering counts text, a rendering in which views are the spans of
// event views, as c.count(text) would, but each view's count comes from
// cache when it holds it. Between the view's `{"` and `}` a count may be
// split (tokens.SplitsAt), so the rendering's count is the sum of the
// views' inner counts and the counts of the framing between them: exact,
// not an approximation. A view whose bounds do not allow a split (no view
// the engine renders) is counted with the framing.
func countRendering(c counter, text []byte, views []viewSpan, counts *viewCounts) int64 {
	var total int64
	pos := 0
	for _, v := range views {
		start, end := v.start+len(`{"`), v.end-len(`}`)
		if start < pos || end <= start || end > len(text) ||
			!tokens.SplitsAt(text, start) || !tokens.SplitsAt(text, end) {
			continue
		}
		total += counts.text(c, text[pos:start]) + counts.count(c, v, text[start:end])
		pos = end
	}
	return total + counts.text(c, text[pos:])
}

// get returns the cached count of the view key stands for.
func (cc *CountCache) get(key viewKey) (int64, bool) {
	if cc == nil {
		return 0, false
	}
	return cc.counts.Get(key)
}

// put caches n as the count of the view key stands for.
func (cc *CountCache) put(key viewKey, n int64) {
	if cc != nil {
		cc.counts.Put(key, n)
	}
}
