//go:build amd64 && !purego

package canonical

import (
	"encoding/binary"
	"unicode/utf8"

	"golang.org/x/sys/cpu"
)

// escapeASCII writes s to dst with the escapes of string (see
// escapeASCIIWords, the portable form, for the contract) and returns how
// many bytes of s it read and of dst it wrote.
//
// On amd64 the work is done by escapeSIMD in assembly: plain runs are
// scanned and copied 16 or 32 bytes at a time with SSE2, which every amd64
// processor has, and escapes are written in the same loop. Event content has
// a newline or quote every few dozen bytes, so the cost per escape matters
// as much as the scan; in Go both together cost more than hashing the
// output. Where SSSE3 and POPCNT are present, blocks with escapes are
// written by shuffles (see escapeExpand) rather than one escape at a time,
// which saves the mispredicted branches of a varying count of escapes.
func escapeASCII(dst []byte, s string) (read, written int) {
	return escapeSIMD(dst, s, &escapeConf)
}

//go:noescape
func escapeSIMD(dst []byte, s string, conf *escapeConfig) (read, written int)

// escapeConfig is what escapeSIMD works with, behind one argument: each
// argument costs a store per call, and most strings are short.
type escapeConfig struct {
	// words is escapeWords.
	words [utf8.RuneSelf]uint64
	// expand is &escapeExpand, or nil on processors without SSSE3 and
	// POPCNT.
	expand *[256][16]byte
	// wide is whether AVX2 may be used.
	wide bool
}

// escapeConf is the escapeConfig for this processor.
var escapeConf = newEscapeConfig(cpu.X86.HasSSSE3 && cpu.X86.HasPOPCNT, cpu.X86.HasAVX2)

// newEscapeConfig returns an escapeConfig that uses the shuffles and AVX2
// as told.
func newEscapeConfig(shuffles, wide bool) escapeConfig {
	conf := escapeConfig{words: escapeWords, wide: wide}
	if shuffles {
		conf.expand = &escapeExpand
	}
	return conf
}

// escapeExpand holds, for each set m of special bytes among eight, the
// PSHUFB mask that spreads the eight bytes (indices 0-7) over sixteen, each
// special byte preceded by a backslash (any index 8-15, where escapeSIMD
// puts backslashes). Output bytes past the 8+popcount(m) that count are
// zeroed (index 0x80).
var escapeExpand = func() (t [256][16]byte) {
	for m := range t {
		out := t[m][:0]
		for j := range byte(8) {
			if m&(1<<j) != 0 {
				out = append(out, 8)
			}
			out = append(out, j)
		}
		for len(out) < 16 {
			out = append(out, 0x80)
		}
	}
	return t
}()

// escapeWords holds, for each ASCII byte, its escape in the low bytes and
// the escape's length in the top byte, or zero if the byte is plain. The
// assembly stores a whole word and moves on by the length.
var escapeWords = func() (t [utf8.RuneSelf]uint64) {
	for c := range byte(utf8.RuneSelf) {
		if shortEscape[c] != 0 {
			var b [8]byte
			n := writeEscape(b[:], c)
			t[c] = binary.LittleEndian.Uint64(b[:]) | uint64(n)<<56
		}
	}
	return t
}()
