package offline

import (
	"strings"
	"testing"
)

// The hand-written trims and line suffix test agree with the strings
// functions they replace.
func TestTokenHelpersMatchStrings(t *testing.T) {
	parts := []string{"", ".", ",", ";", ":", "!", "?", "a", "1", "/", "...", "é", ":1", "12"}
	var tokens []string
	for _, a := range parts {
		for _, b := range parts {
			for _, c := range parts {
				tokens = append(tokens, a+b+c)
			}
		}
	}
	for _, tok := range tokens {
		if got, want := trimLeftPunct(tok), strings.TrimLeft(tok, ",;:!?"); got != want {
			t.Errorf("trimLeftPunct(%q) = %q, want %q", tok, got, want)
		}
		if got, want := trimRightPunct(tok), strings.TrimRight(tok, ".,;:!?"); got != want {
			t.Errorf("trimRightPunct(%q) = %q, want %q", tok, got, want)
		}
		if got, want := lineSuffix(tok), allDigits(strings.ReplaceAll(tok, ":", "")); got != want {
			t.Errorf("lineSuffix(%q) = %v, want %v", tok, got, want)
		}
	}
}

// collapseSpace gives what strings.Fields and strings.Join give.
func TestCollapseSpaceMatchesFields(t *testing.T) {
	parts := []string{"", " ", "  ", "\t", "\n", "\v\f\r", "a", "é", "\u00a0", "\u0085", "\u2028", "\u3000", "中", "\ufffd", "x y"}
	for _, a := range parts {
		for _, b := range parts {
			for _, c := range parts {
				s := a + b + c
				if got, want := collapseSpace(s), strings.Join(strings.Fields(s), " "); got != want {
					t.Errorf("collapseSpace(%q) = %q, want %q", s, got, want)
				}
			}
		}
	}
}
