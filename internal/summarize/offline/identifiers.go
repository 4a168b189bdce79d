package offline

import (
	"math/bits"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/cairnhq/cairn/internal/redact"
)

// kind classifies an identifier; the order is the order of critical_context.
type kind int

const (
	kindFile kind = iota
	kindCommand
	kindURL
	kindID
	kindVersion
	kindCount
)

// kindHeaders label the critical_context entries; a carried entry whose text
// starts with one of them is parsed back into identifiers and merged.
var kindHeaders = [kindCount]string{"Files:", "Commands:", "URLs:", "IDs:", "Versions:"}

// commandWords start a backticked span that is a shell command.
var commandWords = map[string]bool{
	"go": true, "git": true, "make": true, "npm": true, "npx": true, "yarn": true, "pnpm": true,
	"pip": true, "python": true, "python3": true, "pytest": true, "cargo": true, "rustc": true,
	"docker": true, "kubectl": true, "helm": true, "terraform": true, "curl": true, "bash": true,
	"sh": true, "ls": true, "cat": true, "grep": true, "rg": true, "sed": true, "awk": true,
	"find": true, "nats": true, "gofmt": true, "golangci-lint": true, "staticcheck": true,
	"node": true, "deno": true, "bun": true, "mvn": true, "gradle": true, "psql": true, "redis-cli": true,
}

// fileExtensions mark a slash-less token as a file name.
var fileExtensions = map[string]bool{
	"go": true, "mod": true, "sum": true, "py": true, "js": true, "ts": true, "tsx": true, "jsx": true,
	"rs": true, "c": true, "h": true, "cc": true, "cpp": true, "java": true, "kt": true, "rb": true,
	"sh": true, "md": true, "json": true, "yaml": true, "yml": true, "toml": true, "sql": true,
	"proto": true, "txt": true, "html": true, "css": true, "lock": true, "cfg": true, "ini": true,
	"conf": true, "env": true, "xml": true, "csv": true, "tf": true, "exs": true, "ex": true,
}

// maxExtension is the length of the longest of fileExtensions: a longer
// ext, such as the method of "ctx.Err", needs no lookup.
const maxExtension = 5

// scanIdentifiers calls emit for every identifier in text: backticked
// commands, "$ " command lines, URLs, paths, ids and versions.
func scanIdentifiers(text string, emit func(kind, string)) {
	scanCommands(text, emit)
	// A token without any of / . # - or a digit is a plain word, and most
	// tokens are: only the token around each marker is looked at. No marker
	// is a delimiter, so it is the same token a scan from its start finds.
	for i := 0; i < len(text); {
		i = nextMarker(text, i)
		if i == len(text) {
			break
		}
		start := i
		for start > 0 && !delimiters[text[start-1]] {
			start--
		}
		for i < len(text) && !delimiters[text[i]] {
			i++
		}
		if k, id, ok := classify(text[start:i]); ok {
			emit(k, id)
		}
	}
}

// delimiters end a token; markers are the bytes some identifier must hold.
var delimiters, markers [256]bool

func init() {
	for _, c := range []byte(" \t\n\r\"'`()<>[]{},|*=") {
		delimiters[c] = true
	}
	for _, c := range []byte("/.#-0123456789") {
		markers[c] = true
	}
}

// nextMarker returns the position of the first marker of s at or after i,
// or len(s). It tests eight bytes at a time: markers are rare in prose.
func nextMarker(s string, i int) int {
	for ; i+8 <= len(s); i += 8 {
		if m := markers8(load64(s[i:])); m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for i < len(s) && !markers[s[i]] {
		i++
	}
	return i
}

// markers8 returns the high bit of each byte of x that is a marker, except
// that bits above the first may be wrong. The markers are '#' and the range
// '-' to '9' (- . / and the digits).
func markers8(x uint64) uint64 {
	const (
		lo       = 0x0101010101010101
		high     = 0x8080808080808080
		fromDash = (0x80 - '-') * lo     // a byte's high bit is set in y+fromDash from '-' up
		pastNine = (0x80 - '9' - 1) * lo // and in y+pastNine past '9'
	)
	y := x &^ high // the sums below then carry into no other byte
	inRange := (y + fromDash) &^ (y + pastNine) &^ x
	// A zero byte of t is a '#' of x; subtracting borrows only upwards, so
	// the lowest byte flagged is one.
	t := x ^ '#'*lo
	hash := (t - lo) &^ t
	return (inRange | hash) & high
}

// load64 reads the first eight bytes of s, little-endian: the compiler
// makes it one load.
func load64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// scanCommands finds `command` spans and lines that start with "$ ".
func scanCommands(text string, emit func(kind, string)) {
	for rest := text; ; {
		i := strings.IndexByte(rest, '`')
		if i < 0 {
			break
		}
		rest = rest[i+1:]
		j := strings.IndexByte(rest, '`')
		if j < 0 {
			break
		}
		if cmd := rest[:j]; looksLikeCommand(cmd) {
			emit(kindCommand, cmd)
		}
		rest = rest[j+1:]
	}
	if !strings.Contains(text, "$ ") {
		return
	}
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		if cmd, ok := strings.CutPrefix(line, "$ "); ok && looksLikeCommand(cmd) {
			emit(kindCommand, cmd)
		}
	}
}

func looksLikeCommand(s string) bool {
	if s == "" || len(s) > 200 || strings.ContainsAny(s, "\n\r") {
		return false
	}
	word, _, _ := strings.Cut(s, " ")
	return commandWords[word] || strings.HasPrefix(word, "./") && len(word) > 2
}

// classify decides whether one delimited token is an identifier, and returns
// it without surrounding punctuation.
func classify(tok string) (kind, string, bool) {
	if len(tok) < 2 || len(tok) > 300 {
		return 0, "", false
	}
	// A URL holds "://"; most tokens have no colon to look for it after.
	if strings.IndexByte(tok, ':') >= 0 {
		if i := strings.Index(tok, "http"); i >= 0 && (strings.HasPrefix(tok[i:], "https://") || strings.HasPrefix(tok[i:], "http://")) {
			u := trimRightPunct(tok[i:])
			return kindURL, u, len(u) > len("https://x.y")
		}
	}
	tok = trimLeftPunct(tok)
	if !strings.HasSuffix(tok, "/...") {
		tok = trimRightPunct(tok)
	}
	// Every kind below needs a marker; the one a token had may have been
	// the full stop of a sentence, trimmed now.
	if !hasMarker(tok) {
		return 0, "", false
	}
	switch {
	case len(tok) < 2:
		return 0, "", false
	case tok[0] == '#' && allDigits(tok[1:]) && len(tok) >= 3:
		return kindID, tok, true
	case isUUID(tok) || isCommitHash(tok) || isTicket(tok):
		return kindID, tok, true
	case isVersion(tok):
		return kindVersion, tok, true
	}
	if p, ok := path(tok); ok {
		return kindFile, p, true
	}
	return 0, "", false
}

func hasMarker(s string) bool {
	for i := 0; i < len(s); i++ {
		if markers[s[i]] {
			return true
		}
	}
	return false
}

// punct is the punctuation trimmed around a token: .,;:!? (the dot only
// at its end).
var punct = [256]bool{'.': true, ',': true, ';': true, ':': true, '!': true, '?': true}

// trimRightPunct is strings.TrimRight(s, ".,;:!?") without building the
// cutset's table on every call.
func trimRightPunct(s string) string {
	for len(s) > 0 && punct[s[len(s)-1]] {
		s = s[:len(s)-1]
	}
	return s
}

// trimLeftPunct is strings.TrimLeft(s, ",;:!?").
func trimLeftPunct(s string) string {
	for len(s) > 0 && s[0] != '.' && punct[s[0]] {
		s = s[1:]
	}
	return s
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// lineSuffix reports whether s is digits and colons with a digit, as after
// "file.go:" in "file.go:12:5": what allDigits reports once the colons are
// removed.
func lineSuffix(s string) bool {
	digit := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			digit = true
		case c != ':':
			return false
		}
	}
	return digit
}

func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if c != '-' {
				return false
			}
		} else if !isHex(c) {
			return false
		}
	}
	return true
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' }

// isCommitHash accepts 7..40 lowercase hex digits mixing letters and digits,
// so words and plain numbers are not taken for hashes.
func isCommitHash(s string) bool {
	if len(s) < 7 || len(s) > 40 {
		return false
	}
	letters, digits := 0, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			digits++
		case c >= 'a' && c <= 'f':
			letters++
		default:
			return false
		}
	}
	return letters > 0 && digits > 0
}

// isTicket accepts JIRA-123 and CVE-2024-1234 shapes.
func isTicket(s string) bool {
	if s == "" || s[0] < 'A' || s[0] > 'Z' {
		return false // the head starts with a capital; most tokens do not
	}
	head, rest, ok := strings.Cut(s, "-")
	if !ok || len(head) < 2 || len(head) > 10 {
		return false
	}
	for i := 0; i < len(head); i++ {
		if c := head[i]; (c < 'A' || c > 'Z') && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	for part := range strings.SplitSeq(rest, "-") {
		if !allDigits(part) {
			return false
		}
	}
	return true
}

// isVersion accepts v1.2, v1.2.3-rc.1, go1.26, go1.26.8 and 1.2.3.
func isVersion(s string) bool {
	core, prefixed := s, true
	switch {
	case strings.HasPrefix(s, "go") && len(s) > 2 && s[2] >= '0' && s[2] <= '9':
		core = s[2:]
	case s[0] == 'v' && len(s) > 1:
		core = s[1:]
	default:
		prefixed = false
	}
	core, _, _ = strings.Cut(core, "-")
	parts, digits := 1, 0
	for i := 0; i < len(core); i++ {
		switch c := core[i]; {
		case c == '.':
			if digits == 0 {
				return false
			}
			parts, digits = parts+1, 0
		case c >= '0' && c <= '9':
			digits++
		default:
			return false
		}
	}
	// A bare number needs three parts: "0.5" is a number, "1.2.3" a version.
	return digits > 0 && parts >= 2 && parts <= 4 && (prefixed || parts >= 3)
}

// path accepts file paths and package paths: tokens of path characters that
// have a known file extension, at least two slashes, or an explicit ./ ../ /
// ~/ start. A trailing :line[:col] is dropped.
func path(tok string) (string, bool) {
	if i := strings.IndexByte(tok, ':'); i > 0 && lineSuffix(tok[i+1:]) {
		tok = tok[:i]
	}
	// A path has a slash or, for its extension, a dot; most tokens have
	// neither.
	if len(tok) < 3 || strings.IndexByte(tok, '/') < 0 && strings.IndexByte(tok, '.') < 0 ||
		strings.Contains(tok, "//") || tok[0] == '-' {
		return "", false
	}
	letter := false
	for i := 0; i < len(tok); i++ {
		c := tok[i]
		switch {
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			letter = true
		case c >= '0' && c <= '9' || c == '/' || c == '.' || c == '_' || c == '-' || c == '~' || c == '@' || c == '+':
		default:
			return "", false
		}
	}
	if !letter {
		return "", false
	}
	base := tok[strings.LastIndexByte(tok, '/')+1:]
	ext := ""
	if dot := strings.LastIndexByte(base, '.'); dot > 0 {
		ext = base[dot+1:]
	}
	slashes := strings.Count(tok, "/")
	switch {
	case len(ext) <= maxExtension && fileExtensions[ext]:
		return tok, true
	case slashes >= 2 && !strings.HasSuffix(tok, "..."):
		return tok, true
	case slashes >= 1 && (strings.HasPrefix(tok, "./") || strings.HasPrefix(tok, "../") || strings.HasPrefix(tok, "/") || strings.HasPrefix(tok, "~/")):
		return tok, !strings.HasSuffix(tok, "...")
	}
	return "", false
}

// ident is one tracked identifier: where it was last seen and when.
type ident struct {
	kind    kind
	text    string
	last    int    // tracker clock of the last sighting; carried ones are negative
	eventID string // newest citable event that mentions it
	secret  bool   // holds a secret: never reported
}

// tracker keeps the most recently seen identifiers, at most max of them.
type tracker struct {
	max   int
	clock int
	byKey map[identKey]*ident
}

type identKey struct {
	kind kind
	text string
}

func newTracker(max int) *tracker {
	return &tracker{max: max, byKey: map[identKey]*ident{}}
}

func (t *tracker) see(k kind, text, eventID string) {
	if !utf8.ValidString(text) {
		return
	}
	key := identKey{k, text}
	id := t.byKey[key]
	if id == nil {
		id = &ident{kind: k, text: text, secret: redact.Contains(text)}
		t.byKey[key] = id
	}
	t.clock++
	id.last, id.eventID = t.clock, eventID
	if len(t.byKey) > 2*t.max {
		t.evict(t.max)
	}
}

// carry adds an identifier from the previous semantic, older than anything
// seen in this chunk but in its original order.
func (t *tracker) carry(k kind, text, eventID string, order int) {
	key := identKey{k, text}
	if _, ok := t.byKey[key]; ok || !utf8.ValidString(text) {
		return
	}
	t.byKey[key] = &ident{kind: k, text: text, last: order - 1<<30, eventID: eventID, secret: redact.Contains(text)}
}

// evict keeps the keep most recently seen identifiers.
func (t *tracker) evict(keep int) {
	all := t.list()
	for _, id := range all[:max(len(all)-keep, 0)] {
		delete(t.byKey, identKey{id.kind, id.text})
	}
}

// list returns the reportable identifiers, least recently seen first.
func (t *tracker) list() []*ident {
	out := make([]*ident, 0, len(t.byKey))
	for _, id := range t.byKey {
		if !id.secret {
			out = append(out, id)
		}
	}
	slices.SortFunc(out, func(a, b *ident) int { return a.last - b.last })
	return out
}
