package semantic

import (
	"reflect"
	"slices"
	"unicode/utf8"

	"github.com/cairnhq/cairn/canonical"
)

// fallbackClass and fallbackText stand in when a scrubber returns a class or
// text the schema cannot hold (empty).
const (
	fallbackClass = "secret"
	fallbackText  = "[REDACTED]"
)

// Redact returns a redacted deep copy of s and the number of fields changed.
// A user request whose exact excerpt holds a secret becomes a secret omission
// {class: first class found, source_span_hash: canonical hash of the
// excerpt}; every other text field (objective, constraint and critical
// context text, decision text and rationale, progress text, error message,
// artifact purpose) is replaced by the scrubbed text, cut to the text bound
// at a character boundary. Entries that become identical are merged (the
// first is kept), so a copy of a valid semantic stays valid. s itself is not
// modified; a nil s or scrub returns a copy (or nil) and 0.
func Redact(s *Semantic, scrub func(text string) (redacted string, classes []string)) (*Semantic, int) {
	if s == nil {
		return nil, 0
	}
	out := s.Clone()
	if scrub == nil {
		return out, 0
	}
	r := redactor{scrub: scrub}
	r.sourced(out.Objective)
	r.requests(out.UserRequests)
	r.sourced(out.Constraints)
	for i := range out.Decisions {
		r.text(&out.Decisions[i].Text)
		if out.Decisions[i].Rationale != nil {
			r.text(out.Decisions[i].Rationale)
		}
	}
	for _, items := range out.Progress.lists() {
		for i := range items {
			r.text(&items[i].Text)
		}
	}
	r.sourced(out.CriticalContext)
	for i := range out.Errors {
		r.text(&out.Errors[i].Message)
	}
	for i := range out.ArtifactRefs {
		r.text(&out.ArtifactRefs[i].Purpose)
	}
	if r.changed > 0 {
		dedupe(out)
	}
	return out, r.changed
}

type redactor struct {
	scrub   func(string) (string, []string)
	changed int
}

func (r *redactor) text(field *string) {
	red, _ := r.scrub(*field)
	if red == *field {
		return
	}
	if red == "" {
		red = fallbackText
	}
	*field = truncateUTF8(red, limits.TextBytes)
	r.changed++
}

func (r *redactor) sourced(list []Sourced) {
	for i := range list {
		r.text(&list[i].Text)
	}
}

func (r *redactor) requests(list []UserRequest) {
	for i := range list {
		req := &list[i]
		if req.ExactExcerpt == nil {
			continue
		}
		_, classes := r.scrub(*req.ExactExcerpt)
		if len(classes) == 0 {
			continue
		}
		hash, err := canonical.Hash(*req.ExactExcerpt)
		if err != nil {
			hash = canonical.HashBytes([]byte(*req.ExactExcerpt))
		}
		class := truncateUTF8(classes[0], ClassMaxBytes)
		if class == "" {
			class = fallbackClass
		}
		req.ExactExcerpt = nil
		req.SecretOmission = &SecretOmission{Class: class, SourceSpanHash: hash}
		r.changed++
	}
}

// truncateUTF8 cuts s to at most n bytes without splitting a character.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// dedupe drops entries equal to an earlier entry of the same list, by the
// comparisons uniqueEntries uses.
func dedupe(s *Semantic) {
	s.Objective = withoutRepeats(s.Objective, compareSourced)
	s.UserRequests = withoutRepeats(s.UserRequests, compareUserRequests)
	s.Constraints = withoutRepeats(s.Constraints, compareSourced)
	s.Decisions = withoutRepeats(s.Decisions, compareDecisions)
	s.Progress.Completed = withoutRepeats(s.Progress.Completed, compareProgressItems)
	s.Progress.Active = withoutRepeats(s.Progress.Active, compareProgressItems)
	s.Progress.Blocked = withoutRepeats(s.Progress.Blocked, compareProgressItems)
	s.Progress.Pending = withoutRepeats(s.Progress.Pending, compareProgressItems)
	s.CriticalContext = withoutRepeats(s.CriticalContext, compareSourced)
	s.Errors = withoutRepeats(s.Errors, compareErrors)
	s.ArtifactRefs = withoutRepeats(s.ArtifactRefs, compareArtifactRefs)
}

// withoutRepeats keeps the first of each set of equal entries, in order,
// reusing list's array.
func withoutRepeats[T any](list []T, compare func(a, b *T) int) []T {
	out := list[:0]
	for i := range list {
		if !slices.ContainsFunc(out, func(kept T) bool { return compare(&kept, &list[i]) == 0 }) {
			out = append(out, list[i])
		}
	}
	return out
}

// Clone returns a deep copy of s (nil for nil).
func (s *Semantic) Clone() *Semantic {
	return s.copy(false)
}

// copy returns a deep copy of s (nil for nil); with emptyLists, every nil
// list of the copy is empty instead, as decoding makes it.
func (s *Semantic) copy(emptyLists bool) *Semantic {
	if s == nil {
		return nil
	}
	c := new(Semantic)
	copyValue(reflect.ValueOf(c).Elem(), reflect.ValueOf(s).Elem(), emptyLists)
	return c
}

// copyValue deep-copies src into dst, a zero value of the same type.
func copyValue(dst, src reflect.Value, emptyLists bool) {
	switch src.Kind() {
	case reflect.Struct:
		for i := range src.NumField() {
			copyValue(dst.Field(i), src.Field(i), emptyLists)
		}
	case reflect.Slice:
		if src.IsNil() && !emptyLists {
			return
		}
		if src.Len() == 0 {
			dst.Set(reflect.MakeSlice(src.Type(), 0, 0))
			return
		}
		dst.Grow(src.Len()) // unlike MakeSlice, allocates only the array
		dst.SetLen(src.Len())
		if src.Type().Elem().Kind() == reflect.String {
			reflect.Copy(dst, src)
			return
		}
		for i := range src.Len() {
			copyValue(dst.Index(i), src.Index(i), emptyLists)
		}
	case reflect.Pointer:
		if !src.IsNil() {
			dst.Set(reflect.New(src.Type().Elem()))
			copyValue(dst.Elem(), src.Elem(), emptyLists)
		}
	default:
		dst.Set(src)
	}
}
