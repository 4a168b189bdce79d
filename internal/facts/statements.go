package facts

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Bounds of one statement the heuristic extractor weighs, in characters
// (runes). Shorter text is an acknowledgement or a fragment; longer text is
// a paragraph whose point no single rule can tell.
const (
	minLatinStatementRunes = 12
	minCJKStatementRunes   = 6
	maxStatementRunes      = 400
)

// statement is one sentence of an entry, as the heuristic weighs it.
type statement struct {
	raw   string // the sentence as written, leading fillers included
	text  string // trimmed, bullets and leading fillers removed
	lower string // text, lower-cased
	cjk   bool   // text holds Han characters
	// found are the matchers whose prefilter literals the statement holds.
	found matcherSet
	// words are lower's runs of ASCII letters and apostrophes.
	words []string
}

// hasWord reports whether the statement holds one of words, or one of
// phrases as a substring.
func (s *statement) hasWord(words map[string]bool, phrases []string) bool {
	for _, w := range s.words {
		if words[w] {
			return true
		}
	}
	for _, p := range phrases {
		if strings.Contains(s.lower, p) {
			return true
		}
	}
	return false
}

// index finds the statement's prefilter literals and words.
func (s *statement) index() {
	s.found = literalScan(s.lower)
	s.words = strings.FieldsFunc(s.lower, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r == '\'') })
}

// matchLower and matchText run a rule's matcher on the lower-cased or the
// written statement.
func (s *statement) matchLower(m matcher) bool { return m.matchIn(s.lower, s.found) }
func (s *statement) matchText(m matcher) bool  { return m.matchIn(s.text, s.found) }

// statements splits an entry's content into the sentences a person wrote,
// leaving out what is data rather than prose: fenced code blocks, quoted
// lines ("> ..."), shell prompts, log and stack-trace lines, and lines that
// are mostly symbols. Bullets and leading interjections ("ok,", "Thanks!",
// "好的，") are removed, so "ok, note that X" is weighed as "note that X".
func statements(content string) []statement {
	var out []statement
	inFence := false
	for line := range strings.SplitSeq(strings.ReplaceAll(content, "\r\n", "\n"), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "```") || strings.HasPrefix(line, "~~~") {
			inFence = !inFence
			continue
		}
		if inFence || line == "" || dataLine(line) {
			continue
		}
		if strings.ContainsRune("-*+•·#[0123456789", []rune(line)[0]) {
			line = strings.TrimSpace(bullet.ReplaceAllString(line, ""))
		}
		for _, raw := range sentences(line) {
			s := stripFillers(raw)
			n := utf8.RuneCountInString(s)
			cjk := hasHan(s)
			if n > maxStatementRunes || n < minLatinStatementRunes && !(cjk && n >= minCJKStatementRunes) {
				continue
			}
			st := statement{raw: raw, text: s, lower: strings.ToLower(s), cjk: cjk}
			st.index()
			out = append(out, st)
		}
	}
	return out
}

var (
	// bullet is a list marker or heading marker at the start of a line.
	bullet = regexp.MustCompile(`^(?:[-*+•·]\s+|\d{1,3}[.)]\s+|#{1,6}\s+|\[[ xX]\]\s+)+`)
	// dataPrefix starts a line that quotes a tool, a log or code, not prose.
	dataPrefix = regexp.MustCompile(`^(?:>|\$ |# |>>> |at [\w.$<>]+\(|Traceback |File "|npm (?:ERR|WARN)|\d{4}-\d{2}-\d{2}[ T]\d|\[\d|\d{2}:\d{2}:\d{2}|(?:ERROR|WARN|INFO|DEBUG|FATAL)\b|[{}\[\]]|</?[a-zA-Z][\w-]*[ >/]|(?:func|def|class|import|from|const|let|var|return|package|SELECT|INSERT|UPDATE|DELETE)\s)`)
)

// dataLine reports whether a line is data: it starts like a log, a prompt,
// a quote or code, or fewer than a third of its characters are letters.
func dataLine(line string) bool {
	if dataPrefix.MatchString(line) {
		return true
	}
	letters, total := 0, 0
	for _, r := range line {
		if unicode.IsSpace(r) {
			continue
		}
		total++
		if unicode.IsLetter(r) {
			letters++
		}
	}
	return letters*3 < total
}

// clauses splits a statement into its clauses, for a run-on sentence that
// states a fact beside a request or a greeting ("db is pg15 btw, warehouse
// host is analytics-ro.db.internal and use the mart schema"): at commas,
// semicolons and dashes, before "oh and", "also", "plus", "btw", and at a
// space between Chinese characters. A statement of one clause has none.
func clauses(st statement) []statement {
	if !mayHaveClauses(st) {
		return nil
	}
	parts := clauseBreaks.Split(st.text, -1)
	var out []statement
	for _, p := range parts {
		for _, q := range splitHanSpace(p) {
			q = stripFillers(strings.TrimSpace(q))
			n := utf8.RuneCountInString(q)
			cjk := hasHan(q)
			if n < minLatinStatementRunes && !(cjk && n >= minCJKStatementRunes) {
				continue
			}
			c := statement{raw: q, text: q, lower: strings.ToLower(q), cjk: cjk}
			c.index()
			out = append(out, c)
		}
	}
	if len(out) < 2 {
		return nil
	}
	return out
}

// mayHaveClauses reports whether st holds a break clauseBreaks or
// splitHanSpace could split at: punctuation, one of clauseBreaks' words,
// or a space in Chinese text. Most statements hold none, and the
// expression costs more than the check; BenchmarkHarvestVsCompaction
// keeps this check and StripMemory's (docs/performance.md).
func mayHaveClauses(st statement) bool {
	if strings.ContainsAny(st.text, "，；;,—–-") || st.cjk && strings.IndexFunc(st.text, unicode.IsSpace) >= 0 {
		return true
	}
	for _, w := range st.words {
		switch w {
		case "oh", "also", "plus", "btw", "p", "ps":
			return true
		}
	}
	return false
}

var clauseBreaks = regexp.MustCompile(`[，；;]\s*|,\s+|\s+[—–-]\s+|\s+(?:oh and|and also|also|plus|btw|p\.s\.|ps)\s+`)

// splitHanSpace splits s at spaces between two Chinese characters, which
// written Chinese uses between clauses.
func splitHanSpace(s string) []string {
	var out []string
	start := 0
	runes := []rune(s)
	for i := 1; i+1 < len(runes); i++ {
		if unicode.IsSpace(runes[i]) && unicode.Is(unicode.Han, runes[i-1]) && unicode.Is(unicode.Han, runes[i+1]) {
			out = append(out, string(runes[start:i]))
			start = i + 1
		}
	}
	return append(out, string(runes[start:]))
}

// sentences splits a line after sentence-ending punctuation: Chinese
// 。！？ always, and Latin . ! ? when a space follows, so that "v1.2",
// "config.yaml" and "e.g. this" stay whole.
func sentences(line string) []string {
	var out []string
	start := 0
	runes := []rune(line)
	for i, r := range runes {
		end := false
		switch r {
		case '。', '！', '？':
			end = true
		case '!', '?':
			end = i+1 == len(runes) || unicode.IsSpace(runes[i+1])
		case '.':
			end = (i+1 == len(runes) || unicode.IsSpace(runes[i+1])) && !abbreviation(runes[start:i])
		}
		if end {
			if s := strings.TrimSpace(string(runes[start : i+1])); s != "" {
				out = append(out, s)
			}
			start = i + 1
		}
	}
	if s := strings.TrimSpace(string(runes[start:])); s != "" {
		out = append(out, s)
	}
	return out
}

// abbreviation reports whether text (a sentence so far, before a period)
// ends with an abbreviation that a period does not end a sentence after.
func abbreviation(text []rune) bool {
	i := len(text)
	for i > 0 && (unicode.IsLetter(text[i-1]) || text[i-1] == '.') {
		i--
	}
	switch strings.ToLower(string(text[i:])) {
	case "e.g", "i.e", "etc", "vs", "cf", "approx", "dr", "mr", "mrs", "ms", "no", "fig", "ver", "incl", "p.s", "n.b":
		return true
	}
	return false
}

// leadingFiller matches interjections a statement may start with.
var leadingFiller = regexp.MustCompile(`(?i)^(?:(?:(?:ok(?:ay)?|oh|ah|also|and|but|so|btw|by the way|one more thing|thanks|thank you|great|cool|perfect|sure|yes|yeah|yep|right|alright|hi|hey|hello|sorry|oops|well|anyway|actually|lol|hmm+)\b|好的|嗯|哦|对了|另外|还有|顺便说一下|顺便|谢谢|你好)[\s,，!！:：.。、—-]*)+`)

// fillerStarts are the first bytes a leading interjection can have.
const fillerStarts = "oOaAbBsStTgGcCpPyYrRhHwWlL嗯哦对另还顺谢你好"

// stripFillers removes leading interjections and trailing whitespace.
func stripFillers(s string) string {
	if s == "" || !strings.ContainsRune(fillerStarts, []rune(s)[0]) {
		return strings.TrimSpace(s)
	}
	return strings.TrimSpace(leadingFiller.ReplaceAllString(s, ""))
}

// hasHan reports whether s holds a Han character.
func hasHan(s string) bool {
	for _, r := range s {
		if unicode.Is(unicode.Han, r) {
			return true
		}
	}
	return false
}
