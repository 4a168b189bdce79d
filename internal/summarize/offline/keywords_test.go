package offline

import (
	"strings"
	"testing"

	"github.com/cairnhq/cairn/internal/lanegen"
)

// keywordTexts are lane texts plus texts built to trip the one-pass search:
// keywords at sentence edges, inside words, overlapping, upper-cased, next
// to runes whose lower-case form has another length.
func keywordTexts(t *testing.T) []string {
	texts := []string{
		"must", "Must.", "MUST not. Do NOT", "mustmust must", "xmust. mustx must!", "dusting mustn't",
		"İ must. K never. ẞ always", "Kİ must stay. ẞİ decided", "don’t, don't. do not",
		"必须。不要！禁止；务必", "我们决定采用。改用选用", "we'll use x because y. Going with z",
		"i decided\ni'll use", "instead of.instead of", "decideddecided", "\xffmust\xfe never",
	}
	for n := range 18 {
		// Chinese keywords at every offset after a run of ASCII.
		texts = append(texts, strings.Repeat("a", n)+"必须 x", strings.Repeat("b", n)+"不要", "我"+strings.Repeat(" ", n)+"禁止。")
	}
	for seed := range uint64(4) {
		for _, e := range laneViews(t, lanegen.Options{Events: 120, Seed: seed, ChineseEvery: 2}) {
			texts = append(texts, eventText(&e))
		}
	}
	var more []string
	for _, s := range texts {
		more = append(more, strings.ToUpper(s), strings.ReplaceAll(s, " ", "\u212a "))
	}
	return append(texts, more...)
}

// The one-pass keyword search answers as the per-sentence search does.
func TestKeywordSearchMatchesPerSentence(t *testing.T) {
	for _, text := range keywordTexts(t) {
		var a lowerArena
		l := a.lowerOf(text, nil)
		for _, sp := range sentences(nil, text) {
			s, lower := l.span(sp)
			if got, want := l.isConstraint(sp), isConstraint(s, lower); got != want {
				t.Errorf("isConstraint(%q) = %v, want %v", s, got, want)
			}
			if got, want := l.isDecision(sp), isDecision(lower); got != want {
				t.Errorf("isDecision(%q) = %v, want %v", s, got, want)
			}
		}
	}
}

// anyWordIn relies on no constraint word overlapping itself.
func TestConstraintWordsDoNotOverlapThemselves(t *testing.T) {
	for _, w := range constraintWords {
		for n := 1; n < len(w); n++ {
			if w[:n] == w[len(w)-n:] {
				t.Errorf("%q starts and ends with %q", w, w[:n])
			}
		}
	}
}

// Sentences found byte by byte are those found rune by rune.
func TestSentencesMatchRuneByRuneSplit(t *testing.T) {
	for _, text := range append(keywordTexts(t), "a.\xe3\x80. b\xef\xbc\x81c\xe3\x80\x82d", "x。\xff！y？z；") {
		got, want := sentences(nil, text), sentencesByRune(text)
		if len(got) != len(want) {
			t.Fatalf("%q: %v, want %v", text, got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%q: %v, want %v", text, got, want)
			}
		}
	}
}

// sentencesByRune is the plain rune-by-rune splitter sentences must match.
func sentencesByRune(s string) []span {
	var out []span
	start := 0
	emit := func(end int) {
		if sp, ok := trimSpan(s, span{start, end}); ok {
			out = append(out, sp)
		}
	}
	for i, r := range s {
		next := i + len(string(r))
		if r == '\uFFFD' && !strings.HasPrefix(s[i:], "\uFFFD") {
			next = i + 1
		}
		switch r {
		case '\n':
			emit(i)
			start = next
		case '。', '！', '？', '；':
			emit(next)
			start = next
		case '.', '!', '?':
			if (next == len(s) || strings.IndexByte(" \t\n\r", s[next]) >= 0) && !strings.HasSuffix(s[:next], "/...") {
				emit(next)
				start = next
			}
		}
	}
	emit(len(s))
	return out
}
