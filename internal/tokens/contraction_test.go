package tokens

import "testing"

// tiktoken's contractions are matched case-insensitively, and ſ (U+017F,
// the long s) folds to s, so 'ſ ends a letter piece as 's does. This is
// the count of tiktoken (and of tiktoken-go, whose regular expression
// folds the same way); js-tiktoken spells the contractions out in ASCII
// cases and counts this text 16 with o200k_base (doc.go, Contractions).
func TestLongSIsAContractionAsInTiktoken(t *testing.T) {
	const text = "-'Sſ'ſ'LLa'ſſſt'ſſ"
	want := oracle(t, "o200k_base")
	n, err := want.Count(text)
	if err != nil {
		t.Fatal(err)
	}
	if got := o200kBase.Count([]byte(text)); got != 15 || int64(n) != got {
		t.Fatalf("o200k_base counts %q as %d, tiktoken-go as %d; want 15 for both", text, got, n)
	}
	if got := contraction([]byte("'ſ"), 0, true); got != len("'ſ") {
		t.Fatalf("'ſ ends at %d, want %d", got, len("'ſ"))
	}
}
