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

// lowerHasPrefix gives what lower-casing and strings.HasPrefix give.
func TestLowerHasPrefixMatchesToLower(t *testing.T) {
	texts := []string{"", "b", "becaus", "because", "Because x", "BECAUSE", "\u212a", "This İs because", "THIS IS BECAUSE!", "\xffbecause", "bécause", "this is  because"}
	for _, s := range texts {
		for _, p := range []string{"because", "this is because", "k", "i"} {
			if got, want := lowerHasPrefix(s, p), strings.HasPrefix(strings.ToLower(s), p); got != want {
				t.Errorf("lowerHasPrefix(%q, %q) = %v, want %v", s, p, got, want)
			}
		}
	}
}

// lowerASCII holds exactly for the texts strings.ToLower leaves alone
// because they are ASCII without capitals.
func TestLowerASCIIMatchesByteTest(t *testing.T) {
	want := func(s string) bool {
		for i := 0; i < len(s); i++ {
			if s[i] >= 0x80 || 'A' <= s[i] && s[i] <= 'Z' {
				return false
			}
		}
		return true
	}
	for c := range 256 {
		for pos := range 17 {
			for _, fill := range []byte{'a', '@', '[', 'z', 0, 0x7f} {
				b := []byte(strings.Repeat(string(rune(fill)), 17))
				b[pos] = byte(c)
				s := string(b)
				if got := lowerASCII(s); got != want(s) {
					t.Fatalf("lowerASCII(%q) = %v, want %v", s, got, !got)
				}
				if got := lowerASCII(s); got && strings.ToLower(s) != s {
					t.Fatalf("lowerASCII(%q) but ToLower changes it", s)
				}
			}
		}
	}
}
