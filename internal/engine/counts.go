package engine

import (
	"strings"

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
// view is the event's identity.
type viewKey struct {
	counter                                string
	eventID, contentHash, provenanceSHA256 string
	role, runAgentID, checkpointNamespace  string
	chatSeq, laneEventOrdinal              int64
}

func keyOf(c counter, e *InputEvent) viewKey {
	return viewKey{
		counter: c.name, eventID: e.EventID, contentHash: e.ContentHash, provenanceSHA256: e.ProvenanceSHA256,
		role: e.Role, runAgentID: e.RunAgentID, checkpointNamespace: e.CheckpointNamespace,
		chatSeq: e.ChatSeq, laneEventOrdinal: e.LaneEventOrdinal,
	}
}

// viewSpan is where the canonical view of event sits in a rendering;
// index is the event's position in the request's lane when the view is
// the lane event's own (not a projection of it), else -1.
type viewSpan struct {
	start, end int
	event      *InputEvent
	index      int
}

// viewCounts are the view counts of one compaction: the caller's cache,
// and the counts already used in this compaction by lane position, so
// that the views every budget of a compaction measures again are looked
// up once.
type viewCounts struct {
	cache *CountCache
	lane  []int64 // by lane position; -1 until counted
}

func newViewCounts(cache *CountCache, events int) *viewCounts {
	lane := make([]int64, events)
	for i := range lane {
		lane[i] = -1
	}
	return &viewCounts{cache: cache, lane: lane}
}

// count returns the count of inner, the view v without its braces.
func (vc *viewCounts) count(c counter, v viewSpan, inner []byte) int64 {
	if vc == nil {
		return c.count(inner)
	}
	if v.index >= 0 && v.index < len(vc.lane) && vc.lane[v.index] >= 0 {
		return vc.lane[v.index]
	}
	n := vc.cache.count(c, v.event, inner)
	if v.index >= 0 && v.index < len(vc.lane) {
		vc.lane[v.index] = n
	}
	return n
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
		total += c.count(text[pos:start]) + counts.count(c, v, text[start:end])
		pos = end
	}
	return total + c.count(text[pos:])
}

// count returns the count of inner, event's view without its braces.
func (cc *CountCache) count(c counter, event *InputEvent, inner []byte) int64 {
	if cc == nil {
		return c.count(inner)
	}
	key := keyOf(c, event)
	if n, ok := cc.counts.Get(key); ok {
		return n
	}
	n := c.count(inner)
	cc.counts.Put(key.clone(), n)
	return n
}

// clone copies the key's strings, so that an entry does not keep the
// request it came from (decoded strings may share its buffers) alive.
func (k viewKey) clone() viewKey {
	for _, s := range []*string{&k.eventID, &k.contentHash, &k.provenanceSHA256, &k.role, &k.runAgentID, &k.checkpointNamespace} {
		*s = strings.Clone(*s)
	}
	return k
}
