package facts

import (
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode"
	"unicode/utf8"
)

// A matcher is a rule's regular expression behind a literal prefilter:
// the literals one of which every match must contain, found from the
// expression's syntax. Most statements hold none of a rule's words, and
// finding every matcher's literals in one pass over a statement
// (literalScan) is far cheaper than running the expressions;
// BenchmarkHarvestVsCompaction and the harvest's share of a processor
// bench profile measure the extractor with it.
//
// Where every match starts with one of a few literals, the expression is
// tried only where they stand in the text, anchored there: Go's regexp
// has no literal-set search of its own, and an unanchored alternation of
// words runs each word at every position of the text. An alternation is
// run branch by branch (its parts), each behind its own literals.
type matcher struct {
	re    *regexp.Regexp
	lits  []string // nil: no literal is required, always run re
	id    int      // the matcher's bit in a matcherSet, when lits is set (-1: none)
	parts []part   // nil: run re
}

// A part is an expression, or a branch of one, behind the literals one of
// which each of its matches contains (lits, id, as a matcher's) and those
// one of which each starts with (starts; none: it is run unanchored).
// atStart and afterRune are it anchored at the text's start and after
// the text's first rune, so that \b and ^ see the rune before the match.
type part struct {
	re                 *regexp.Regexp
	lits               []string
	id                 int
	starts             []string
	atStart, afterRune *regexp.Regexp
}

// maxLiterals bounds a prefilter's literal set; a larger set filters too
// little to pay for itself.
const maxLiterals = 96

func newMatcher(expr string) matcher {
	m := matcher{re: regexp.MustCompile(expr)}
	if tree, err := syntax.Parse(expr, syntax.Perl); err == nil {
		tree = tree.Simplify()
		m.lits, m.id = prefilterOf(tree)
		m.parts = partsOf(tree)
	}
	return m
}

// prefilterOf returns the literals one of which every match of tree
// contains, registered for the literal scan; nil when there is no such set.
func prefilterOf(tree *syntax.Regexp) ([]string, int) {
	lits, ok := required(tree)
	if !ok || len(lits) > maxLiterals {
		return nil, 0
	}
	return lits, registerLiterals(lits)
}

// partsOf returns the parts an expression is run as: its branches, or
// itself when it is no alternation; nil when running it whole, unanchored,
// is all there is to do.
func partsOf(tree *syntax.Regexp) []part {
	if tree.Op != syntax.OpAlternate {
		if p, ok := anchoredPart(tree); ok {
			return []part{p}
		}
		return nil
	}
	parts := make([]part, len(tree.Sub))
	for i, branch := range tree.Sub {
		p, ok := anchoredPart(branch)
		if !ok {
			p = part{re: regexp.MustCompile(branch.String())}
		}
		p.lits, p.id = prefilterOf(branch)
		parts[i] = p
	}
	return parts
}

func anchoredPart(tree *syntax.Regexp) (part, bool) {
	starts, ok := startLiterals(tree)
	if !ok {
		return part{}, false
	}
	expr := tree.String()
	return part{re: regexp.MustCompile(expr), starts: starts,
		atStart: regexp.MustCompile(`^(?:` + expr + `)`), afterRune: regexp.MustCompile(`^(?s:.)(?:` + expr + `)`)}, true
}

// maxStartsTried bounds the anchored tries of one text: past it, one
// unanchored run is cheaper.
const maxStartsTried = 16

// match runs the expression on s, part by part, each behind its
// literals; found, when not nil, are the literals s holds.
func (m matcher) match(s string, found *matcherSet) bool {
	if m.parts == nil {
		return m.re.MatchString(s)
	}
	for i := range m.parts {
		p := &m.parts[i]
		if p.lits != nil && (found != nil && p.id >= 0 && !found.has(p.id) || found == nil && !containsAny(s, p.lits)) {
			continue
		}
		if p.match(s) {
			return true
		}
	}
	return false
}

// match runs the part anchored at each of its start literals in s, or
// unanchored when it has none or they stand in too many places.
func (m *part) match(s string) bool {
	if m.starts == nil {
		return m.re.MatchString(s)
	}
	tried := 0
	for _, lit := range m.starts {
		for off := 0; off < len(s); {
			i := strings.Index(s[off:], lit)
			if i < 0 {
				break
			}
			if tried++; tried > maxStartsTried {
				return m.re.MatchString(s)
			}
			if m.matchesAt(s, off+i) {
				return true
			}
			off += i + 1
		}
	}
	return false
}

// matchesAt reports whether a match of the expression starts at byte p.
func (m *part) matchesAt(s string, p int) bool {
	if p == 0 {
		return m.atStart.MatchString(s)
	}
	_, n := utf8.DecodeLastRuneInString(s[:p])
	return m.afterRune.MatchString(s[p-n:])
}

// MatchString reports whether s matches, looking for a literal first.
func (m matcher) MatchString(s string) bool {
	if m.lits != nil && !containsAny(s, m.lits) {
		return false
	}
	return m.match(s, nil)
}

// matchIn is MatchString on a text whose literals found says: the
// expression runs only when one of the matcher's literals is there.
func (m matcher) matchIn(s string, found matcherSet) bool {
	return m.mayMatchIn(found) && m.match(s, &found)
}

// mayMatchIn reports whether the prefilter lets a text through: false
// means it cannot match.
func (m matcher) mayMatchIn(found matcherSet) bool {
	return m.lits == nil || m.id < 0 || found.has(m.id)
}

// FindAllString is the expression's FindAllString behind the prefilter.
func (m matcher) FindAllString(s string, n int) []string {
	if m.lits != nil && !containsAny(s, m.lits) {
		return nil
	}
	return m.re.FindAllString(s, n)
}

// FindStringSubmatch is the expression's FindStringSubmatch behind the
// prefilter.
func (m matcher) FindStringSubmatch(s string) []string {
	if m.lits != nil && !containsAny(s, m.lits) {
		return nil
	}
	return m.re.FindStringSubmatch(s)
}

func containsAny(s string, lits []string) bool {
	for _, l := range lits {
		if strings.Contains(s, l) {
			return true
		}
	}
	return false
}

// required returns literals one of which every match of re contains, and
// false when it finds no such set (re can match without any literal, or
// the set would be too large).
func required(re *syntax.Regexp) ([]string, bool) {
	lits, ok, _ := literals(re)
	return lits, ok
}

// literals is required, and whether the set is exact: every match of re
// is one of the literals, so that neighbours in a concatenation may be
// joined to it.
func literals(re *syntax.Regexp) (lits []string, ok, exact bool) {
	switch re.Op {
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 {
			lits, ok := foldLiterals(re.Rune)
			return lits, ok, ok
		}
		return []string{string(re.Rune)}, true, true
	case syntax.OpCharClass:
		lits, ok := classLiterals(re.Rune)
		return lits, ok, ok
	case syntax.OpCapture:
		return literals(re.Sub[0])
	case syntax.OpPlus:
		lits, ok, _ := literals(re.Sub[0])
		return lits, ok, false
	case syntax.OpRepeat:
		if re.Min < 1 {
			return nil, false, false
		}
		lits, ok, _ := literals(re.Sub[0])
		return lits, ok, false
	case syntax.OpAlternate:
		var out []string
		exact := true
		for _, sub := range re.Sub {
			lits, ok, ex := literals(sub)
			if !ok {
				return nil, false, false
			}
			out = append(out, lits...)
			exact = exact && ex
		}
		return out, len(out) <= maxLiterals, exact
	case syntax.OpConcat:
		return concatLiterals(re.Sub)
	}
	return nil, false, false
}

// concatLiterals joins adjacent exact literal sets of a concatenation by
// their cross product, and returns the run whose shortest literal is
// longest: the most selective. The result is exact when the whole
// concatenation is one run of exact sets.
func concatLiterals(subs []*syntax.Regexp) ([]string, bool, bool) {
	var best, run []string
	bestLen, runExact, runs := 0, false, 0
	flush := func() {
		if run == nil {
			return
		}
		runs++
		if n := shortest(run); n > bestLen {
			best, bestLen = run, n
		}
		run = nil
	}
	allExact := true
	for _, sub := range subs {
		lits, ok, exact := literals(sub)
		allExact = allExact && ok && exact
		switch {
		case !ok:
			flush()
		case run != nil && runExact && exact && len(run)*len(lits) <= maxLiterals:
			run = cross(run, lits)
		default:
			flush()
			run, runExact = lits, exact
		}
	}
	flush()
	return best, best != nil, allExact && runs == 1
}

func cross(a, b []string) []string {
	out := make([]string, 0, len(a)*len(b))
	for _, x := range a {
		for _, y := range b {
			out = append(out, x+y)
		}
	}
	return out
}

func shortest(lits []string) int {
	n := -1
	for _, l := range lits {
		if n < 0 || len(l) < n {
			n = len(l)
		}
	}
	return n
}

// startLiterals returns literals one of which every match of re starts
// with, and false when it finds no such set. Zero-width assertions (\b,
// ^) are passed over: the anchored expression still checks them.
func startLiterals(re *syntax.Regexp) ([]string, bool) {
	lits, nullable, ok := firstLiterals(re)
	return lits, ok && !nullable && len(lits) <= maxLiterals
}

// firstLiterals returns the literals a match of re can start with, and
// whether re can match without consuming anything (nullable), when what
// follows it starts the match.
func firstLiterals(re *syntax.Regexp) (lits []string, nullable, ok bool) {
	switch re.Op {
	case syntax.OpLiteral, syntax.OpCharClass:
		lits, ok, _ := literals(re)
		return lits, false, ok
	case syntax.OpEmptyMatch, syntax.OpWordBoundary, syntax.OpNoWordBoundary, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText:
		return nil, true, true
	case syntax.OpCapture, syntax.OpPlus:
		return firstLiterals(re.Sub[0])
	case syntax.OpStar, syntax.OpQuest:
		lits, _, ok := firstLiterals(re.Sub[0])
		return lits, true, ok
	case syntax.OpRepeat:
		lits, nullable, ok := firstLiterals(re.Sub[0])
		return lits, nullable || re.Min == 0, ok
	case syntax.OpAlternate:
		for _, sub := range re.Sub {
			l, n, ok := firstLiterals(sub)
			if !ok {
				return nil, false, false
			}
			lits, nullable = append(lits, l...), nullable || n
		}
		return lits, nullable, len(lits) <= maxLiterals
	case syntax.OpConcat:
		for i, sub := range re.Sub {
			l, n, ok := firstLiterals(sub)
			if !ok {
				return nil, false, false
			}
			if !n {
				if exact, ok, isExact := literals(sub); ok && isExact {
					l = extendLiterals(exact, re.Sub[i+1:])
				}
				return append(lits, l...), false, true
			}
			lits = append(lits, l...)
		}
		return lits, true, true
	}
	return nil, false, false
}

// extendLiterals appends to prefix the exact literal sets that follow it
// in a concatenation, while the cross product stays small: the longer a
// start literal, the fewer places to try.
func extendLiterals(prefix []string, rest []*syntax.Regexp) []string {
	for _, sub := range rest {
		lits, ok, exact := literals(sub)
		if !ok || !exact || len(prefix)*len(lits) > maxLiterals {
			break
		}
		prefix = cross(prefix, lits)
	}
	return prefix
}

// foldLiterals lists the spellings of a case-folded literal ([Oo]ur is
// the literal "our" folded at its first letter), when each of its letters
// folds only to ASCII letters and there are at most 16 spellings.
func foldLiterals(runes []rune) ([]string, bool) {
	out := []string{""}
	for _, r := range runes {
		var spellings []string
		for f := r; ; {
			if f >= utf8.RuneSelf {
				return nil, false
			}
			spellings = append(spellings, string(f))
			if f = unicode.SimpleFold(f); f == r {
				break
			}
		}
		if len(out)*len(spellings) > 16 {
			return nil, false
		}
		out = cross(out, spellings)
	}
	return out, true
}

// classLiterals lists a small character class's runes as literals.
func classLiterals(ranges []rune) ([]string, bool) {
	var out []string
	for i := 0; i+1 < len(ranges); i += 2 {
		for r := ranges[i]; r <= ranges[i+1]; r++ {
			if len(out) == 4 {
				return nil, false
			}
			out = append(out, string(r))
		}
	}
	return out, len(out) > 0
}
