package facts

import (
	"context"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/cairnhq/cairn/internal/redact"
)

// maxTitleRunes bounds a heuristic fact's title.
const maxTitleRunes = 90

// Heuristic is the default extractor: offline and deterministic. It reads
// every entry of the cut, sentence by sentence, and keeps the statements
// that say a durable fact: conventions and preferences, decisions,
// constraints, environment facts, ownership and identity, and notes meant
// for later, in English and Chinese (rules.go). It skips questions,
// chatter, hedges, transient state and secrets, and it never reads tool
// results: a fetched page or a command's output is data, never a source
// of facts or instructions. An assistant entry counts only where it
// records a decision or restates the user's rule ("Noted: staging is
// read-only"). The zero value is ready to use and safe for concurrent use.
type Heuristic struct{}

var _ Extractor = Heuristic{}

// Name returns "heuristic".
func (Heuristic) Name() string { return "heuristic" }

// Extract returns one candidate per statement kept, in transcript order,
// reading every entry. It fails only when ctx ends.
func (Heuristic) Extract(ctx context.Context, job Job) (Extraction, error) {
	entries := jobEntries(job)
	var out []Candidate
	seen := map[string]bool{} // a statement said again is weighed once
	var told []contentSet     // the words of each fact a user stated
	for i, e := range entries {
		if i%64 == 0 && ctx.Err() != nil {
			return Extraction{}, ctx.Err()
		}
		for _, c := range entryFacts(e, seen) {
			words := contentWords(c.Body)
			if e.Role == "assistant" && restatesAny(words, told) {
				continue // "Noted: the repo uses pnpm." after "we use pnpm, not npm"
			}
			if e.Role == "user" {
				told = append(told, words)
			}
			out = append(out, c)
		}
	}
	n := len(entries)
	return Extraction{Candidates: out, Coverage: Coverage{EntriesCut: n, EntriesRead: n, Complete: true}}, nil
}

// entryFacts returns the facts one entry states that are not in seen, and
// adds every statement it weighs to seen.
func entryFacts(e Entry, seen map[string]bool) []Candidate {
	if e.Role != "user" && e.Role != "assistant" {
		return nil // tool results are data; system prompts are the agent's own
	}
	var out []Candidate
	assistant := e.Role == "assistant"
	if assistant && !mayRecord(e.Content) {
		return nil
	}
	for _, s := range statements(prose(e)) {
		key := e.Role + "\x00" + s.lower
		if seen[key] {
			continue
		}
		seen[key] = true
		v := weigh(s, assistant, false)
		if v.Kept {
			out = append(out, candidate(s, v, e.ID))
			continue
		}
		if assistant {
			continue // a clause alone has lost the opener that lets it count
		}
		for _, c := range clausesToTry(s, v) {
			if cv := weigh(c, assistant, false); cv.Kept {
				out = append(out, candidate(c, cv, e.ID))
			}
		}
	}
	return out
}

// prose is the text of a user or assistant entry as the rules read it:
// injected memory removed and secrets redacted, so no rule ever sees a
// secret. Tool entries are never read, so they are never redacted here.
func prose(e Entry) string {
	s, _ := redact.String(StripMemory(e.Content))
	return s
}

// contentSet is the content words of a statement in Latin script, each
// without a plural or third-person s.
type contentSet map[string]bool

// contentWords is the contentSet of text: its words of three letters or more
// but for a few function words. Text with Chinese characters has none: its
// words are not separated by spaces.
func contentWords(text string) contentSet {
	if hasHan(text) {
		return nil
	}
	words := contentSet{}
	for _, w := range strings.FieldsFunc(strings.ToLower(withoutLeadIn(text)), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		if len(w) < 3 || functionWord[w] {
			continue
		}
		if len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") {
			w = w[:len(w)-1]
		}
		words[w] = true
	}
	return words
}

var functionWord = map[string]bool{"the": true, "this": true, "that": true, "these": true, "those": true,
	"for": true, "and": true, "our": true, "are": true, "was": true, "with": true, "from": true, "its": true}

// restatesAny reports whether an assistant's statement of words says no
// more than one a user stated: two content words at least, all of them in
// the user's. An assistant repeating a rule in other words ("Noted: the
// repo uses pnpm.") records nothing new.
func restatesAny(words contentSet, told []contentSet) bool {
	if len(words) < 2 {
		return false
	}
	for _, t := range told {
		if subset(words, t) {
			return true
		}
	}
	return false
}

func subset(a, b contentSet) bool {
	for w := range a {
		if !b[w] {
			return false
		}
	}
	return true
}

// recordMatchers are the matchers one of whose literals an assistant entry
// must hold to record anything: a restating opener or a decision rule.
// ok is false when some such matcher has no literal prefilter.
var recordMatchers, recordMatchersOK = func() (set matcherSet, ok bool) {
	ms := []matcher{restating}
	for _, r := range rules {
		if r.kind == KindDecision {
			ms = append(ms, r.re)
		}
	}
	for _, m := range ms {
		if m.lits == nil {
			return set, false
		}
		set.add(m.id)
	}
	return set, true
}()

// mayRecord reports whether an assistant entry may record a decision or
// restate a rule: most of an agent's narration holds none of the words
// that would, and is not split into sentences at all.
func mayRecord(content string) bool {
	return !recordMatchersOK || literalScan(strings.ToLower(content)).intersects(recordMatchers)
}

// clausesToTry returns the clauses of a sentence left out as a whole that
// are worth weighing alone: a run-on sentence may join a fact to a request,
// a greeting or a question. A sentence left out for what holds for all of
// it (a transient scope such as "for now", a hedge, an injection) yields
// none, and a question's last clause, which the question mark belongs to,
// is not tried, nor a sentence ending in a tag question ("..., right?").
func clausesToTry(s statement, v Verdict) []statement {
	switch v.Skipped {
	case "transient", "hedge", "injection":
		return nil
	}
	cs := clauses(s)
	if v.Skipped == "question" && len(cs) > 0 {
		last := cs[len(cs)-1]
		if len(strings.Fields(last.text)) <= 3 && !last.cjk || utf8.RuneCountInString(last.text) <= 4 {
			return nil // a tag question: "..., right?"
		}
		cs = cs[:len(cs)-1]
	}
	return cs
}

// Verdict is how the heuristic weighs one statement, for `processor facts
// extract --explain`: the rule that matched and the score, or why it was
// left out.
type Verdict struct {
	Text  string  `json:"text"`
	Kept  bool    `json:"kept"`
	Kind  Kind    `json:"kind,omitempty"`
	Rule  string  `json:"rule,omitempty"`
	Score float64 `json:"score,omitempty"`
	// Skipped says why a statement was left out: question, chatter,
	// hedge, transient, task, secret, injection, assistant or below_score.
	Skipped string `json:"skipped,omitempty"`
	// Clause is set on a clause of the sentence before it, weighed alone
	// because the whole sentence was left out.
	Clause bool `json:"clause,omitempty"`
}

// Explain weighs every statement of one entry and says what became of
// each. Tool, system and developer entries yield no verdicts.
func Explain(e Entry) []Verdict {
	if e.Role != "user" && e.Role != "assistant" {
		return nil
	}
	var out []Verdict
	for _, s := range statements(prose(e)) {
		v := weigh(s, e.Role == "assistant", true)
		out = append(out, v)
		if !v.Kept && e.Role != "assistant" {
			for _, c := range clausesToTry(s, v) {
				cv := weigh(c, e.Role == "assistant", true)
				cv.Clause = true
				out = append(out, cv)
			}
		}
	}
	return out
}

// candidate is the fact a kept statement proposes.
func candidate(s statement, v Verdict, entryID string) Candidate {
	return Candidate{
		Title:   titleOf(s, v.Kind),
		Body:    s.text,
		Topics:  topicsOf(s.text),
		Kind:    v.Kind,
		Rule:    v.Rule,
		Score:   v.Score,
		EntryID: entryID,
	}
}

// restating starts an assistant sentence that repeats the user's rule.
var restating = re(`^(?:noted|understood|got it|will do|agreed|confirmed|recorded|all recorded|acknowledged|roger|okay, noted|ok, noted|i've noted|i have noted|saved|logged)\b|^(?:好的|明白|收到|记下了|记住了|了解|没问题|已记录|已记下|已记住|已备注|备注已添加|已保存|已登记)`)

// decidedByPeople attributes a decision to the user or the team, not to
// the assistant's own plan ("Decided to write the test first").
var decidedByPeople = re(`\b(?:we|you|your team|the team|everyone|they|leadership|management)\b|^(?:decision|decided|agreed|final call|verdict|ruling)\b[^:：]{0,40}[:：—]|[A-Z][a-z]+ (?:decided|agreed|signed off|made)`)

// recordsForUser reports whether an assistant statement records what the
// user decided or restates the user's rule: it opens with "Noted",
// "Understood", 已记录 ... and states a fact, or it is a decision the
// people of the conversation took.
func recordsForUser(s statement, best rule, restated bool) bool {
	if restated && (best.kind != KindNote || best.name == "note/recorded") {
		return true
	}
	return best.kind == KindDecision && best.name != "decision/zh" && decidedByPeople.MatchString(s.text)
}

// weigh applies the vetoes and rules to one statement.
//
// The rules come first: most sentences match none, and their vetoes are
// then worth trying only to tell Explain's reader why (explain).
func weigh(s statement, assistant, explain bool) Verdict {
	v := Verdict{Text: s.text}
	restated := assistant && restating.MatchString(strings.ToLower(s.raw))
	// An assistant sentence that restates nothing can only record a
	// decision: the other rules are not tried on it.
	best, ok := bestRule(s, assistant && !restated)
	if !ok {
		v.Skipped = "below_score"
		if explain {
			if why := vetoed(s, s.raw); why != "" {
				v.Skipped = why
			} else if assistant && !restated {
				v.Skipped = "assistant"
			}
		}
		return v
	}
	if why := vetoed(s, s.raw); why != "" {
		v.Skipped = why
		return v
	}
	v.Kind, v.Rule = best.kind, best.name
	score := best.weight
	standing := s.matchLower(standingMarker)
	if standing {
		score += standingBonus
	}
	if best.kind != KindNote && s.matchLower(noteMarker) {
		// a note marker on a fact of another kind strengthens it
		score += noteBonus
	}
	marked := s.matchLower(noteMarker)
	if weakTransient(s) && best.weight < 2.5 && !standing && !marked {
		v.Skipped = "transient"
		return v
	}
	if assistant && !recordsForUser(s, best, restated) {
		v.Skipped = "assistant"
		return v
	}
	if score < keepScore {
		v.Skipped = "below_score"
		return v
	}
	if assistant {
		score -= 0.25 // the user's own words rank first
	}
	v.Kept, v.Score = true, score
	return v
}

// bestRule returns the heaviest rule the statement matches, the first of
// equal weight; only decision rules when decisionsOnly.
func bestRule(s statement, decisionsOnly bool) (rule, bool) {
	var best rule
	found := false
	for _, r := range rules {
		if found && r.weight <= best.weight || decisionsOnly && r.kind != KindDecision {
			continue
		}
		text := s.lower
		if r.cased {
			text = s.text
		}
		// needs is tried after the prefilter and before the expression: it
		// looks for rare values, where such a rule's expression matches
		// most sentences.
		if !r.matches(&s, text) || r.unless.re != nil && r.unless.matchIn(text, s.found) {
			continue
		}
		best, found = r, true
	}
	return best, found
}

// matches reports whether the rule's words or expression, and its needs,
// hold for the statement: the cheap checks first.
func (r rule) matches(s *statement, text string) bool {
	if r.words != nil {
		return s.hasWord(r.words, r.phrases) && (r.needs == nil || r.needs(*s))
	}
	return r.re.mayMatchIn(s.found) && (r.needs == nil || r.needs(*s)) && r.re.match(text, &s.found)
}

var (
	// leadIn is wording that introduces a fact without being part of it.
	leadIn   = regexp.MustCompile(`(?i)^(?:(?:remember|note|nb|fyi|heads[ -]up|for the record|for future reference|for reference|for context|keep in mind|bear in mind|important|reminder|please note|just so you know|worth noting|decision(?: recorded| made)?|agreed|noted|understood|got it|confirmed|recorded|psa|please)\b(?:\s+that\b)?[\s:,—–-]*)+`)
	leadInZh = regexp.MustCompile(`^(?:(?:记住|注意|备注|提醒一下|提醒|补充一下|补充|供参考|说明|决定|约定|结论)[：:，,]\s*|(?:记住|注意|请)\s*)+`)
	// iAmOwner is "I'm Dana, and I own the billing service".
	iAmOwner = re(`^(?:I'm|I am|I’m|My name is)\s+([A-Z][\w'’-]+(?:\s[A-Z][\w'’-]+)?)[\s,—–-]*(?:and\s+)?I\s+(own|maintain|lead|manage|run|look after)\s+(.+)$`)
	// danglingWord ends a title cut mid-phrase ("... updated through the").
	danglingWord = regexp.MustCompile(`(?i)(?:\s+(?:the|a|an|of|to|through|for|with|and|or|in|on|at|by|from|via|into|when|if|that|which|is|are|be))+$`)
	// clauseBreak ends the first clause of a long statement.
	clauseBreak = regexp.MustCompile(`;|；| — | – |, because | because |, since |, so |, which |, in case |, if |，因为|，所以|（|\(`)
)

// titleOf says what the fact is in a few words: the statement without its
// lead-in ("Remember that", "FYI", 记住：), a first-person ownership
// statement turned into "<name> owns <thing>", and a long statement cut to
// its first clause, capitalised and without end punctuation.
func titleOf(s statement, kind Kind) string {
	t := withoutLeadIn(s.text)
	if t == "" {
		t = s.text
	}
	if kind == KindIdentity {
		if m := iAmOwner.FindStringSubmatch(t); m != nil {
			t = m[1] + " " + m[2] + "s " + m[3]
		}
	}
	if utf8.RuneCountInString(t) > maxTitleRunes {
		if loc := clauseBreak.FindStringIndex(t); loc != nil && utf8.RuneCountInString(t[:loc[0]]) >= 12 {
			t = t[:loc[0]]
		}
	}
	if cut := shortTitle(t, maxTitleRunes); cut != t {
		t = danglingWord.ReplaceAllString(cut, "")
	}
	t = strings.TrimRightFunc(t, func(r rune) bool { return unicode.IsPunct(r) && r != ')' && r != '）' || unicode.IsSpace(r) })
	return capitalize(t)
}

// withoutLeadIn is text without the wording that introduces a fact
// ("Noted:", "Decision recorded:", 记住：...).
func withoutLeadIn(text string) string {
	return strings.TrimSpace(leadInZh.ReplaceAllString(leadIn.ReplaceAllString(text, ""), ""))
}

// SamenessKey is the key two facts that say the same thing share: the
// hash of the body without its lead-in and final punctuation, so that
// "Noted: we deploy from main only." is the same fact as "We deploy from
// main only".
func SamenessKey(body string) string {
	t := strings.TrimRightFunc(withoutLeadIn(body), func(r rune) bool { return unicode.IsPunct(r) || unicode.IsSpace(r) })
	if t == "" {
		t = body
	}
	return BodyHash(t)
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
// it has them (the worker reads a pointer job's cut into them), else the
// entries parsed back from a transcript job's transcript.
func jobEntries(job Job) []Entry {
	if len(job.Entries) > 0 {
		return job.Entries
	}
	return ParseTranscript(job.Transcript)
}

// ParseTranscript splits a rendered transcript back into entries. A line that
// starts at column 0 with a role prefix begins an entry; every other line
// continues the previous one (with RenderTranscript's two-space indent
// removed). Lines before the first entry are dropped: their role is unknown.
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
