package canonical

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// plainPrefixLen is the byte-at-a-time count copyPlain must return.
func plainPrefixLen(s string) int {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= utf8.RuneSelf || shortEscape[c] != 0 {
			return i
		}
	}
	return len(s)
}

// checkCopyPlain runs copy on s into a destination filled with a marker and
// checks the count, the copied prefix, and that every byte written is the
// byte of s at that index.
func checkCopyPlain(t *testing.T, name string, copy func([]byte, string) int, s string) {
	t.Helper()
	const marker = 0xA5
	dst := make([]byte, len(s)+32)
	for i := range dst {
		dst[i] = marker
	}
	got := copy(dst[:len(s)], s)
	if want := plainPrefixLen(s); got != want {
		t.Fatalf("%s(%q) = %d; want %d", name, s, got, want)
	}
	for i, b := range dst {
		switch {
		case i < got && b != s[i]:
			t.Fatalf("%s(%q): byte %d not copied", name, s, i)
		case i >= len(s) && b != marker:
			t.Fatalf("%s(%q): wrote byte %d past len(s)", name, s, i)
		case i < len(s) && b != marker && b != s[i]:
			t.Fatalf("%s(%q): byte %d = %#x, not a byte of s", name, s, i, b)
		}
	}
}

// Every special byte value at every offset of strings of every length up to
// 80 (several 32-byte blocks plus every tail), and fully plain strings.
func TestCopyPlainEveryOffsetAndLength(t *testing.T) {
	specials := []byte{0, '\n', 0x1f, '"', '\\', 0x80, 0xc3, 0xff}
	plains := []byte{' ', '!', '#', '[', ']', 'a', '~', 0x7f}
	impls := map[string]func([]byte, string) int{"copyPlain": copyPlain, "copyPlainWords": copyPlainWords}
	for name, copy := range impls {
		for n := range 81 {
			base := []byte(strings.Repeat("x", n))
			for i := range base {
				base[i] = plains[i%len(plains)]
			}
			checkCopyPlain(t, name, copy, string(base))
			for off := range n {
				for _, c := range specials {
					b := append([]byte(nil), base...)
					b[off] = c
					checkCopyPlain(t, name, copy, string(b))
					// A second special later must not move the answer.
					if off+1 < n {
						b[n-1] = '"'
						checkCopyPlain(t, name, copy, string(b))
					}
				}
			}
		}
	}
}
