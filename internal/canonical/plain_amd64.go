//go:build amd64 && !purego

package canonical

// copyPlain copies the plain bytes at the start of s (those written
// verbatim: not '"', '\\', a control byte or a byte >= 0x80) to the same
// places in dst and returns how many there are. It may also copy later bytes
// of s to their places; it writes nothing else. len(dst) >= len(s).
//
// Strings of 16 bytes or more are scanned sixteen bytes at a time with SSE2,
// which every amd64 processor has; event content is mostly such runs, and
// the word-at-a-time Go loop alone cost more than hashing the output.
func copyPlain(dst []byte, s string) int {
	if len(s) < 16 {
		return copyPlainWords(dst, s)
	}
	_ = dst[len(s)-1] // the assembly trusts len(dst) >= len(s)
	return copyPlainSSE2(dst, s)
}

// copyPlainSSE2 is copyPlain for len(s) >= 16, in plain_amd64.s.
//
//go:noescape
func copyPlainSSE2(dst []byte, s string) int
