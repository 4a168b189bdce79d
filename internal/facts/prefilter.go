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
	switch re.Op {
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 {
			return nil, false
		}
		return []string{string(re.Rune)}, true
	case syntax.OpCharClass:
		return classLiterals(re.Rune)
	case syntax.OpCapture, syntax.OpPlus:
		return required(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min < 1 {
			return nil, false
		}
		return required(re.Sub[0])
	case syntax.OpAlternate:
		var out []string
		for _, sub := range re.Sub {
			lits, ok := required(sub)
			if !ok {
				return nil, false
			}
			out = append(out, lits...)
		}
		return out, len(out) <= maxLiterals
	case syntax.OpConcat:
		return concatLiterals(re.Sub)
	}
	return nil, false
}

// concatLiterals joins adjacent required literal sets of a concatenation
// by their cross product, and returns the run whose shortest literal is
// longest: the most selective.
func concatLiterals(subs []*syntax.Regexp) ([]string, bool) {
	var best, run []string
	bestLen := 0
	flush := func() {
		if n := shortest(run); run != nil && n > bestLen {
			best, bestLen = run, n
		}
		run = nil
	}
	for _, sub := range subs {
		lits, ok := required(sub)
		switch {
		case !ok:
			flush()
		case run == nil:
			run = lits
		case len(run)*len(lits) <= maxLiterals:
			run = cross(run, lits)
		default:
			flush()
			run = lits
		}
	}
	flush()
	return best, best != nil
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
