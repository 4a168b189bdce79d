package facts

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"unicode"

	"github.com/cairnhq/cairn/internal/redact"
)

// Bounds of a stored fact, in characters (runes).
const (
	MaxTitleRunes = 120
	MaxBodyRunes  = 1000
	MaxTopics     = 8
	MaxTopicRunes = 40
)

// sanitize removes control characters (a newline in a body becomes a space),
// bounds the title, body and topics, and lower-cases and de-duplicates the
// topics. A candidate without a title takes the start of its body as title.
func sanitize(c Candidate) Candidate {
	body := truncateRunes(strings.TrimSpace(clean(c.Body)), MaxBodyRunes)
	title := strings.TrimSpace(clean(c.Title))
	if title == "" {
		title = shortTitle(body, maxTitleRunes)
	}
	title = truncateRunes(title, MaxTitleRunes)
	topics := []string{}
	seen := map[string]bool{}
	for _, t := range c.Topics {
		t = truncateRunes(strings.TrimSpace(strings.ToLower(clean(t))), MaxTopicRunes)
		if t == "" || seen[t] {
			continue
		}
		seen[t] = true
		topics = append(topics, t)
		if len(topics) == MaxTopics {
			break
		}
	}
	return Candidate{Title: strings.TrimSpace(title), Body: strings.TrimSpace(body), Topics: topics}
}

// clean drops control and format characters and invalid UTF-8, turning line
// breaks and tabs into spaces and collapsing runs of whitespace.
func clean(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for _, r := range strings.ToValidUTF8(s, "") {
		switch {
		case unicode.IsSpace(r):
			space = true
			continue
		case unicode.IsControl(r), unicode.Is(unicode.Cf, r):
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
	}
	return b.String()
}

// redactCandidate masks secrets in every field. It reports whether anything
// was masked and whether the fact is nothing but secrets (then it is
// dropped). A topic holding a secret is dropped rather than masked.
func redactCandidate(c Candidate) (out Candidate, redacted, onlySecrets bool) {
	if redact.Only(c.Body) {
		return Candidate{}, true, true
	}
	body, bc := redact.String(c.Body)
	title, tc := redact.String(c.Title)
	topics := []string{}
	for _, t := range c.Topics {
		if redact.Contains(t) {
			redacted = true
			continue
		}
		topics = append(topics, t)
	}
	redacted = redacted || len(bc) > 0 || len(tc) > 0
	if len(tc) > 0 && redact.Only(c.Title) {
		title = shortTitle(body, maxTitleRunes)
	}
	return Candidate{Title: title, Body: body, Topics: topics}, redacted, false
}

// normalize is the form a body is compared in: trimmed, whitespace collapsed,
// lower-cased.
func normalize(body string) string {
	return strings.ToLower(strings.Join(strings.Fields(body), " "))
}

// BodyHash is the hex sha256 of a body's normalized form, the key of
// deduplication.
func BodyHash(body string) string {
	sum := sha256.Sum256([]byte(normalize(body)))
	return hex.EncodeToString(sum[:])
}
