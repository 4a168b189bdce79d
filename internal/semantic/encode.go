package semantic

import (
	"strconv"
	"sync"

	"github.com/cairnhq/cairn/internal/canonical"
)

// AppendCanonical appends the canonical encoding of s.Map() to dst, the
// bytes that are hashed, size-checked and rendered, without building the
// map: members are written in the byte order of their keys, which is fixed
// by the schema. A nil s appends null. On error (a string that is not valid
// UTF-8, wrapping canonical.ErrNotCanonical) dst is returned unextended.
func (s *Semantic) AppendCanonical(dst []byte) ([]byte, error) {
	if s == nil {
		return append(dst, "null"...), nil
	}
	w := writer{buf: dst}
	w.raw(`{"artifact_refs":`)
	writeList(&w, s.ArtifactRefs, (*writer).artifactRef)
	w.raw(`,"constraints":`)
	writeList(&w, s.Constraints, (*writer).sourced)
	w.raw(`,"coverage":{"first_chat_seq":`)
	w.int(s.Coverage.FirstChatSeq)
	w.raw(`,"last_chat_seq":`)
	w.int(s.Coverage.LastChatSeq)
	w.raw(`},"critical_context":`)
	writeList(&w, s.CriticalContext, (*writer).sourced)
	w.raw(`,"decisions":`)
	writeList(&w, s.Decisions, (*writer).decision)
	w.raw(`,"errors":`)
	writeList(&w, s.Errors, (*writer).errorEntry)
	w.raw(`,"objective":`)
	writeList(&w, s.Objective, (*writer).sourced)
	w.raw(`,"progress":{"active":`)
	writeList(&w, s.Progress.Active, (*writer).progressItem)
	w.raw(`,"blocked":`)
	writeList(&w, s.Progress.Blocked, (*writer).progressItem)
	w.raw(`,"completed":`)
	writeList(&w, s.Progress.Completed, (*writer).progressItem)
	w.raw(`,"pending":`)
	writeList(&w, s.Progress.Pending, (*writer).progressItem)
	w.raw(`},"user_requests":`)
	writeList(&w, s.UserRequests, (*writer).userRequest)
	w.raw(`,"version":`)
	w.int(int64(s.Version))
	w.raw(`}`)
	if w.err != nil {
		return dst, w.err
	}
	return w.buf, nil
}

// writer appends canonical JSON and keeps the first error; after an error
// it writes nothing more.
type writer struct {
	buf []byte
	err error
}

// raw appends s, already canonical JSON text (keys and punctuation).
func (w *writer) raw(s string) {
	if w.err == nil {
		w.buf = append(w.buf, s...)
	}
}

func (w *writer) int(n int64) {
	if w.err == nil {
		w.buf = strconv.AppendInt(w.buf, n, 10)
	}
}

func (w *writer) string(s string) {
	if w.err == nil {
		w.buf, w.err = canonical.AppendString(w.buf, s)
	}
}

// nullable writes null for nil, as Map's nullable.
func (w *writer) nullable(s *string) {
	if s == nil {
		w.raw("null")
		return
	}
	w.string(*s)
}

// ids writes a list of strings; nil is [], as Map's ids.
func (w *writer) ids(list []string) {
	w.raw("[")
	for i, id := range list {
		if i > 0 {
			w.raw(",")
		}
		w.string(id)
	}
	w.raw("]")
}

// writeList writes a list of entries; nil is [], as Map's mapList.
func writeList[T any](w *writer, list []T, entry func(*writer, *T)) {
	w.raw("[")
	for i := range list {
		if i > 0 {
			w.raw(",")
		}
		entry(w, &list[i])
	}
	w.raw("]")
}

func (w *writer) sourced(e *Sourced) {
	w.raw(`{"source_event_ids":`)
	w.ids(e.SourceEventIDs)
	w.raw(`,"text":`)
	w.string(e.Text)
	w.raw("}")
}

func (w *writer) userRequest(r *UserRequest) {
	w.raw(`{"exact_excerpt":`)
	w.nullable(r.ExactExcerpt)
	w.raw(`,"secret_omission":`)
	if o := r.SecretOmission; o != nil {
		w.raw(`{"class":`)
		w.string(o.Class)
		w.raw(`,"source_span_hash":`)
		w.string(o.SourceSpanHash)
		w.raw("}")
	} else {
		w.raw("null")
	}
	w.raw(`,"source_event_id":`)
	w.string(r.SourceEventID)
	w.raw(`,"status":`)
	w.string(r.Status)
	w.raw("}")
}

func (w *writer) decision(d *Decision) {
	w.raw(`{"rationale":`)
	w.nullable(d.Rationale)
	w.raw(`,"source_event_ids":`)
	w.ids(d.SourceEventIDs)
	w.raw(`,"text":`)
	w.string(d.Text)
	w.raw("}")
}

func (w *writer) progressItem(p *ProgressItem) {
	w.raw(`{"source_event_ids":`)
	w.ids(p.SourceEventIDs)
	w.raw(`,"text":`)
	w.string(p.Text)
	w.raw(`,"verification_event_ids":`)
	w.ids(p.VerificationEventIDs)
	w.raw("}")
}

func (w *writer) errorEntry(e *ErrorEntry) {
	w.raw(`{"message":`)
	w.string(e.Message)
	w.raw(`,"source_event_ids":`)
	w.ids(e.SourceEventIDs)
	w.raw(`,"status":`)
	w.string(e.Status)
	w.raw("}")
}

func (w *writer) artifactRef(a *ArtifactRef) {
	w.raw(`{"artifact_id":`)
	w.string(a.ArtifactID)
	w.raw(`,"purpose":`)
	w.string(a.Purpose)
	w.raw(`,"source_event_ids":`)
	w.ids(a.SourceEventIDs)
	w.raw("}")
}

// scratch holds encoding buffers for Hash and the size check; one that grew
// past maxPooledScratch for a huge semantic is dropped.
var scratch = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

const maxPooledScratch = 1 << 20

// encodeScratch encodes s into a pooled buffer; the caller hands it back
// with releaseScratch once done with the bytes.
func (s *Semantic) encodeScratch() (*[]byte, []byte, error) {
	bp := scratch.Get().(*[]byte)
	b, err := s.AppendCanonical((*bp)[:0])
	return bp, b, err
}

func releaseScratch(bp *[]byte, b []byte) {
	if cap(b) <= maxPooledScratch {
		*bp = b[:0]
		scratch.Put(bp)
	}
}

// encodedSize is the length of s's canonical encoding.
func (s *Semantic) encodedSize() (int, error) {
	bp, b, err := s.encodeScratch()
	releaseScratch(bp, b)
	return len(b), err
}
