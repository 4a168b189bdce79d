package facts

import (
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/cairnhq/cairn/internal/redact"
)

// renderTranscriptReference is RenderTranscript as first written: every
// entry redacted, stripped and indented with whole-string passes, then the
// joined transcript redacted again. RenderTranscript must return exactly
// what it returns, for every input.
func renderTranscriptReference(entries []Entry) string {
	lines := make([]string, 0, len(entries))
	for _, e := range entries {
		lines = append(lines, renderEntryReference(e))
	}
	out, _ := redact.String(keepNewestReference(lines, MaxTranscriptRunes))
	return out
}

var agentMemoryReference = regexp.MustCompile(`(?is)<agent_memory>.*?(?:</agent_memory>|\z)`)

func stripMemoryReference(s string) string {
	if !strings.Contains(strings.ToLower(s), "<agent_memory>") {
		return s
	}
	return agentMemoryReference.ReplaceAllString(s, "")
}

func renderEntryReference(e Entry) string {
	role := strings.TrimSpace(e.Role)
	if role == "" {
		role = "unknown"
	}
	if role == "tool" {
		role = "tool(" + strings.Join(strings.Fields(e.ToolName), " ") + ")"
	}
	content, _ := redact.String(strings.TrimSpace(stripMemoryReference(e.Content)))
	content = strings.ReplaceAll(content, "\r\n", "\n")
	content = strings.ReplaceAll(content, "\n", "\n  ")
	return truncateRunesReference(role+": "+content, MaxEntryRunes)
}

func truncateRunesReference(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if len(s) <= n {
		return s
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

func lastRunesReference(s string, n int) string {
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

func keepNewestReference(lines []string, limit int) string {
	total, start := 0, len(lines)
	for start > 0 {
		n := utf8.RuneCountInString(lines[start-1])
		if start < len(lines) {
			n++
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
		return lastRunesReference(lines[len(lines)-1], limit)
	}
	return strings.Join(lines[start:], "\n")
}
