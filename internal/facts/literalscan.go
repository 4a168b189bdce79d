package facts

import (
	"fmt"
	"sync"
	"unicode"
)

// A matcherSet is a set of matchers, by id: those whose prefilter literals
// a text holds.
type matcherSet [8]uint64

// maxMatchers is how many matchers a matcherSet can name.
const maxMatchers = len(matcherSet{}) * 64

func (m *matcherSet) add(id int)     { m[id>>6] |= 1 << (id & 63) }
func (m matcherSet) has(id int) bool { return m[id>>6]&(1<<(id&63)) != 0 }
func (m *matcherSet) union(o *matcherSet) {
	for i := range m {
		m[i] |= o[i]
	}
}

func (m matcherSet) intersects(o matcherSet) bool {
	for i := range m {
		if m[i]&o[i] != 0 {
			return true
		}
	}
	return false
}

// registered are the literal sets of every matcher with a prefilter, by
// id. Matchers are package variables: all are registered before the first
// scan builds the automaton.
var registered [][]string

// scanBuilt is set once the automaton is built from registered.
var scanBuilt bool

// It returns the set's id, or -1 once the automaton is built: a matcher
// made later (in a test) is never prefiltered by the scan.
func registerLiterals(lits []string) int {
	if scanBuilt {
		return -1
	}
	if len(registered) == maxMatchers {
		panic(fmt.Sprintf("facts: more than %d matchers with literals", maxMatchers))
	}
	for _, l := range lits {
		for _, r := range l {
			if r >= 0x80 && (unicode.ToLower(r) != r || unicode.ToUpper(r) != r) {
				// The scan folds ASCII only; such a literal could be missed.
				panic(fmt.Sprintf("facts: prefilter literal %q has a cased non-ASCII letter", l))
			}
		}
	}
	registered = append(registered, lits)
	return len(registered) - 1
}

// literalScan returns the matchers whose literals s holds, ASCII letters
// compared without case: one pass over s, whatever the number of
// literals (an Aho–Corasick automaton over all of them). Case-sensitive
// matchers are prefiltered on the lower-cased statement too: a text that
// holds a literal, lower-cased, holds it lower-cased.
func literalScan(s string) matcherSet {
	a := automaton()
	var found matcherSet
	state := int32(0)
	for i := 0; i < len(s); i++ {
		b := s[i]
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		state = a.step(state, b)
		if a.emits[state] {
			found.union(&a.out[state])
		}
	}
	return found
}

// literalAutomaton is a trie of the registered literals with failure
// links; out[s] are the matchers of every literal ending at state s.
type literalAutomaton struct {
	root  [256]int32 // the root's transitions, dense: most bytes start no literal
	edges [][]trieEdge
	fail  []int32
	out   []matcherSet
	emits []bool
}

type trieEdge struct {
	b  byte
	to int32
}

var automaton = sync.OnceValue(func() *literalAutomaton {
	scanBuilt = true
	a := &literalAutomaton{edges: [][]trieEdge{nil}, fail: []int32{0}, out: []matcherSet{{}}, emits: []bool{false}}
	for id, lits := range registered {
		for _, l := range lits {
			a.insert(foldASCII(l), id)
		}
	}
	a.link()
	return a
})

func foldASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

func (a *literalAutomaton) child(s int32, b byte) int32 {
	for _, e := range a.edges[s] {
		if e.b == b {
			return e.to
		}
	}
	return -1
}

func (a *literalAutomaton) insert(lit string, id int) {
	s := int32(0)
	for i := 0; i < len(lit); i++ {
		next := a.child(s, lit[i])
		if next < 0 {
			next = int32(len(a.edges))
			a.edges = append(a.edges, nil)
			a.fail = append(a.fail, 0)
			a.out = append(a.out, matcherSet{})
			a.emits = append(a.emits, false)
			a.edges[s] = append(a.edges[s], trieEdge{lit[i], next})
		}
		s = next
	}
	a.out[s].add(id)
	a.emits[s] = true
}

// link sets the failure links breadth first, merges each state's output
// with its failure state's, and fills the root's dense transitions.
func (a *literalAutomaton) link() {
	var queue []int32
	for _, e := range a.edges[0] {
		a.root[e.b] = e.to
		queue = append(queue, e.to)
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		for _, e := range a.edges[s] {
			f := a.step(a.fail[s], e.b)
			a.fail[e.to] = f
			a.out[e.to].union(&a.out[f])
			a.emits[e.to] = a.emits[e.to] || a.emits[f]
			queue = append(queue, e.to)
		}
	}
}

// step is the automaton's transition on b from state s.
func (a *literalAutomaton) step(s int32, b byte) int32 {
	for s != 0 {
		if next := a.child(s, b); next >= 0 {
			return next
		}
		s = a.fail[s]
	}
	return a.root[b]
}
