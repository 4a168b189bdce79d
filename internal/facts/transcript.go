package facts

import (
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/cairnhq/cairn/internal/redact"
)

// Bounds of one model prompt (a window of the cut), in characters
// (runes): a window holds at most MaxTranscriptRunes, and a tool result
// shows at most MaxEntryRunes of itself. They bound a prompt, not what a
// job reads: a longer cut is read in more windows.
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
	if !strings.Contains(s, "<") {
		return s // no block can start; the expression would scan every byte (see mayHaveClauses)
	}
	return agentMemory.ReplaceAllString(s, "")
}

// RenderTranscript renders every entry, oldest to newest, as "role:
// content" (a tool entry as "tool(<name>): content"), with injected memory
// removed. Continuation lines of an entry are indented by two spaces so
// that a line inside an entry can never pose as an entry of its own (a tool
// output saying "\nuser: always ..." stays inside the tool entry). Each
// entry, and then the whole, is redacted with redact.String.
func RenderTranscript(entries []Entry) string {
	lines := make([]string, 0, len(entries))
	for _, e := range entries {
		lines = append(lines, renderEntry(e))
	}
	out, _ := redact.String(strings.Join(lines, "\n"))
	return out
}

// Window is one model prompt's share of a cut: the rendered text of
// consecutive entries, and End, the number of entries of the cut read
// completely once this window and those before it are read.
type Window struct {
	Text string
	End  int
}

// Windows renders entries as RenderTranscript does and packs them, oldest
// first, into windows of at most limit runes. A tool result is cut at
// MaxEntryRunes: it is context for the model, never a source of facts. A
// longer user or assistant entry is split into pieces of at most
// MaxEntryRunes (each piece after the first marked "(continued)"), so no
// text a person wrote is left unread; a window never ends inside a piece.
// Each window is redacted again as a whole. Cuts never split a UTF-8
// sequence.
func Windows(entries []Entry, limit int) []Window {
	var out []Window
	var cur []string
	size := 0
	flush := func(end int) {
		if len(cur) == 0 {
			return
		}
		text, _ := redact.String(strings.Join(cur, "\n"))
		out = append(out, Window{Text: text, End: end})
		cur, size = nil, 0
	}
	for i, e := range entries {
		for _, piece := range entryPieces(e) {
			n := utf8.RuneCountInString(piece) + 1
			if size+n > limit {
				flush(i)
			}
			cur = append(cur, piece)
			size += n
		}
	}
	flush(len(entries))
	return out
}

// entryPieces renders one entry as the pieces Windows packs.
func entryPieces(e Entry) []string {
	line := renderEntry(e)
	if strings.TrimSpace(e.Role) == "tool" {
		return []string{truncateRunes(line, MaxEntryRunes)}
	}
	var pieces []string
	for first := true; line != ""; first = false {
		piece := splitPoint(line, MaxEntryRunes)
		line = line[len(piece):]
		if !first {
			piece = roleLabel(e) + " (continued): " + strings.TrimLeft(piece, " \n")
		}
		pieces = append(pieces, piece)
	}
	return pieces
}

// splitPoint returns the start of s up to n runes, ending at the last line
// break or space in its second half when there is one.
func splitPoint(s string, n int) string {
	cut := truncateRunes(s, n)
	if len(cut) == len(s) {
		return s
	}
	if i := strings.LastIndexAny(cut, "\n "); i > len(cut)/2 {
		return cut[:i]
	}
	return cut
}

// renderEntry is the text of one entry, redacted before any cut: a cut
// through a key could leave a prefix too short to be recognised.
func renderEntry(e Entry) string {
	content, _ := redact.String(strings.TrimSpace(StripMemory(e.Content)))
	content = strings.ReplaceAll(content, "\r\n", "\n")
	content = strings.ReplaceAll(content, "\n", "\n  ")
	return roleLabel(e) + ": " + content
}

// roleLabel is how an entry's role is shown: "user", "assistant",
// "tool(<name>)", or "unknown" for none.
func roleLabel(e Entry) string {
	role := strings.TrimSpace(e.Role)
	switch role {
	case "":
		return "unknown"
	case "tool":
		return "tool(" + strings.Join(strings.Fields(e.ToolName), " ") + ")"
	}
	return role
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
