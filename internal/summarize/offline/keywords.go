package offline

import (
	"math"
	"math/bits"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// wordIndex finds all occurrences of up to 32 keywords, each of two bytes or
// more, in one pass over a text: a position is only compared with the
// keywords whose first two bytes it starts with. Searching each keyword in
// turn costs a scan per keyword, and prose is full of their first letters.
// Kept by the speed rule (docs/architecture.md, "Speed work") on
// BenchmarkFairProcessor (internal/consumer).
type wordIndex struct {
	words         []string
	first, second [256]uint32 // bit i: words[i] has this first / second byte
	// nonASCII is set when every word starts with a non-ASCII byte (the
	// Chinese ones): runs of ASCII text are then skipped eight bytes at a
	// time.
	nonASCII bool
	// Otherwise a window of the length of the shortest word (n) slides
	// over the text, and the two bytes it ends with tell how far it can
	// move without passing an occurrence (Wu and Manber): most pairs of
	// prose end no keyword's first n bytes, and the window skips ahead.
	n     int
	shift [pairTable]uint8 // by pairSlot of the window's last two bytes
}

// pairTable is the size of a wordIndex's shift table. Pairs that share a
// slot take the smaller shift, which stays safe.
const pairTable = 1 << 12

// pairSlot hashes two bytes; no two pairs of ASCII letters share a slot.
func pairSlot(a, b byte) int { return (int(a)*67 + int(b)) & (pairTable - 1) }

func newWordIndex(words []string) *wordIndex {
	if len(words) > 32 {
		panic("offline: more than 32 keywords")
	}
	x := &wordIndex{words: words, nonASCII: true, n: math.MaxUint8}
	for i, w := range words {
		x.nonASCII = x.nonASCII && w[0] >= utf8.RuneSelf
		if len(w) < 2 {
			panic("offline: keyword shorter than two bytes")
		}
		x.first[w[0]] |= 1 << i
		x.second[w[1]] |= 1 << i
		x.n = min(x.n, len(w))
	}
	// A pair found nowhere in the first n bytes of a word lets the window
	// move n-1 bytes: an occurrence starting any earlier would hold it.
	for i := range x.shift {
		x.shift[i] = uint8(x.n - 1)
	}
	for _, w := range words {
		for end := 2; end <= x.n; end++ {
			slot := pairSlot(w[end-2], w[end-1])
			x.shift[slot] = min(x.shift[slot], uint8(x.n-end))
		}
	}
	return x
}

// hit is one occurrence of a keyword: the byte range [start, end).
type hit struct{ start, end int }

// find appends every occurrence of the keywords in s to dst, overlapping
// ones included, ordered by start.
func (x *wordIndex) find(dst []hit, s string) []hit {
	if x.nonASCII {
		return x.findNonASCII(dst, s)
	}
	for i := 0; i+x.n <= len(s); {
		end := i + x.n
		if shift := x.shift[pairSlot(s[end-2], s[end-1])]; shift > 0 {
			i += int(shift)
			continue
		}
		dst = x.at(dst, s, i)
		i++
	}
	return dst
}

// findNonASCII is find for keywords that all start with a non-ASCII byte.
func (x *wordIndex) findNonASCII(dst []hit, s string) []hit {
	for i := 0; i+1 < len(s); i++ {
		for i+8 <= len(s) && ascii8(s[i:i+8]) {
			i += 8
		}
		if i+1 >= len(s) {
			break
		}
		dst = x.at(dst, s, i)
	}
	return dst
}

// at appends the occurrences of the keywords that start at s[i], in the
// order of the words; s has two bytes or more from i.
func (x *wordIndex) at(dst []hit, s string, i int) []hit {
	m := x.first[s[i]] & x.second[s[i+1]]
	for m != 0 {
		w := x.words[bits.TrailingZeros32(m)]
		m &= m - 1
		if strings.HasPrefix(s[i:], w) {
			dst = append(dst, hit{i, i + len(w)})
		}
	}
	return dst
}

// ascii8 reports whether the eight bytes of s are ASCII.
func ascii8(s string) bool {
	return (s[0]|s[1]|s[2]|s[3]|s[4]|s[5]|s[6]|s[7])&0x80 == 0
}

// within returns the hits that start inside sp; some may end after it.
func within(hits []hit, sp span) []hit {
	lo, _ := slices.BinarySearchFunc(hits, sp.start, func(h hit, start int) int { return h.start - start })
	hi := lo
	for hi < len(hits) && hits[hi].start < sp.end {
		hi++
	}
	return hits[lo:hi]
}

// anyIn reports whether a hit lies entirely inside sp: whether the text at
// sp contains one of the keywords.
func anyIn(hits []hit, sp span) bool {
	for _, h := range within(hits, sp) {
		if h.end <= sp.end {
			return true
		}
	}
	return false
}

// anyWordIn reports whether a hit inside sp of lower has no letter directly
// before or after it within sp: what containsWord reports for one of the
// keywords and lower[sp.start:sp.end]. containsWord skips occurrences that
// overlap the previous one it rejected; no keyword overlaps itself (a
// prefix of it is never also a suffix), so it sees the same ones.
func anyWordIn(lower string, hits []hit, sp span) bool {
	for _, h := range within(hits, sp) {
		if h.end > sp.end {
			continue
		}
		before, _ := utf8.DecodeLastRuneInString(lower[sp.start:h.start])
		after, _ := utf8.DecodeRuneInString(lower[h.end:sp.end])
		if !unicode.IsLetter(before) && !unicode.IsLetter(after) {
			return true
		}
	}
	return false
}
