package semantic

import (
	"slices"
	"unicode/utf8"
)

// The shape check of a typed value. It applies to s exactly what parseMap
// applies to s.Map(), in the same order and with the same messages, without
// building the map: Map always yields every key and closed entry objects, so
// only the values remain to be checked. Callers check a typed semantic
// several times per compaction, which made the map round trip costly.

// validateShape is parseMap(s.Map()) for a non-nil s, minus the result.
func (s *Semantic) validateShape() error {
	if s.Version != Version {
		return invalid(msgVersion)
	}
	if err := checkList(s.Objective, limits.Objective, Sourced.check); err != nil {
		return err
	}
	if err := checkList(s.UserRequests, limits.UserRequests, UserRequest.check); err != nil {
		return err
	}
	if err := checkList(s.Constraints, limits.Constraints, Sourced.check); err != nil {
		return err
	}
	if err := checkList(s.Decisions, limits.Decisions, Decision.check); err != nil {
		return err
	}
	if err := s.Progress.check(); err != nil {
		return err
	}
	if err := checkList(s.CriticalContext, limits.CriticalContext, Sourced.check); err != nil {
		return err
	}
	if err := checkList(s.Errors, limits.Errors, ErrorEntry.check); err != nil {
		return err
	}
	if err := checkList(s.ArtifactRefs, limits.ArtifactRefs, ArtifactRef.check); err != nil {
		return err
	}
	if c := s.Coverage; c.FirstChatSeq <= 0 || c.LastChatSeq < c.FirstChatSeq {
		return invalid(msgCoverage)
	}
	return nil
}

// checkList is list's bound, then each entry's check in order.
func checkList[T any](entries []T, maximum int, check func(T) error) error {
	if len(entries) > maximum {
		return invalid(msgCollection)
	}
	for _, e := range entries {
		if err := check(e); err != nil {
			return err
		}
	}
	return nil
}

func (p Progress) check() error {
	if err := checkList(p.Completed, limits.ProgressCompleted, ProgressItem.check); err != nil {
		return err
	}
	if err := checkList(p.Active, limits.ProgressActive, ProgressItem.check); err != nil {
		return err
	}
	if err := checkList(p.Blocked, limits.ProgressBlocked, ProgressItem.check); err != nil {
		return err
	}
	return checkList(p.Pending, limits.ProgressPending, ProgressItem.check)
}

func (e Sourced) check() error {
	if !validText(e.Text, limits.TextBytes) {
		return invalid(msgText)
	}
	return checkIDs(e.SourceEventIDs, 1)
}

func (r UserRequest) check() error {
	if !validID(r.SourceEventID) {
		return invalid(msgUUID)
	}
	if !slices.Contains(requestStatuses, r.Status) {
		return invalid(msgEnum)
	}
	// excerptOrOmission's order: no omission means the excerpt must be
	// text (so both nil is a text error).
	switch {
	case r.SecretOmission == nil:
		if r.ExactExcerpt == nil || !validText(*r.ExactExcerpt, limits.TextBytes) {
			return invalid(msgText)
		}
	case r.ExactExcerpt == nil:
		if !validText(r.SecretOmission.Class, ClassMaxBytes) {
			return invalid(msgText)
		}
		if !ValidHash(r.SecretOmission.SourceSpanHash) {
			return invalid(msgOmissionHash)
		}
	default:
		return invalid(msgExclusive)
	}
	return nil
}

func (d Decision) check() error {
	if !validText(d.Text, limits.TextBytes) {
		return invalid(msgText)
	}
	if d.Rationale != nil && !validText(*d.Rationale, limits.TextBytes) {
		return invalid(msgText)
	}
	return checkIDs(d.SourceEventIDs, 1)
}

func (p ProgressItem) check() error {
	if !validText(p.Text, limits.TextBytes) {
		return invalid(msgText)
	}
	if err := checkIDs(p.SourceEventIDs, 1); err != nil {
		return err
	}
	return checkIDs(p.VerificationEventIDs, 0)
}

func (e ErrorEntry) check() error {
	if !validText(e.Message, limits.TextBytes) {
		return invalid(msgText)
	}
	if !slices.Contains(errorStatuses, e.Status) {
		return invalid(msgEnum)
	}
	return checkIDs(e.SourceEventIDs, 1)
}

func (a ArtifactRef) check() error {
	if !validID(a.ArtifactID) {
		return invalid(msgUUID)
	}
	if !validText(a.Purpose, limits.TextBytes) {
		return invalid(msgText)
	}
	return checkIDs(a.SourceEventIDs, 1)
}

// validText is text's test: 1..maximum bytes of valid UTF-8.
func validText(s string, maximum int) bool {
	return len(s) >= 1 && len(s) <= maximum && utf8.ValidString(s)
}

// checkIDs is eventIDs' test: minimum..SourceEventIDs unique citations.
func checkIDs(ids []string, minimum int) error {
	if len(ids) < minimum || len(ids) > limits.SourceEventIDs {
		return invalid(msgIDs)
	}
	for i, id := range ids {
		if !validID(id) || slices.Contains(ids[:i], id) {
			return invalid(msgIDs)
		}
	}
	return nil
}

// Normalize shape-checks s and returns what Parse(s.Map()) returns: a deep
// copy in which every list is non-nil, so that later changes to s do not
// reach the copy. It builds no maps. The error is Parse's. A nil s is
// msgNotMap, as for Parse.
func Normalize(s *Semantic) (*Semantic, error) {
	if s == nil {
		return nil, invalid(msgNotMap)
	}
	if err := s.validateShape(); err != nil {
		return nil, err
	}
	c := s.Clone()
	c.normalizeLists()
	return c, nil
}

// normalizeLists replaces nil lists by empty ones, as parsing a map does.
// Of a shape-checked value's id lists only verification_event_ids may be
// empty; the others hold at least one id.
func (s *Semantic) normalizeLists() {
	nonNil(&s.Objective)
	nonNil(&s.UserRequests)
	nonNil(&s.Constraints)
	nonNil(&s.Decisions)
	for _, items := range []*[]ProgressItem{&s.Progress.Completed, &s.Progress.Active, &s.Progress.Blocked, &s.Progress.Pending} {
		nonNil(items)
		for i := range *items {
			nonNil(&(*items)[i].VerificationEventIDs)
		}
	}
	nonNil(&s.CriticalContext)
	nonNil(&s.Errors)
	nonNil(&s.ArtifactRefs)
}

func nonNil[T any](list *[]T) {
	if *list == nil {
		*list = []T{}
	}
}
