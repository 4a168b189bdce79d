package offline

import (
	"strconv"

	"github.com/cairnhq/cairn/internal/rawjson"
	"github.com/cairnhq/cairn/internal/semantic"
)

// The functions below append the JSON that encoding/json writes for the
// semantic types with HTML escaping off, byte for byte. Trimming measures
// the output after every few entries it drops and deduplication compares
// entries by their encoding; doing both by reflection cost more than the
// rest of trimming. TestEncodeMatchesEncodingJSON holds them to
// encoding/json.

// appendString appends s as a JSON string, escaped as encoding/json does
// with HTML escaping off.
func appendString(b []byte, s string) []byte { return rawjson.AppendStringNoHTML(b, s) }

// appendOptional appends *s, or null.
func appendOptional(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return appendString(b, *s)
}

// appendStrings appends a list of strings; a nil list is null.
func appendStrings(b []byte, list []string) []byte {
	if list == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range list {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, s)
	}
	return append(b, ']')
}

// appendList appends a list of entries; a nil list is null.
func appendList[T any](b []byte, list []T) []byte {
	if list == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i := range list {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendEntry(b, &list[i])
	}
	return append(b, ']')
}

// appendEntry appends one entry of a semantic list. It takes a pointer so
// that the type switch does not copy the entry to the heap.
func appendEntry[T any](b []byte, e *T) []byte {
	switch v := any(e).(type) {
	case *semantic.Sourced:
		b = append(b, `{"text":`...)
		b = appendString(b, v.Text)
		b = append(b, `,"source_event_ids":`...)
		return append(appendStrings(b, v.SourceEventIDs), '}')
	case *semantic.UserRequest:
		b = append(b, `{"source_event_id":`...)
		b = appendString(b, v.SourceEventID)
		b = append(b, `,"exact_excerpt":`...)
		b = appendOptional(b, v.ExactExcerpt)
		b = append(b, `,"secret_omission":`...)
		b = appendOmission(b, v.SecretOmission)
		b = append(b, `,"status":`...)
		return append(appendString(b, v.Status), '}')
	case *semantic.Decision:
		b = append(b, `{"text":`...)
		b = appendString(b, v.Text)
		b = append(b, `,"rationale":`...)
		b = appendOptional(b, v.Rationale)
		b = append(b, `,"source_event_ids":`...)
		return append(appendStrings(b, v.SourceEventIDs), '}')
	case *semantic.ProgressItem:
		b = append(b, `{"text":`...)
		b = appendString(b, v.Text)
		b = append(b, `,"source_event_ids":`...)
		b = appendStrings(b, v.SourceEventIDs)
		b = append(b, `,"verification_event_ids":`...)
		return append(appendStrings(b, v.VerificationEventIDs), '}')
	case *semantic.ErrorEntry:
		b = append(b, `{"message":`...)
		b = appendString(b, v.Message)
		b = append(b, `,"status":`...)
		b = appendString(b, v.Status)
		b = append(b, `,"source_event_ids":`...)
		return append(appendStrings(b, v.SourceEventIDs), '}')
	case *semantic.ArtifactRef:
		b = append(b, `{"artifact_id":`...)
		b = appendString(b, v.ArtifactID)
		b = append(b, `,"purpose":`...)
		b = appendString(b, v.Purpose)
		b = append(b, `,"source_event_ids":`...)
		return append(appendStrings(b, v.SourceEventIDs), '}')
	}
	panic("offline: no JSON encoding for this entry type")
}

func appendOmission(b []byte, o *semantic.SecretOmission) []byte {
	if o == nil {
		return append(b, "null"...)
	}
	b = append(b, `{"class":`...)
	b = appendString(b, o.Class)
	b = append(b, `,"source_span_hash":`...)
	return append(appendString(b, o.SourceSpanHash), '}')
}

// appendSemantic appends a whole semantic.
func appendSemantic(b []byte, s *semantic.Semantic) []byte {
	b = append(b, `{"version":`...)
	b = strconv.AppendInt(b, int64(s.Version), 10)
	b = append(b, `,"objective":`...)
	b = appendList(b, s.Objective)
	b = append(b, `,"user_requests":`...)
	b = appendList(b, s.UserRequests)
	b = append(b, `,"constraints":`...)
	b = appendList(b, s.Constraints)
	b = append(b, `,"decisions":`...)
	b = appendList(b, s.Decisions)
	b = append(b, `,"progress":{"completed":`...)
	b = appendList(b, s.Progress.Completed)
	b = append(b, `,"active":`...)
	b = appendList(b, s.Progress.Active)
	b = append(b, `,"blocked":`...)
	b = appendList(b, s.Progress.Blocked)
	b = append(b, `,"pending":`...)
	b = appendList(b, s.Progress.Pending)
	b = append(b, `},"critical_context":`...)
	b = appendList(b, s.CriticalContext)
	b = append(b, `,"errors":`...)
	b = appendList(b, s.Errors)
	b = append(b, `,"artifact_refs":`...)
	b = appendList(b, s.ArtifactRefs)
	b = append(b, `,"coverage":{"first_chat_seq":`...)
	b = strconv.AppendInt(b, s.Coverage.FirstChatSeq, 10)
	b = append(b, `,"last_chat_seq":`...)
	b = strconv.AppendInt(b, s.Coverage.LastChatSeq, 10)
	return append(b, `}}`...)
}
