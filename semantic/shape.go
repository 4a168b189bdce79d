package semantic

import (
	"slices"

	"github.com/cairnhq/cairn/errcode"
)

// The value check of a typed semantic: bounds, texts, ids, enums,
// exclusivity and coverage, field by field in the order of the types (a
// user request's status before its excerpt or omission). Parse applies it
// after decoding; Validate and Normalize apply it to a typed value.

// Validate shape-checks a typed value: what Parse checks of a document,
// minus the structure its type already guarantees.
func (s *Semantic) Validate() error {
	if s == nil {
		return invalid(msgNotMap)
	}
	return s.validateShape()
}

// validateShape returns the first value error of a non-nil s. It returns
// error, not *errcode.Error, so that a nil result is a nil interface.
func (s *Semantic) validateShape() error {
	if err := s.check(); err != nil {
		return err
	}
	return nil
}

func (s *Semantic) check() *errcode.Error {
	if s.Version != Version {
		return invalidAt(msgVersion, "version")
	}
	if err := checkList(s.Objective, limits.Objective, Sourced.check); err != nil {
		return within(err, "objective")
	}
	if err := checkList(s.UserRequests, limits.UserRequests, UserRequest.check); err != nil {
		return within(err, "user_requests")
	}
	if err := checkList(s.Constraints, limits.Constraints, Sourced.check); err != nil {
		return within(err, "constraints")
	}
	if err := checkList(s.Decisions, limits.Decisions, Decision.check); err != nil {
		return within(err, "decisions")
	}
	if err := s.Progress.check(); err != nil {
		return within(err, "progress")
	}
	if err := checkList(s.CriticalContext, limits.CriticalContext, Sourced.check); err != nil {
		return within(err, "critical_context")
	}
	if err := checkList(s.Errors, limits.Errors, ErrorEntry.check); err != nil {
		return within(err, "errors")
	}
	if err := checkList(s.ArtifactRefs, limits.ArtifactRefs, ArtifactRef.check); err != nil {
		return within(err, "artifact_refs")
	}
	if c := s.Coverage; c.FirstChatSeq <= 0 || c.LastChatSeq < c.FirstChatSeq {
		return invalidAt(msgCoverage, "coverage")
	}
	return nil
}

// checkList checks the list's bound, then each entry in order.
func checkList[T any](entries []T, maximum int, check func(T) *errcode.Error) *errcode.Error {
	if len(entries) > maximum {
		return invalidAt(msgCollection, "")
	}
	for i, e := range entries {
		if err := check(e); err != nil {
			return within(err, index(i))
		}
	}
	return nil
}

func (p Progress) check() *errcode.Error {
	if err := checkList(p.Completed, limits.ProgressCompleted, ProgressItem.check); err != nil {
		return within(err, "completed")
	}
	if err := checkList(p.Active, limits.ProgressActive, ProgressItem.check); err != nil {
		return within(err, "active")
	}
	if err := checkList(p.Blocked, limits.ProgressBlocked, ProgressItem.check); err != nil {
		return within(err, "blocked")
	}
	if err := checkList(p.Pending, limits.ProgressPending, ProgressItem.check); err != nil {
		return within(err, "pending")
	}
	return nil
}

func (e Sourced) check() *errcode.Error {
	if !validText(e.Text, limits.TextBytes) {
		return invalidAt(msgText, "text")
	}
	return within(checkIDs(e.SourceEventIDs, 1), "source_event_ids")
}

// check requires exactly one of excerpt and omission, after the id and the
// status: with no omission the excerpt must be text (so both nil is a text
// error).
func (r UserRequest) check() *errcode.Error {
	if !validID(r.SourceEventID) {
		return invalidAt(msgUUID, "source_event_id")
	}
	if !slices.Contains(requestStatuses, r.Status) {
		return invalidAt(msgEnum, "status")
	}
	switch {
	case r.SecretOmission == nil:
		if r.ExactExcerpt == nil || !validText(*r.ExactExcerpt, limits.TextBytes) {
			return invalidAt(msgText, "exact_excerpt")
		}
	case r.ExactExcerpt == nil:
		if !validText(r.SecretOmission.Class, ClassMaxBytes) {
			return invalidAt(msgText, "secret_omission.class")
		}
		if !validHash(r.SecretOmission.SourceSpanHash) {
			return invalidAt(msgOmissionHash, "secret_omission.source_span_hash")
		}
	default:
		return invalidAt(msgExclusive, "secret_omission")
	}
	return nil
}

func (d Decision) check() *errcode.Error {
	if !validText(d.Text, limits.TextBytes) {
		return invalidAt(msgText, "text")
	}
	if d.Rationale != nil && !validText(*d.Rationale, limits.TextBytes) {
		return invalidAt(msgText, "rationale")
	}
	return within(checkIDs(d.SourceEventIDs, 1), "source_event_ids")
}

func (p ProgressItem) check() *errcode.Error {
	if !validText(p.Text, limits.TextBytes) {
		return invalidAt(msgText, "text")
	}
	if err := checkIDs(p.SourceEventIDs, 1); err != nil {
		return within(err, "source_event_ids")
	}
	return within(checkIDs(p.VerificationEventIDs, 0), "verification_event_ids")
}

func (e ErrorEntry) check() *errcode.Error {
	if !validText(e.Message, limits.TextBytes) {
		return invalidAt(msgText, "message")
	}
	if !slices.Contains(errorStatuses, e.Status) {
		return invalidAt(msgEnum, "status")
	}
	return within(checkIDs(e.SourceEventIDs, 1), "source_event_ids")
}

func (a ArtifactRef) check() *errcode.Error {
	if !validID(a.ArtifactID) {
		return invalidAt(msgUUID, "artifact_id")
	}
	if !validText(a.Purpose, limits.TextBytes) {
		return invalidAt(msgText, "purpose")
	}
	return within(checkIDs(a.SourceEventIDs, 1), "source_event_ids")
}

// checkIDs requires minimum..SourceEventIDs distinct citations.
func checkIDs(ids []string, minimum int) *errcode.Error {
	if len(ids) < minimum || len(ids) > limits.SourceEventIDs {
		return invalidAt(msgIDs, "")
	}
	for i, id := range ids {
		if !validID(id) || slices.Contains(ids[:i], id) {
			return invalidAt(msgIDs, index(i))
		}
	}
	return nil
}

// Normalize shape-checks s and returns what Parse of its encoding returns:
// a deep copy in which every list is non-nil, so that later changes to s do
// not reach the copy. The error is Parse's. A nil s is msgNotMap, as for
// Parse.
func Normalize(s *Semantic) (*Semantic, error) {
	if s == nil {
		return nil, invalid(msgNotMap)
	}
	if err := s.validateShape(); err != nil {
		return nil, err
	}
	return s.copy(true), nil
}
