package tokens

import (
	"testing"
	"unicode"
)

// Letters newer than Go's unicode tables are letters to the split, as to
// tiktoken: U+13EE5 (Egyptian hieroglyph, Unicode 16) joins the letters
// around it into one piece, where Go's tables alone make it a symbol.
func TestLettersNewerThanGoAreLetters(t *testing.T) {
	if unicode.IsLetter(0x13EE5) {
		t.Skipf("Go's unicode tables (Unicode %s) know U+13EE5: regenerate unicode_tables.go (genunicode.go)", unicode.Version)
	}
	if c := classify(0x13EE5); c&classL == 0 || c&classUpper == 0 || c&classLower == 0 {
		t.Errorf("U+13EE5 classes %#b, want a letter of the upper and lower sets (Lo in Unicode %s)", c, unicodeVersion)
	}
	if c := classify(0x11F50); c&classN == 0 {
		t.Errorf("U+11F50 (Kawi digit zero) classes %#b, want a number", c)
	}
	if c := classify('a'); c != classL|classLower {
		t.Errorf("'a' classes %#b: the patch must leave older letters alone", c)
	}
}
