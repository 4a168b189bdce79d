package canonical

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

// plainPrefixLen is the byte-at-a-time count copyPlainWords must return.
func plainPrefixLen(s string) int {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= utf8.RuneSelf || shortEscape[c] != 0 {
			return i
		}
	}
	return len(s)
}

const marker = 0xA5

// checkCopyPlain runs copyPlainWords on s into a destination filled with a
// marker and checks the count, the copied prefix, and that every byte
// written is the byte of s at that index.
func checkCopyPlain(t *testing.T, s string) {
	t.Helper()
	dst := bytes.Repeat([]byte{marker}, len(s)+32)
	got := copyPlainWords(dst[:len(s)], s)
	if want := plainPrefixLen(s); got != want {
		t.Fatalf("copyPlainWords(%q) = %d; want %d", s, got, want)
	}
	for i, b := range dst {
		switch {
		case i < got && b != s[i]:
			t.Fatalf("copyPlainWords(%q): byte %d not copied", s, i)
		case i >= len(s) && b != marker:
			t.Fatalf("copyPlainWords(%q): wrote byte %d past len(s)", s, i)
		case i < len(s) && b != marker && b != s[i]:
			t.Fatalf("copyPlainWords(%q): byte %d = %#x, not a byte of s", s, i, b)
		}
	}
}

// referenceEscapeASCII is escapeASCII one byte at a time.
func referenceEscapeASCII(s string, slack int) (out []byte, read int) {
	for ; read < len(s); read++ {
		c := s[read]
		if c >= utf8.RuneSelf {
			break
		}
		if shortEscape[c] == 0 {
			out = append(out, c)
			continue
		}
		if slack < 7 {
			break
		}
		esc, _ := referenceString(string(c))
		esc = esc[1 : len(esc)-1]
		out = append(out, esc...)
		slack -= len(esc) - 1
	}
	return out, read
}

// checkEscapeASCII runs both escapeASCII forms on s with the given slack and
// checks them against the reference, and that nothing is written past dst.
func checkEscapeASCII(t *testing.T, s string, slack int) {
	t.Helper()
	want, wantRead := referenceEscapeASCII(s, slack)
	impls := []struct {
		name string
		fn   func([]byte, string) (int, int)
	}{{"escapeASCII", escapeASCII}, {"escapeASCIIWords", escapeASCIIWords}}
	for _, impl := range impls {
		room := bytes.Repeat([]byte{marker}, len(s)+slack+32)
		read, written := impl.fn(room[:len(s)+slack], s)
		if read != wantRead || !bytes.Equal(room[:written], want) {
			t.Fatalf("%s(%q, slack %d) = %q (read %d); want %q (read %d)",
				impl.name, s, slack, room[:written], read, want, wantRead)
		}
		for i := len(s) + slack; i < len(room); i++ {
			if room[i] != marker {
				t.Fatalf("%s(%q, slack %d) wrote byte %d past dst", impl.name, s, slack, i)
			}
		}
	}
}

var (
	testSpecials = []byte{0, '\b', '\n', 0x1f, '"', '\\', 0x80, 0xc3, 0xff}
	testPlains   = []byte{' ', '!', '#', '/', '[', ']', 'a', '~', 0x7f}
)

// plainString is n plain bytes of varied values.
func plainString(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = testPlains[i%len(testPlains)]
	}
	return b
}

// Every special byte at every offset of strings of every length up to 100
// (several 32-byte blocks, with and without 64 bytes ahead, plus every
// tail), alone and followed by a second special, with too little and enough
// slack for escapes.
func TestEscapeASCIIEveryOffsetAndLength(t *testing.T) {
	for n := range 101 {
		base := plainString(n)
		checkCopyPlain(t, string(base))
		for _, slack := range []int{0, 6, 7, 8, 64} {
			checkEscapeASCII(t, string(base), slack)
		}
		for off := range n {
			for _, c := range testSpecials {
				b := append([]byte(nil), base...)
				b[off] = c
				checkCopyPlain(t, string(b))
				for _, slack := range []int{6, 7, 64} {
					checkEscapeASCII(t, string(b), slack)
				}
				for _, second := range []int{off + 1, n - 1} {
					if second > off && second < n {
						b[second] = '\x01'
						checkCopyPlain(t, string(b))
						for _, slack := range []int{12, 13, 64} {
							checkEscapeASCII(t, string(b), slack)
						}
					}
				}
			}
		}
	}
}

// Runs of escapes use up the slack partway through.
func TestEscapeASCIISlackRunsOut(t *testing.T) {
	s := strings.Repeat("ab\"\x01cdefghijklmnopqrstuvwxyz0123456789\n", 8)
	for slack := range 80 {
		checkEscapeASCII(t, s, slack)
	}
}

// Special bytes every period bytes, so blocks hold none, one or many, in
// long strings, with slack that runs out at different points.
func TestEscapeASCIIPeriodicSpecials(t *testing.T) {
	for period := 1; period <= 40; period++ {
		for _, c := range testSpecials {
			for start := range min(period, 8) {
				b := plainString(200)
				for i := start; i < len(b); i += period {
					b[i] = c
				}
				for _, slack := range []int{0, 7, 20, 64, 2000} {
					checkEscapeASCII(t, string(b), slack)
				}
			}
		}
	}
}
