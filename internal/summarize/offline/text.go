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
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
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

// trimSpan removes surrounding white space; ok is false for an empty span.
func trimSpan(s string, sp span) (span, bool) {
	t := s[sp.start:sp.end]
	left := strings.TrimLeftFunc(t, unicode.IsSpace)
	sp.start += len(t) - len(left)
	sp.end = sp.start + len(strings.TrimRightFunc(left, unicode.IsSpace))
	return sp, sp.end > sp.start
}

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
	s, _ = redact.String(s)
	return clip(s, n)
}

// collapseSpace collapses each run of white space to one space and trims
// both ends.
func collapseSpace(s string) string {
	return strings.Join(strings.Fields(s), " ")
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

	rationaleMarkers = []string{" because ", " since ", " so that ", ", so ", "因为"}

	completionPhrases = []string{"done:", "done.", "all tests pass", "completed", "finished", "is fixed", "fixed the", "implemented", "完成", "已修复"}

	supersedePrefixes = []string{
		"actually", "scratch that", "never mind", "nevermind", "instead", "forget that", "forget it",
		"change of plan", "wait,", "no,", "不用了", "算了", "改成", "改为", "换成", "其实",
	}
)

// lowered pairs a text with its lower-case form.
type lowered struct {
	text, lower string
}

func lowerOf(text string) lowered {
	return lowered{text: text, lower: strings.ToLower(text)}
}

// span returns the sentence at sp and its lower-case form. When
// lower-casing kept the length of the whole text, the sentence's form is
// read from the text's.
func (l lowered) span(sp span) (string, string) {
	s := l.text[sp.start:sp.end]
	if len(l.lower) == len(l.text) {
		return s, l.lower[sp.start:sp.end]
	}
	return s, strings.ToLower(s)
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
