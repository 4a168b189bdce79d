package facts

import (
	"bytes"
	"encoding/binary"
	"regexp"
	"strings"
	"sync"
	"unicode"
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
	if !hasMemoryOpen(s) {
		return s
	}
	return agentMemory.ReplaceAllString(s, "")
}

// hasMemoryOpen reports whether s holds memoryOpen in any ASCII case: what
// strings.Contains(strings.ToLower(s), memoryOpen) reports, without lowering
// all of s. Only İ, K (Kelvin) and ſ lower or fold to ASCII letters, to i, k
// and s, none of which the tag holds, so ASCII case is the only case there is.
func hasMemoryOpen(s string) bool {
	for {
		i := strings.IndexByte(s, memoryOpen[0])
		if i < 0 || len(s)-i < len(memoryOpen) {
			return false
		}
		if strings.EqualFold(s[i:i+len(memoryOpen)], memoryOpen) {
			return true
		}
		s = s[i+1:]
	}
}

// RenderTranscript renders entries oldest to newest as "role: content" (a
// tool entry as "tool(<name>): content"), with injected memory removed, each
// entry cut at MaxEntryRunes and the whole kept within MaxTranscriptRunes by
// dropping the oldest entries. Continuation lines of an entry are indented by
// two spaces so that a line inside an entry can never pose as an entry of its
// own (a tool output saying "\nuser: always ..." stays inside the tool entry).
// Each entry, and then the whole, is redacted with redact.String. Cuts never
// split a UTF-8 sequence.
//
// The second redaction scans only what the first left unsettled (see renderedLine):
// its result is the same as redacting the whole again.
func RenderTranscript(entries []Entry) string {
	lb := lineBuffers.Get().(*lineBuffer)
	defer lb.release()
	kept := lb.renderNewest(entries, MaxTranscriptRunes)
	if len(kept) == 0 {
		if len(entries) == 0 {
			return ""
		}
		// Even the newest entry alone is over the limit (never while
		// MaxEntryRunes < MaxTranscriptRunes): keep its tail.
		newest := lb.render(entries[len(entries)-1])
		out, _ := redact.String(lastRunes(string(lb.text(newest)), MaxTranscriptRunes))
		return out
	}
	return lb.joinRedacted(kept)
}

// lineBuffer holds the lines of one transcript, rendered one after the
// other from the newest entry back, until they are joined oldest first.
// Buffers are reused, so rendering allocates little but the transcript.
type lineBuffer struct {
	buf []byte
}

var lineBuffers = sync.Pool{New: func() any { return &lineBuffer{buf: make([]byte, 0, 32<<10)} }}

// maxPooledLineBytes bounds a buffer kept for reuse. The lines of a
// transcript take about MaxTranscriptRunes*utf8.UTFMax bytes at most; a
// larger buffer is let go rather than held by the pool.
const maxPooledLineBytes = 256 << 10

func (lb *lineBuffer) release() {
	if cap(lb.buf) > maxPooledLineBytes {
		return
	}
	lb.buf = lb.buf[:0]
	lineBuffers.Put(lb)
}

// renderedLine is one entry's line, lb.buf[start:end], and how much of it
// the second redaction may leave as is.
//
// That pass finds in each line of the transcript what it finds in the line
// alone (redact.Find, when redact.LineLocal holds for every entry; keyBlock
// records where it may not). Before any cut, an entry's lines hold no secret
// when
//   - the first pass found none in its content, so the content holds none;
//   - the prefix "role: " cannot start one (redact.MayStartSecret) and ends
//     in a space, so it adds none;
//   - indenting and dropping "\r" before "\n" only put spaces at the start of
//     lines and take a carriage return from their end, which changes nothing
//     Find finds.
//
// A cut can still make a secret in the last line it leaves (a key cut just
// before a letter that disqualified it, a marker cut so that it no longer
// hides a value): that line is redacted again. Any other entry is redacted
// again whole.
type renderedLine struct {
	start, end int
	// settled ends the part of the line, from start, that needs no second
	// redaction.
	settled int
	// runes counts the runes of the line; -1 until runeCount counts them.
	runes int
	// keyBlock is set when the entry may hold a private key block, which
	// may run on into the following lines: the whole transcript is then
	// redacted again.
	keyBlock bool
}

func (lb *lineBuffer) text(l renderedLine) []byte { return lb.buf[l.start:l.end] }

// runeCount returns the runes of l, counting them once.
func (lb *lineBuffer) runeCount(l *renderedLine) int {
	if l.runes < 0 {
		l.runes = utf8.RuneCount(lb.text(*l))
	}
	return l.runes
}

// maxLineBytes bounds the bytes of a line rendered before it is cut: a line
// of MaxEntryRunes runes fits in it, so an entry longer than that is not
// indented to the end only to be cut.
const maxLineBytes = MaxEntryRunes * utf8.UTFMax

// render appends the line of e to lb and returns it.
func (lb *lineBuffer) render(e Entry) renderedLine {
	prefix := entryPrefix(e)
	// Redact before cutting: a cut through a key could leave a prefix too
	// short to be recognised.
	content, classes := redact.String(strings.TrimSpace(StripMemory(e.Content)))
	start := len(lb.buf)
	var whole bool
	lb.buf, whole = appendIndented(lb.buf, prefix, content, start+maxLineBytes)
	end := start + runePrefixLen(lb.buf[start:], MaxEntryRunes)
	cut := !whole || end < len(lb.buf)
	lb.buf = lb.buf[:end]
	l := renderedLine{start: start, end: end, settled: end, runes: -1}
	if cut {
		l.runes = MaxEntryRunes
	}
	switch {
	case !redact.LineLocal(prefix) || !redact.LineLocal(content):
		// Checked apart: "-----BEGIN" holds no space, line feed or
		// carriage return, so neither joining nor indenting makes one.
		l.keyBlock = true
	case len(classes) > 0 || redact.MayStartSecret(prefix):
		l.settled = start
	case cut:
		l.settled = start + bytes.LastIndexByte(lb.text(l), '\n') + 1
	}
	return l
}

// entryPrefix returns "role: ", or "tool(<name>): " for a tool entry.
func entryPrefix(e Entry) string {
	role := strings.TrimSpace(e.Role)
	switch role {
	case "":
		return "unknown: "
	case "tool":
		return "tool(" + oneLine(e.ToolName) + "): "
	// Constants spare most entries an allocation.
	case "user":
		return "user: "
	case "assistant":
		return "assistant: "
	case "system":
		return "system: "
	}
	return role + ": "
}

// oneLine returns the words of s joined by single spaces.
func oneLine(s string) string {
	if isOneLine(s) {
		return s // spares a tool name the usual case's allocations
	}
	return strings.Join(strings.Fields(s), " ")
}

// isOneLine reports whether s is already its words joined by single spaces:
// no white space but a space between two words.
func isOneLine(s string) bool {
	afterSpace := true // a leading space is not allowed
	for _, r := range s {
		space := unicode.IsSpace(r)
		if space && (afterSpace || r != ' ') {
			return false
		}
		afterSpace = space
	}
	return !afterSpace || s == ""
}

// appendIndented appends prefix to dst followed by content with each
// "\r\n" made "\n" and every line after the first indented by two spaces,
// but only while dst holds at most limit bytes; it reports whether all was
// appended.
func appendIndented(dst []byte, prefix, content string, limit int) ([]byte, bool) {
	dst, whole := appendWithin(dst, prefix, limit)
	for whole {
		first, rest, more := strings.Cut(content, "\n")
		if more {
			first = strings.TrimSuffix(first, "\r")
		}
		if dst, whole = appendWithin(dst, first, limit); !whole || !more {
			break
		}
		dst, whole = appendWithin(dst, "\n  ", limit)
		content = rest
	}
	return dst, whole
}

// appendWithin appends as much of s to dst as keeps dst within limit bytes
// and reports whether that was all of it.
func appendWithin(dst []byte, s string, limit int) ([]byte, bool) {
	room := max(limit-len(dst), 0)
	if len(s) > room {
		return append(dst, s[:room]...), false
	}
	return append(dst, s...), true
}

// runePrefixLen returns the length of the first n runes of b, as
// truncateRunes counts them.
func runePrefixLen(b []byte, n int) int {
	if len(b) <= n {
		return len(b) // at most n bytes, so at most n runes
	}
	i := asciiPrefixLen(b[:n]) // as many runes as bytes
	for count := i; count < n && i < len(b); count++ {
		if b[i] < utf8.RuneSelf {
			i++
			continue
		}
		_, size := utf8.DecodeRune(b[i:])
		i += size
	}
	return i
}

// asciiPrefixLen returns how many bytes b starts with below utf8.RuneSelf,
// testing eight at a time.
func asciiPrefixLen(b []byte) int {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		if binary.LittleEndian.Uint64(b[i:])&0x8080808080808080 != 0 {
			break
		}
	}
	for i < len(b) && b[i] < utf8.RuneSelf {
		i++
	}
	return i
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

// renderNewest renders entries from the newest back while their lines,
// joined with newlines, fit in limit runes, and returns those lines newest
// first. Entries older than the first that does not fit are not rendered:
// they would be dropped. Runes are counted only once the lines' bytes, of
// which there are at least as many, no longer fit.
func (lb *lineBuffer) renderNewest(entries []Entry, limit int) []renderedLine {
	kept := make([]renderedLine, 0, min(len(entries), 64))
	total, counted := 0, false
	for i := len(entries) - 1; i >= 0; i-- {
		l := lb.render(entries[i])
		joint := min(len(kept), 1) // the newline joining it to the next line
		if !counted && total+(l.end-l.start)+joint > limit {
			total, counted = lb.joinedRunes(kept), true
		}
		n := l.end - l.start
		if counted {
			n = lb.runeCount(&l)
		}
		if total+n+joint > limit {
			break
		}
		total += n + joint
		kept = append(kept, l)
	}
	return kept
}

// joinedRunes returns the runes of lines joined with newlines.
func (lb *lineBuffer) joinedRunes(lines []renderedLine) int {
	n := max(len(lines)-1, 0)
	for i := range lines {
		n += lb.runeCount(&lines[i])
	}
	return n
}

// joinRedacted joins lines, given newest first, oldest to newest with
// newlines, redacting again what each left unsettled, or the whole when one
// may hold a key block.
func (lb *lineBuffer) joinRedacted(newestFirst []renderedLine) string {
	size := len(newestFirst) - 1
	for _, l := range newestFirst {
		if l.keyBlock {
			out, _ := redact.String(lb.join(newestFirst))
			return out
		}
		size += l.end - l.start
	}
	var b strings.Builder
	b.Grow(size)
	for i := len(newestFirst) - 1; i >= 0; i-- {
		l := newestFirst[i]
		b.Write(lb.buf[l.start:l.settled])
		if l.settled < l.end {
			rest, _ := redact.String(string(lb.buf[l.settled:l.end]))
			b.WriteString(rest)
		}
		if i > 0 {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// join joins lines, given newest first, oldest to newest with newlines.
func (lb *lineBuffer) join(newestFirst []renderedLine) string {
	var b strings.Builder
	for i := len(newestFirst) - 1; i >= 0; i-- {
		b.Write(lb.text(newestFirst[i]))
		if i > 0 {
			b.WriteByte('\n')
		}
	}
	return b.String()
}
