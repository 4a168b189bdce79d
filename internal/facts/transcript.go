package facts

import (
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/cairnhq/cairn/internal/redact"
)

// Transcript bounds (subjects.md, harvest job), in characters (runes).
const (
	MaxEntryRunes      = 1500
	MaxTranscriptRunes = 24000
)

// agentMemory matches memory injected into a prompt (and an unterminated
// block, which a cut entry may end with). It is removed before anything is
// harvested, so memory never feeds itself back.
var agentMemory = regexp.MustCompile(`(?is)<agent_memory>.*?(?:</agent_memory>|\z)`)

// StripMemory removes every <agent_memory>...</agent_memory> block from s.
func StripMemory(s string) string {
	return agentMemory.ReplaceAllString(s, "")
}

// RenderTranscript renders entries oldest to newest as "role: content" (a
// tool entry as "tool(<name>): content"), with injected memory removed, each
// entry cut at MaxEntryRunes and the whole kept within MaxTranscriptRunes by
// dropping the oldest entries. Continuation lines of an entry are indented by
// two spaces so that a line inside an entry can never pose as an entry of its
// own (a tool output saying "\nuser: always ..." stays inside the tool entry).
// Each entry, and then the whole, is redacted with redact.String: a cut can
// make a secret of what was none. Cuts never split a UTF-8 sequence.
func RenderTranscript(entries []Entry) string {
	kept := renderNewest(entries, MaxTranscriptRunes)
	if len(kept) == 0 && len(entries) > 0 {
		// Even the newest entry alone is over the limit (never while
		// MaxEntryRunes < MaxTranscriptRunes): keep its tail.
		kept = []string{lastRunes(renderEntry(entries[len(entries)-1]), MaxTranscriptRunes)}
	}
	slices.Reverse(kept)
	out, _ := redact.String(strings.Join(kept, "\n"))
	return out
}

// renderNewest renders entries from the newest back while their lines,
// joined with newlines, fit in limit runes, and returns those lines newest
// first. Entries older than the first that does not fit are not rendered:
// they would be dropped.
func renderNewest(entries []Entry, limit int) []string {
	var kept []string
	total := 0
	for i := len(entries) - 1; i >= 0; i-- {
		line := renderEntry(entries[i])
		n := utf8.RuneCountInString(line) + min(len(kept), 1) // with the newline joining it to the next
		if total+n > limit {
			break
		}
		total += n
		kept = append(kept, line)
	}
	return kept
}

// renderEntry is the line of one entry, redacted before it is cut: a cut
// through a key could leave a prefix too short to be recognised.
func renderEntry(e Entry) string {
	role := strings.TrimSpace(e.Role)
	switch role {
	case "":
		role = "unknown"
	case "tool":
		role = "tool(" + strings.Join(strings.Fields(e.ToolName), " ") + ")"
	}
	content, _ := redact.String(strings.TrimSpace(StripMemory(e.Content)))
	content = strings.ReplaceAll(content, "\r\n", "\n")
	content = strings.ReplaceAll(content, "\n", "\n  ")
	return truncateRunes(role+": "+content, MaxEntryRunes)
}

// truncateRunes returns the first n runes of s.
func truncateRunes(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if len(s) <= n {
		return s // at most n bytes, so at most n runes
	}
	count := 0
	for i := range s {
		if count == n {
			return s[:i]
		}
		count++
	}
	return s
}

// lastRunes returns the last n runes of s.
func lastRunes(s string, n int) string {
	if n <= 0 {
		return ""
	}
	count := 0
	for i := len(s); i > 0; {
		_, size := utf8.DecodeLastRuneInString(s[:i])
		i -= size
		count++
		if count == n {
			return s[i:]
		}
	}
	return s
}
