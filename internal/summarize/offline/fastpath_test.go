package offline

import (
	"strings"
	"testing"
)

// The arena lower-cases as strings.ToLower does, and what it returned
// earlier stays as it was while it goes on.
func TestLowerArenaMatchesToLower(t *testing.T) {
	texts := append(keywordTexts(t), "", "A", strings.Repeat("Long ASCII Text. ", 400), "ÄÖÜ ẞ", "K\u212a")
	var a lowerArena
	var got []string
	for _, text := range texts {
		got = append(got, a.lowerOf(text, nil).lower)
	}
	for i, text := range texts {
		if want := strings.ToLower(text); got[i] != want {
			t.Errorf("lowerOf(%.40q) = %.40q, want %.40q", text, got[i], want)
		}
	}
}

// path skips the lookup of extensions longer than maxExtension.
func TestMaxExtension(t *testing.T) {
	longest := 0
	for ext := range fileExtensions {
		longest = max(longest, len(ext))
	}
	if longest != maxExtension {
		t.Errorf("longest file extension has %d bytes, maxExtension is %d", longest, maxExtension)
	}
}
