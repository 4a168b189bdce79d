//go:build amd64 && !purego

package canonical

import (
	"encoding/binary"
	"unicode/utf8"
)

// escapeASCII writes s to dst with the escapes of string (see
// escapeASCIIWords, the portable form, for the contract) and returns how
// many bytes of s it read and of dst it wrote.
//
// On amd64 the work is done by escapeSSE2 in assembly: plain runs are
// scanned and copied 16 or 32 bytes at a time with SSE2, which every amd64
// processor has, and escapes are written in the same loop. Event content has
// a newline or quote every few dozen bytes, so the cost per escape matters
// as much as the scan; in Go both together cost more than hashing the
// output.
func escapeASCII(dst []byte, s string) (read, written int) {
	return escapeSSE2(dst, s, &escapeWords)
}

//go:noescape
func escapeSSE2(dst []byte, s string, words *[utf8.RuneSelf]uint64) (read, written int)

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
