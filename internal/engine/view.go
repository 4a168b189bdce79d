package engine

import (
	"strconv"
	"sync"

	"github.com/cairnhq/cairn/internal/canonical"
)

// appendView appends the canonical encoding of e's 13-key view (keys in
// byte order) to dst. It produces the same bytes as canonical.Encode(e.View())
// without building a map per event, which keeps sizing and rendering a
// 10 000-event lane cheap. Nested values (provenance, tool) are checked
// against the canonical depth limit relative to themselves.
func appendView(dst []byte, e *InputEvent) ([]byte, error) {
	var err error
	dst = append(dst, `{"artifact_ids":`...)
	if dst, err = appendStrings(dst, e.ArtifactIDs); err != nil {
		return dst, err
	}
	dst = append(dst, `,"chat_seq":`...)
	dst = strconv.AppendInt(dst, e.ChatSeq, 10)
	dst = append(dst, `,"checkpoint_namespace":`...)
	if dst, err = canonical.AppendString(dst, e.CheckpointNamespace); err != nil {
		return dst, err
	}
	dst = append(dst, `,"content":`...)
	if dst, err = appendOptionalString(dst, e.Content); err != nil {
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

func appendViewTail(dst []byte, e *InputEvent) ([]byte, error) {
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
	if dst, err = canonical.AppendEncode(dst, mapOrNil(e.Tool)); err != nil {
		return dst, err
	}
	dst = append(dst, `,"truncated":`...)
	dst = strconv.AppendBool(dst, e.Truncated)
	return append(dst, '}'), nil
}

// scratchPool holds buffers for measuring views; buffers that grew past
// maxPooledScratch for one huge event are dropped.
var scratchPool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

const maxPooledScratch = 2 << 20

// getScratch returns an empty pooled buffer.
func getScratch() *[]byte {
	bp := scratchPool.Get().(*[]byte)
	*bp = (*bp)[:0]
	return bp
}

// putScratch pools b, the buffer of bp after use, unless it grew too large.
func putScratch(bp *[]byte, b []byte) {
	if cap(b) <= maxPooledScratch {
		*bp = b[:0]
		scratchPool.Put(bp)
	}
}

// viewSize is the byte length of the canonical encoding of e's view.
func viewSize(e *InputEvent) (int, error) {
	bp := getScratch()
	b, err := appendView(*bp, e)
	n := len(b)
	putScratch(bp, b)
	return n, err
}

// appendStrings appends the canonical encoding of list (nil as []).
func appendStrings(dst []byte, list []string) ([]byte, error) {
	dst = append(dst, '[')
	for i, s := range list {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = canonical.AppendString(dst, s); err != nil {
			return dst, err
		}
	}
	return append(dst, ']'), nil
}

// appendOptionalString appends null for nil, else the encoded string.
func appendOptionalString(dst []byte, s *string) ([]byte, error) {
	if s == nil {
		return append(dst, "null"...), nil
	}
	return canonical.AppendString(dst, *s)
}
