package offline

import (
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
type wordIndex struct {
	words         []string
	first, second [256]uint32 // bit i: words[i] has this first / second byte
	// nonASCII is set when every word starts with a non-ASCII byte (the
	// Chinese ones): runs of ASCII text are then skipped eight bytes at a
	// time.
	nonASCII bool
}

func newWordIndex(words []string) *wordIndex {
	if len(words) > 32 {
		panic("offline: more than 32 keywords")
	}
	x := &wordIndex{words: words, nonASCII: true}
	for i, w := range words {
		x.nonASCII = x.nonASCII && w[0] >= utf8.RuneSelf
		if len(w) < 2 {
			panic("offline: keyword shorter than two bytes")
		}
		x.first[w[0]] |= 1 << i
		x.second[w[1]] |= 1 << i
	}
	return x
}

// hit is one occurrence of a keyword: the byte range [start, end).
type hit struct{ start, end int }

// find appends every occurrence of the keywords in s to dst, overlapping
// ones included, ordered by start.
func (x *wordIndex) find(dst []hit, s string) []hit {
	for i := 0; i+1 < len(s); i++ {
		if x.nonASCII {
			for i+8 <= len(s) && ascii8(s[i:i+8]) {
				i += 8
			}
			if i+1 >= len(s) {
				break
			}
		}
		m := x.first[s[i]] & x.second[s[i+1]]
		for m != 0 {
			w := x.words[bits.TrailingZeros32(m)]
			m &= m - 1
			if strings.HasPrefix(s[i:], w) {
				dst = append(dst, hit{i, i + len(w)})
			}
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
