package facts

import (
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"testing"
)

// The prefilter never changes a rule's verdict: on every sentence of the
// corpus, each rule and veto matches with it exactly when its expression
// matches without it.
func TestPrefilterAgreesWithTheExpression(t *testing.T) {
	var texts []string
	var sts []statement
	for _, c := range loadCorpus(t, corpusFiles(t)) {
		for _, e := range c.Entries {
			for _, s := range statements(e.Content) {
				texts = append(texts, s.text, s.lower)
				sts = append(sts, s)
				sts = append(sts, clauses(s)...)
			}
		}
	}
	// Where a start literal stands inside a word, after a multi-byte rune,
	// at the very start, or more often than the anchored tries allow.
	for _, tricky := range []string{"task Dana for it", "Ask Dana for it", "ééAsk Dana about x", "always", "xalways never",
		strings.Repeat("in in in ", 12) + "use pnpm, not npm", "我们以后都用 pnpm", "，以后用 pnpm", "the rule is: squash"} {
		texts = append(texts, tricky, strings.ToLower(tricky))
		s := statement{raw: tricky, text: tricky, lower: strings.ToLower(tricky)}
		s.index()
		sts = append(sts, s)
	}
	matchers := []matcher{questionStart, questionHan, transient, transientWeak, transientHan, transientHanW, hedge, chatter, injection, standingMarker, noteMarker, restating, decidedByPeople}
	for _, r := range rules {
		if r.re.re == nil {
			continue // a rule of words
		}
		matchers = append(matchers, r.re)
		if r.unless.re != nil {
			matchers = append(matchers, r.unless)
		}
	}
	filtered := 0
	for _, m := range matchers {
		if m.lits != nil {
			filtered++
		}
		// The statements below cover the scan's path on every text; the
		// plain prefilter's path (MatchString) is checked on a quarter.
		for i, text := range texts {
			if i%4 != 0 && i < len(texts)-20 {
				continue
			}
			if got, want := m.MatchString(text), m.re.MatchString(text); got != want {
				t.Fatalf("%s on %q: prefiltered %v, expression %v (literals %q)", m.re, text, got, want, m.lits)
			}
		}
		for _, s := range sts {
			if got, want := s.matchLower(m), m.re.MatchString(s.lower); got != want {
				t.Fatalf("%s on statement %q: scanned %v, expression %v (literals %q)", m.re, s.lower, got, want, m.lits)
			}
			if got, want := s.matchText(m), m.re.MatchString(s.text); got != want {
				t.Fatalf("%s on statement %q: scanned %v, expression %v (literals %q)", m.re, s.text, got, want, m.lits)
			}
		}
	}
	if filtered < len(matchers)/2 {
		t.Fatalf("only %d of %d expressions have a prefilter", filtered, len(matchers))
	}
}

func TestRequiredLiterals(t *testing.T) {
	tests := []struct {
		expr string
		want []string // nil: no prefilter
	}{
		{`\bnever\b`, []string{"never"}},
		{`\b(?:never|no)\b`, []string{"never", "no"}},
		{`^please\s+(?:keep|use)\b`, []string{"please"}},
		{`(?:a|b)x?`, []string{"a", "b"}},
		{`x*`, nil},
		{`never|\d+`, nil},
		{`(?i)never`, nil},
		{`只(?:用|按)`, []string{"只用", "只按"}},
		// An optional letter breaks a run: "favo" is required, "favor" is not.
		{`\b(?:favou?r|favou?rs)\b`, []string{"favo"}},
		{`ab+c`, []string{"a"}},
	}
	for _, tt := range tests {
		m := newMatcher(tt.expr)
		got := slices.Clone(m.lits)
		slices.Sort(got)
		slices.Sort(tt.want)
		if !slices.Equal(got, tt.want) {
			t.Errorf("literals of %s = %q, want %q", tt.expr, got, tt.want)
		}
		regexp.MustCompile(tt.expr)
	}
}

func TestStartLiterals(t *testing.T) {
	tests := []struct {
		expr string
		want []string // nil: matches may start anywhere
	}{
		{`\bnever\b`, []string{"never"}},
		{`\b(?:[Aa]sk|[Pp]ing)\s+x`, []string{"Ask", "ask", "Ping", "ping"}},
		{`^(?:please\s+)?always\s+\S`, []string{"please", "always"}},
		{`(?:^|[，,])\s*以后`, nil},
		{`\b[A-Z][a-z]+ decided`, nil},
		{`x*y`, []string{"x", "y"}},
		{`x*`, nil},
	}
	for _, tt := range tests {
		tree, err := syntax.Parse(tt.expr, syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := startLiterals(tree.Simplify())
		if !ok {
			got = nil
		}
		slices.Sort(got)
		slices.Sort(tt.want)
		if !slices.Equal(got, tt.want) {
			t.Errorf("start literals of %s = %q, want %q", tt.expr, got, tt.want)
		}
	}
}
