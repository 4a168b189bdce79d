package engine

import (
	"slices"
	"strconv"

	"github.com/cairnhq/cairn/events"

	"github.com/cairnhq/cairn/canonical"
)

// appendView appends the canonical encoding of e's view to dst: the bytes
// of canonical.AppendEncode(dst, View(*e)), whose form EventView's tags
// define, written key by key (in byte order) instead of building the
// view's map, since sizing and rendering encode every view of a lane. It
// stays by the speed rule (docs/architecture.md, "Speed work"): with the
// tag-driven encoding instead, `processor bench --events 100` spends more
// CPU per request (docs/performance.md, "What the kept fast paths are
// worth"). TestAppendViewMatchesCanonicalEncoding holds it to the
// tag-driven encoding. Nested values (provenance, tool) are checked
// against the canonical depth limit relative to themselves.
func appendView(dst []byte, e *events.InputEvent) ([]byte, error) {
	var err error
	dst = append(dst, `{"artifact_ids":`...)
	if dst, err = canonical.AppendStrings(dst, e.ArtifactIDs); err != nil {
		return dst, err
	}
	dst = append(dst, `,"chat_seq":`...)
	dst = strconv.AppendInt(dst, e.ChatSeq, 10)
	dst = append(dst, `,"checkpoint_namespace":`...)
	if dst, err = canonical.AppendString(dst, e.CheckpointNamespace); err != nil {
		return dst, err
	}
	dst = append(dst, `,"content":`...)
	if dst, err = canonical.AppendStringOrNull(dst, e.Content); err != nil {
		return dst, err
	}
	dst = append(dst, `,"content_hash":`...)
	if dst, err = canonical.AppendString(dst, e.ContentHash); err != nil {
		return dst, err
	}
	dst = append(dst, `,"event_id":`...)
	if dst, err = canonical.AppendString(dst, e.EventID); err != nil {
		return dst, err
	}
	dst = append(dst, `,"lane_event_ordinal":`...)
	dst = strconv.AppendInt(dst, e.LaneEventOrdinal, 10)
	dst = append(dst, `,"provenance":`...)
	if dst, err = canonical.AppendEncode(dst, e.Provenance); err != nil {
		return dst, err
	}
	return appendViewTail(dst, e)
}

// appendViewTail appends the view's keys from provenance_sha256 on.
func appendViewTail(dst []byte, e *events.InputEvent) ([]byte, error) {
	var err error
	dst = append(dst, `,"provenance_sha256":`...)
	if dst, err = canonical.AppendString(dst, e.ProvenanceSHA256); err != nil {
		return dst, err
	}
	dst = append(dst, `,"role":`...)
	if dst, err = canonical.AppendString(dst, e.Role); err != nil {
		return dst, err
	}
	dst = append(dst, `,"run_agent_id":`...)
	if dst, err = canonical.AppendString(dst, e.RunAgentID); err != nil {
		return dst, err
	}
	dst = append(dst, `,"tool":`...)
	if e.Tool == nil {
		dst = append(dst, "null"...)
	} else if dst, err = canonical.AppendEncode(dst, e.Tool); err != nil {
		return dst, err
	}
	dst = append(dst, `,"truncated":`...)
	dst = strconv.AppendBool(dst, e.Truncated)
	return append(dst, '}'), nil
}

// viewSize is the byte length of the canonical encoding of e's view.
func viewSize(e *events.InputEvent) (int, error) {
	bp := scratchBuffers.get()
	b, err := appendView(*bp, e)
	n := len(b)
	scratchBuffers.put(bp, b)
	return n, err
}

// laneViews holds the canonical view of every event of a request, encoded
// once per compaction: the before budget renders them all, and the cut,
// chunking and later renderings measure and render most of them again.
// They are laid out as the canonical rendering of the whole lane begins,
// so that the before budget can measure them in place.
type laneViews struct {
	enc  []byte        // {"events":[ and the views, comma separated
	ends []int         // where event i's view ends in enc
	errs map[int]error // why event i has no canonical view (its view is empty)
	buf  *[]byte       // the pooled buffer enc lives in

	laneEvents []events.InputEvent // the events viewed
}

const renderingHead = `{"events":[`

func encodeViews(laneEvents []events.InputEvent) *laneViews {
	v := &laneViews{ends: make([]int, len(laneEvents)), buf: renderBuffers.get(), laneEvents: laneEvents}
	b := append(slices.Grow(*v.buf, renderedSizeHint(laneEvents)), renderingHead...)
	for i := range laneEvents {
		if i > 0 {
			b = append(b, ',')
		}
		next, err := appendView(b, &laneEvents[i])
		if err != nil {
			if v.errs == nil {
				v.errs = map[int]error{}
			}
			v.errs[i] = err
			next = b
		}
		b = next
		v.ends[i] = len(b)
	}
	v.enc = b
	return v
}

// view returns event i's encoded view, or why it has none.
func (v *laneViews) view(i int) ([]byte, error) {
	if err := v.errs[i]; err != nil {
		return nil, err
	}
	start := len(renderingHead)
	if i > 0 {
		start = v.ends[i-1] + 1 // past the comma
	}
	return v.enc[start:v.ends[i]], nil
}

// renderInPlace returns the canonical rendering of the whole lane with a
// semantic (its canonical encoding, "null" for none), written after the
// views, valid until the next rendering in place; ok is false when an event
// has no view.
func (v *laneViews) renderInPlace(sem []byte) (r Rendered, ok bool) {
	if len(v.errs) > 0 {
		return Rendered{}, false
	}
	b := append(append(append(v.enc, `],"semantic":`...), sem...), '}')
	v.enc = b[:len(v.enc)] // the same views, in the buffer the rendering may have grown
	return Rendered{Bytes: b}, true
}

// spans returns where each event's view sits in enc.
func (v *laneViews) spans() []viewSpan {
	spans := make([]viewSpan, len(v.ends))
	start := len(renderingHead)
	for i, end := range v.ends {
		spans[i] = viewSpan{start: start, end: end, event: &v.laneEvents[i], index: i, copyOf: -1}
		start = end + 1 // past the comma
	}
	return spans
}

// release returns the views' buffer to the pool; v is unusable after.
func (v *laneViews) release() {
	renderBuffers.put(v.buf, v.enc)
	v.enc, v.buf = nil, nil
}
