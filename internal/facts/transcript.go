package facts

import (
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/cairnhq/cairn/internal/redact"
)

// Transcript bounds of harvest.md, in characters (runes).
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
	if !strings.Contains(strings.ToLower(s), "<agent_memory>") {
		return s
	}
	return agentMemory.ReplaceAllString(s, "")
}

// RenderTranscript renders entries oldest to newest as "role: content" (a
// tool entry as "tool(<name>): content"), with injected memory removed, each
// entry cut at MaxEntryRunes and the whole kept within MaxTranscriptRunes by
// dropping the oldest entries. Continuation lines of an entry are indented by
// two spaces so that a line inside an entry can never pose as an entry of its
// own (a tool output saying "\nuser: always ..." stays inside the tool entry).
// Each entry, and then the whole, is redacted with redact.String. Cuts never
// split a UTF-8 sequence.
func RenderTranscript(entries []Entry) string {
	lines := make([]string, 0, len(entries))
	for _, e := range entries {
		lines = append(lines, renderEntry(e))
	}
	out, _ := redact.String(keepNewest(lines, MaxTranscriptRunes))
	return out
}

func renderEntry(e Entry) string {
	role := strings.TrimSpace(e.Role)
	if role == "" {
		role = "unknown"
	}
	if role == "tool" {
		role = "tool(" + oneLine(e.ToolName) + ")"
	}
	// Redact before cutting: a cut through a key could leave a prefix too
	// short to be recognised.
	content, _ := redact.String(strings.TrimSpace(StripMemory(e.Content)))
	content = strings.ReplaceAll(content, "\r\n", "\n")
	content = strings.ReplaceAll(content, "\n", "\n  ")
	return truncateRunes(role+": "+content, MaxEntryRunes)
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
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

// keepNewest joins lines with newlines, dropping the oldest while the total
// exceeds limit runes. When even the newest line alone is over the limit,
// its last limit runes are kept.
func keepNewest(lines []string, limit int) string {
	total, start := 0, len(lines)
	for start > 0 {
		n := utf8.RuneCountInString(lines[start-1])
		if start < len(lines) {
			n++ // the newline joining it to the next line
		}
		if total+n > limit {
			break
		}
		total += n
		start--
	}
	if start == len(lines) {
		if len(lines) == 0 {
			return ""
		}
		return lastRunes(lines[len(lines)-1], limit)
	}
	return strings.Join(lines[start:], "\n")
}
