package facts

import (
	"context"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Bounds of the heuristic extractor, in characters (runes).
const (
	minLineRunes  = 20
	maxLineRunes  = 200
	maxTitleRunes = 80
)

// Heuristic is the default extractor: offline and deterministic. It reads
// only user entries, line by line, and keeps lines that state a standing rule
// or preference. The zero value is ready to use and
// safe for concurrent use.
type Heuristic struct{}

var _ Extractor = Heuristic{}

// Name returns "heuristic".
func (Heuristic) Name() string { return "heuristic" }

// Extract returns one candidate per qualifying line of the job's user
// entries, in transcript order. It never fails.
func (Heuristic) Extract(ctx context.Context, job Job) ([]Candidate, error) {
	var out []Candidate
	for _, e := range jobEntries(job) {
		if e.Role != "user" {
			continue
		}
		for line := range strings.SplitSeq(e.Content, "\n") {
			line = strings.TrimSpace(line)
			if !durableLine(line) {
				continue
			}
			out = append(out, Candidate{Title: shortTitle(line, maxTitleRunes), Body: line, Topics: []string{}})
		}
	}
	return out, ctx.Err()
}

// Line rules of the heuristic extractor.
var (
	startWords   = []string{"remember", "记住", "注意", "约定", "以后"}
	latinWords   = map[string]bool{"must": true, "always": true, "never": true}
	chineseWords = []string{"必须", "一定"}
)

// durableLine reports whether line, already trimmed, is kept: 20..200 runes,
// and it starts with a marker word (case-insensitively for Latin script) or
// holds "must", "always", "never" as whole words, or 必须 or 一定.
//
// One rule goes beyond the keywords: a line holding a question mark is a
// question ("Must we rerun it?", "你一定知道吧？", "Remember when ...?"),
// not a standing fact, and is skipped. On the labelled conversations under
// testdata/quality it removes three of six false positives and no true one.
func durableLine(line string) bool {
	n := utf8.RuneCountInString(line)
	if n < minLineRunes || n > maxLineRunes || strings.ContainsAny(line, "?？") {
		return false
	}
	lower := strings.ToLower(line)
	for _, w := range startWords {
		if strings.HasPrefix(lower, w) {
			return true
		}
	}
	for _, w := range chineseWords {
		if strings.Contains(line, w) {
			return true
		}
	}
	for _, w := range latinTokens(lower) {
		if latinWords[w] {
			return true
		}
	}
	return false
}

// latinTokens splits s into runs of ASCII letters, so "always," and
// "(never)" count as words and "nevertheless" does not.
func latinTokens(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	})
}

// shortTitle shortens s to at most max runes, at the last word boundary when
// there is one in the second half of the limit, else at exactly max runes
// (Chinese text has no spaces).
func shortTitle(s string, max int) string {
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	cut := truncateRunes(s, max)
	if i := strings.LastIndexFunc(cut, unicode.IsSpace); i >= 0 && utf8.RuneCountInString(cut[:i]) >= max/2 {
		cut = cut[:i]
	}
	return strings.TrimRightFunc(cut, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsPunct(r) })
}

// rolePrefix matches the first line of a rendered entry (RenderTranscript):
// "user: ...", "assistant: ...", "tool(name): ...". A producer that renders
// tools as "tool name: ..." is understood too.
var rolePrefix = regexp.MustCompile(`^(user|assistant|system|developer|unknown|tool(?:\([^)\n]{0,200}\)| [^:\n]{0,200})?): ?`)

// jobEntries returns the entries an extractor reads: the job's Entries when
// the producer sent them, else the entries parsed back from the transcript.
func jobEntries(job Job) []Entry {
	if len(job.Entries) > 0 {
		return job.Entries
	}
	return ParseTranscript(job.Transcript)
}

// ParseTranscript splits a rendered transcript back into entries. A line that
// starts at column 0 with a role prefix begins an entry; every other line
// continues the previous one (with RenderTranscript's two-space indent
// removed). Lines before the first entry are dropped: the transcript was cut
// and their role is unknown.
func ParseTranscript(t string) []Entry {
	var out []Entry
	for line := range strings.SplitSeq(t, "\n") {
		if m := rolePrefix.FindStringSubmatch(line); m != nil {
			role, tool := m[1], ""
			if strings.HasPrefix(role, "tool") {
				role, tool = "tool", strings.Trim(strings.TrimPrefix(m[1], "tool"), "() ")
			}
			out = append(out, Entry{Role: role, ToolName: tool, Content: line[len(m[0]):]})
			continue
		}
		if len(out) == 0 {
			continue
		}
		last := &out[len(out)-1]
		last.Content += "\n" + strings.TrimPrefix(line, "  ")
	}
	return out
}
