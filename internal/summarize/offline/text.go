package offline

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/cairnhq/cairn/internal/redact"
)

// span is a byte range [start, end) of a text.
type span struct{ start, end int }

// sentences appends to dst the trimmed sentence spans of s. A sentence ends
// at . ! ? followed by white space or the end, at the Chinese full stops
// 。！？；, and at every line break, so "./..." and "v1.2" do not split.
func sentences(dst []span, s string) []span {
	start := 0
	emit := func(end int) {
		if sp, ok := trimSpan(s, span{start, end}); ok {
			dst = append(dst, sp)
		}
	}
	// Only the lead bytes of a break are looked at: a continuation byte
	// never starts one, and decoding rune by rune visits every other byte,
	// so the breaks found are the same.
	leads := breakLeads{s: s}
	for i := leads.from(0); i < len(s); i = leads.from(i) {
		r, size := rune(s[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(s[i:])
		}
		next := i + size
		switch r {
		case '\n':
			emit(i)
			start = next
		case '。', '！', '？', '；':
			emit(next)
			start = next
		case '.', '!', '?':
			// "./..." is a Go package pattern, not the end of a sentence.
			if (next == len(s) || s[next] == ' ' || s[next] == '\t' || s[next] == '\n' || s[next] == '\r') && !strings.HasSuffix(s[:next], "/...") {
				emit(next)
				start = next
			}
		}
		i = next
	}
	emit(len(s))
	return dst
}

// breakLeadBytes are the bytes a sentence break starts with: \n . ! ? and
// the lead bytes of 。(E3 80 82) and ！？；(EF BC 81, 9F, 9B).
const breakLeadBytes = "\n.!?\xE3\xEF"

// breakLeads finds the break lead bytes of s in order. It keeps the next
// position of each byte and searches for it again only once passed: a
// search per byte value runs in vector instructions, where testing each
// byte of s against a table is a branch per byte, and prose has a break
// only every sentence.
type breakLeads struct {
	s  string
	at [len(breakLeadBytes)]int // next position of each byte; len(s) once none is left
	ok bool                     // at holds positions
}

// from returns the position of the first break lead byte of s at or after
// i, or len(s).
func (b *breakLeads) from(i int) int {
	if !b.ok {
		b.at = [len(breakLeadBytes)]int{-1, -1, -1, -1, -1, -1}
		b.ok = true
	}
	first := len(b.s)
	for k := range b.at {
		if b.at[k] < i {
			b.at[k] = len(b.s)
			if j := strings.IndexByte(b.s[i:], breakLeadBytes[k]); j >= 0 {
				b.at[k] = i + j
			}
		}
		first = min(first, b.at[k])
	}
	return first
}

// trimSpan removes surrounding white space; ok is false for an empty span.
func trimSpan(s string, sp span) (span, bool) {
	for sp.start < sp.end {
		c, size := s[sp.start], 1
		if c < utf8.RuneSelf {
			if !asciiSpace(c) {
				break
			}
		} else {
			var r rune
			r, size = utf8.DecodeRuneInString(s[sp.start:sp.end])
			if !unicode.IsSpace(r) {
				break
			}
		}
		sp.start += size
	}
	for sp.end > sp.start {
		c, size := s[sp.end-1], 1
		if c < utf8.RuneSelf {
			if !asciiSpace(c) {
				break
			}
		} else {
			var r rune
			r, size = utf8.DecodeLastRuneInString(s[sp.start:sp.end])
			if !unicode.IsSpace(r) {
				break
			}
		}
		sp.end -= size
	}
	return sp, sp.end > sp.start
}

// asciiSpace is unicode.IsSpace for an ASCII byte, without its call.
func asciiSpace(c byte) bool { return c == ' ' || '\t' <= c && c <= '\r' }

// clipSpan shortens sp to at most n bytes, ending on a rune boundary.
func clipSpan(s string, sp span, n int) span {
	if sp.end-sp.start <= n {
		return sp
	}
	end := sp.start + n
	for end > sp.start && !utf8.RuneStart(s[end]) {
		end--
	}
	sp.end = end
	sp, _ = trimSpan(s, sp)
	return sp
}

// clip returns s shortened to at most n bytes on a rune boundary, marking a
// cut with an ellipsis.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const ellipsis = "…"
	end := n - len(ellipsis)
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return strings.TrimRightFunc(s[:end], unicode.IsSpace) + ellipsis
}

// cleanText makes s a safe free text: valid UTF-8, white space collapsed,
// secrets masked, at most n bytes. It returns "" when nothing is left.
func cleanText(s string, n int) string {
	s = collapseSpace(strings.ToValidUTF8(s, "\uFFFD"))
	if s == "" {
		return ""
	}
	if redact.Contains(s) {
		s, _ = redact.String(s)
	}
	return clip(s, n)
}

// lowerASCII reports whether s is ASCII without capitals, which
// strings.ToLower returns as it is. It tests eight bytes at a time: most
// texts are such, and ToLower tests them one by one.
func lowerASCII(s string) bool {
	const (
		high  = 0x8080808080808080
		fromA = 0x3F3F3F3F3F3F3F3F // 0x80 - 'A' in each byte
		pastZ = 0x2525252525252525 // 0x80 - 'Z' - 1 in each byte
	)
	i := 0
	for ; i+8 <= len(s); i += 8 {
		x := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		// With every byte under 0x80 the sums carry into no other byte; a
		// byte's high bit is set in x+fromA from 'A' up and in x+pastZ past 'Z'.
		if x&high != 0 || (x+fromA)&^(x+pastZ)&high != 0 {
			return false
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c >= utf8.RuneSelf || 'A' <= c && c <= 'Z' {
			return false
		}
	}
	return true
}

// lowerHasPrefix is strings.HasPrefix(strings.ToLower(s), prefix) for an
// ASCII prefix, without lower-casing s: lower-casing maps rune by rune, and
// a rune matches an ASCII byte of prefix only if it lower-cases to it.
func lowerHasPrefix(s, prefix string) bool {
	i := 0
	for j := 0; j < len(prefix); j++ {
		if i >= len(s) {
			return false
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if unicode.ToLower(r) != rune(prefix[j]) {
			return false
		}
		i += size
	}
	return true
}

// collapseSpace is strings.Join(strings.Fields(s), " "), which returns s
// itself, without building the fields, when s is collapsed already: most
// sentences are.
func collapseSpace(s string) string {
	if collapsed(s) {
		return s
	}
	return strings.Join(strings.Fields(s), " ")
}

// collapsed reports whether s has no white space but single ASCII spaces
// between other runes.
func collapsed(s string) bool {
	space := true // a space at the start is not collapsed
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			isSpace := c == ' ' || c >= '\t' && c <= '\r'
			if isSpace && (c != ' ' || space) {
				return false
			}
			space = isSpace
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if unicode.IsSpace(r) {
			return false
		}
		space = false
		i += size
	}
	return !space || s == ""
}

// containsWord reports whether lower (already lower-cased) contains w with
// no letter directly before or after it.
func containsWord(lower, w string) bool {
	for from := 0; ; {
		i := strings.Index(lower[from:], w)
		if i < 0 {
			return false
		}
		i += from
		before, _ := utf8.DecodeLastRuneInString(lower[:i])
		after, _ := utf8.DecodeRuneInString(lower[i+len(w):])
		if !unicode.IsLetter(before) && !unicode.IsLetter(after) {
			return true
		}
		from = i + len(w)
	}
}

func containsAny(s string, words []string) bool {
	for _, w := range words {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

var (
	constraintWords   = []string{"must", "always", "never", "don't", "do not", "mustn't", "must not", "don’t"}
	constraintChinese = []string{"必须", "一定", "不要", "禁止", "不得", "务必"}

	decisionPhrases = []string{
		"i'll use", "i will use", "i'm going to use", "i am going to use", "we'll use", "we will use",
		"let's use", "decided", "i decide", "instead of", "i chose", "we chose", "i'll go with",
		"going with", "switching to", "opted for", "决定", "改用", "采用", "选用",
	}

	constraintChineseIndex = newWordIndex(constraintChinese)
	constraintWordIndex    = newWordIndex(constraintWords)
	decisionIndex          = newWordIndex(decisionPhrases)

	rationaleMarkers = []string{" because ", " since ", " so that ", ", so ", "因为"}

	completionPhrases = []string{"done:", "done.", "all tests pass", "completed", "finished", "is fixed", "fixed the", "implemented", "完成", "已修复"}

	supersedePrefixes = []string{
		"actually", "scratch that", "never mind", "nevermind", "instead", "forget that", "forget it",
		"change of plan", "wait,", "no,", "不用了", "算了", "改成", "改为", "换成", "其实",
	}
)

// lowered pairs a text with its lower-case form and the keywords found in
// them; the sentence spans of the text index both when lower-casing kept
// the length of the text.
type lowered struct {
	text, lower string
	aligned     bool
	// The keyword occurrences in the whole text, found in one pass each
	// rather than per sentence: constraint keywords, Chinese in text and
	// English in lower, and, in lower, decision phrases (found on demand).
	chinese, words, decisions        []hit
	constraintsFound, decisionsFound bool
	// hits holds all of them, in a buffer the caller may pass on to the
	// next text.
	hits []hit
}

func newLowered(text, lower string, buf []hit) lowered {
	return lowered{text: text, lower: lower, aligned: len(lower) == len(text), hits: buf[:0]}
}

// lowerArena lower-cases ASCII texts into one shared buffer rather than an
// allocation each: most events are ASCII with a few capitals, and their
// lower-case forms are only read while the event is. Strings it returned
// stay valid: the buffer is only ever appended to, and a new one is started
// when it is full.
type lowerArena struct {
	b strings.Builder
}

// arenaBytes is the size of each buffer of a lowerArena.
const arenaBytes = 2048

// lowerOf returns text with its lower-case form; keyword hits are stored in
// buf's array. It returns a value, which callers keep on their stack.
func (a *lowerArena) lowerOf(text string, buf []hit) lowered {
	switch {
	case lowerASCII(text):
		return newLowered(text, text, buf)
	case !isASCII(text):
		return newLowered(text, strings.ToLower(text), buf)
	}
	if a.b.Cap()-a.b.Len() < len(text) {
		a.b = strings.Builder{}
		a.b.Grow(max(arenaBytes, len(text)))
	}
	start, run := a.b.Len(), 0
	for i := 0; i < len(text); i++ {
		if c := text[i]; 'A' <= c && c <= 'Z' {
			a.b.WriteString(text[run:i])
			a.b.WriteByte(c + 'a' - 'A')
			run = i + 1
		}
	}
	a.b.WriteString(text[run:])
	return newLowered(text, a.b.String()[start:], buf)
}

// isASCII reports whether s is all ASCII, testing eight bytes at a time.
func isASCII(s string) bool {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		if !ascii8(s[i : i+8]) {
			return false
		}
	}
	for ; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// span returns the sentence at sp and its lower-case form.
func (l *lowered) span(sp span) (string, string) {
	s := l.text[sp.start:sp.end]
	if l.aligned {
		return s, l.lower[sp.start:sp.end]
	}
	return s, strings.ToLower(s)
}

// isConstraint is isConstraint of the sentence at sp. When lower-casing kept
// the length, span's lower-case form is lower[sp.start:sp.end], so the
// keywords wholly inside sp are exactly those it contains.
func (l *lowered) isConstraint(sp span) bool {
	if !l.aligned {
		return isConstraint(l.span(sp))
	}
	if !l.constraintsFound {
		start := len(l.hits)
		l.hits = constraintChineseIndex.find(l.hits, l.text)
		mid := len(l.hits)
		l.hits = constraintWordIndex.find(l.hits, l.lower)
		l.chinese, l.words = l.hits[start:mid:mid], l.hits[mid:]
		l.constraintsFound = true
	}
	return anyIn(l.chinese, sp) || anyWordIn(l.lower, l.words, sp)
}

// isDecision is isDecision of the sentence at sp, as isConstraint.
func (l *lowered) isDecision(sp span) bool {
	if !l.aligned {
		_, lower := l.span(sp)
		return isDecision(lower)
	}
	if !l.decisionsFound {
		start := len(l.hits)
		l.hits = decisionIndex.find(l.hits, l.lower)
		l.decisions = l.hits[start:]
		l.decisionsFound = true
	}
	return anyIn(l.decisions, sp)
}

// isConstraint reports whether a sentence (given with its lower-case form)
// states a rule to keep.
func isConstraint(sentence, lower string) bool {
	if containsAny(sentence, constraintChinese) {
		return true
	}
	for _, w := range constraintWords {
		if containsWord(lower, w) {
			return true
		}
	}
	return false
}

// isDecision reports whether a lower-cased sentence states a choice.
func isDecision(lower string) bool { return containsAny(lower, decisionPhrases) }

// splitDecision splits a sentence (given with its lower-case form) that
// states a choice into the choice and its rationale ("" when it gives none).
func splitDecision(sentence, lower string) (choice, rationale string) {
	for _, m := range rationaleMarkers {
		// ToLower keeps byte offsets for the ASCII markers and for CJK text.
		if i := strings.Index(lower, m); i > 0 && len(lower) == len(sentence) {
			choice = strings.TrimRight(sentence[:i], " ,")
			rationale = strings.TrimRight(strings.TrimSpace(sentence[i+len(m):]), ".。")
			if choice != "" && rationale != "" {
				return choice, rationale
			}
		}
	}
	return sentence, ""
}

// isCompletion reports whether a lower-cased sentence reports finished work.
func isCompletion(lower string) bool {
	return strings.HasPrefix(lower, "done") || containsAny(lower, completionPhrases)
}

// isSupersede reports whether a text, given lower-cased, takes back the
// request before it. Lower-casing maps white space to white space and
// nothing else to it, and no prefix ends in white space, so trimming the
// start of the lower-cased text is as good as lower-casing the trimmed one.
func isSupersede(lower string) bool {
	lower = strings.TrimLeftFunc(lower, unicode.IsSpace)
	for _, p := range supersedePrefixes {
		if strings.HasPrefix(lower, p) {
			return true
		}
	}
	return false
}

var failureMarkers = []string{"FAIL", "panic:", "error", "Error", "ERROR", "undefined", "cannot", "expected", "want", "Traceback", "Exception", "fatal", "denied", "not found", "失败", "错误"}

// failureLines picks up to three lines of a failed tool output that say what
// went wrong, or its first line when none does.
func failureLines(text string) string {
	var picked []string
	first := ""
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if first == "" {
			first = line
		}
		if line == "FAIL" || strings.HasPrefix(line, "=== RUN") || !containsAny(line, failureMarkers) {
			continue
		}
		picked = append(picked, clip(line, 160))
		if len(picked) == 3 {
			break
		}
	}
	if len(picked) == 0 {
		if first == "" {
			return "no output"
		}
		return clip(first, 160)
	}
	return strings.Join(picked, "; ")
}
