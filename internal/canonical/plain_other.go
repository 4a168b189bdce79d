//go:build !amd64 || purego

package canonical

// copyPlain copies the plain bytes at the start of s (those written
// verbatim: not '"', '\\', a control byte or a byte >= 0x80) to the same
// places in dst and returns how many there are. It may also copy later bytes
// of s to their places; it writes nothing else. len(dst) >= len(s).
func copyPlain(dst []byte, s string) int { return copyPlainWords(dst, s) }
