package facts

import (
	"regexp"
	"regexp/syntax"
	"strings"
)

// A matcher is a rule's regular expression behind a literal prefilter:
// the literals one of which every match must contain, found from the
// expression's syntax. Most statements hold none of a rule's words, and a
// substring search is far cheaper than running the expression at every
// position; BenchmarkHeuristicLongCut measures the extractor with it.
type matcher struct {
	re   *regexp.Regexp
	lits []string // nil: no literal is required, always run re
}

// maxLiterals bounds a prefilter's literal set; a larger set filters too
// little to pay for itself.
const maxLiterals = 96

func newMatcher(expr string) matcher {
	m := matcher{re: regexp.MustCompile(expr)}
	if tree, err := syntax.Parse(expr, syntax.Perl); err == nil {
		if lits, ok := required(tree.Simplify()); ok && len(lits) <= maxLiterals {
			m.lits = lits
		}
	}
	return m
}

// MatchString reports whether s matches, looking for a literal first.
func (m matcher) MatchString(s string) bool {
	if m.lits != nil && !containsAny(s, m.lits) {
		return false
	}
	return m.re.MatchString(s)
}

// matchIn is MatchString on a text whose byte pairs ix holds: a literal
// whose first two bytes do not occur in the text is not searched for.
func (m matcher) matchIn(s string, ix *bytePairs) bool {
	return m.mayMatchIn(s, ix) && m.re.MatchString(s)
}

// mayMatchIn reports whether the prefilter lets s through: false means s
// cannot match.
func (m matcher) mayMatchIn(s string, ix *bytePairs) bool {
	return m.lits == nil || ix.containsAny(s, m.lits)
}

// bytePairs is a small Bloom filter of the adjacent byte pairs of one
// text. Asking it first answers most "does the text hold this literal"
// questions with one bit, so a statement is searched only for the
// literals that may be in it; a false positive costs one substring search.
type bytePairs [64]uint64

func pairBit(a, b byte) (int, uint64) {
	h := (uint(a)*131 + uint(b)) & 4095
	return int(h >> 6), 1 << (h & 63)
}

func (p *bytePairs) reset(s string) {
	*p = bytePairs{}
	for i := 0; i+1 < len(s); i++ {
		w, bit := pairBit(s[i], s[i+1])
		p[w] |= bit
	}
}

func (p *bytePairs) containsAny(s string, lits []string) bool {
	for _, l := range lits {
		if len(l) >= 2 {
			if w, bit := pairBit(l[0], l[1]); p[w]&bit == 0 {
				continue
			}
		}
		if strings.Contains(s, l) {
			return true
		}
	}
	return false
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
			return nil, false, false
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
