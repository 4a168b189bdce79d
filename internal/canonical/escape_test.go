package canonical

import (
	"bytes"
	"math/rand/v2"
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
	impls := append([]escapeImpl{{"escapeASCII", escapeASCII}, {"escapeASCIIWords", escapeASCIIWords}}, archEscapers()...)
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

// escapeImpl is a form of escapeASCII under test.
type escapeImpl struct {
	name string
	fn   func([]byte, string) (int, int)
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

// Random strings over an alphabet rich in special bytes (every byte with a
// two-byte escape, control bytes that need \u00XX, bytes >= 0x80), so blocks
// hold any mix of them, with slack around what their escapes need.
func TestEscapeASCIIRandomMixes(t *testing.T) {
	alphabets := []string{
		"\"\\\b\t\n\f\rab",
		"\"\\\b\t\n\f\rabcdefghijklmnop",
		"\"\\\n\x00\x0b\x1f\x0e\x80\xffa z~\x7f",
		"\nabcdefghijklmnopqrstuvwxyz0123456789 ",
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		alphabet := alphabets[rng.IntN(len(alphabets))]
		b := make([]byte, rng.IntN(200))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		checkEscapeASCII(t, string(b), rng.IntN(80))
	}
}

// Every ASCII byte, in runs and alone, in every position of a block of 32
// among two-byte escapes, so each one takes the block paths of escapeASCII.
func TestEscapeASCIIEveryByteInBlocks(t *testing.T) {
	for c := range utf8.RuneSelf {
		for _, n := range []int{32, 33, 63, 64, 80, 96} {
			for off := range n {
				b := plainString(n)
				b[off] = byte(c)
				b[(off+5)%n] = '\n'
				b[(off+11)%n] = '"'
				b[(off+12)%n] = '\\'
				for _, slack := range []int{3, 11, 12, 64} {
					checkEscapeASCII(t, string(b), slack)
				}
			}
			run := strings.Repeat(string(rune(c)), n)
			checkEscapeASCII(t, run, 2*n)
			checkEscapeASCII(t, run, n/2)
		}
	}
}
