package rawjson

import (
	"math/bits"
	"unicode/utf8"
)

// AppendString appends s as json.Marshal encodes a string: HTML characters,
// control characters, U+2028 and U+2029 escaped, invalid UTF-8 replaced by
// U+FFFD. Stored values embed long texts (harvest transcripts, summaries)
// whose bytes are nearly all plain ASCII, so runs of those are found a word
// at a time and copied whole; encoding/json looks at each byte.
func AppendString(dst []byte, s string) []byte { return appendString(dst, s, true) }

// AppendStringNoHTML appends s as an encoding/json Encoder with
// SetEscapeHTML(false) encodes a string: as AppendString, but '<', '>' and
// '&' as they are.
func AppendStringNoHTML(dst []byte, s string) []byte { return appendString(dst, s, false) }

func appendString(dst []byte, s string, html bool) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if i = plainRun(s, i, html); i == len(s) {
			break
		}
		if c := s[i]; c < utf8.RuneSelf {
			dst = appendEscape(append(dst, s[start:i]...), c)
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(append(dst, s[start:i]...), `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(append(dst, s[start:i]...), '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

const hexDigits = "0123456789abcdef"

// appendEscape appends the escape json.Marshal writes for c, an ASCII
// control character, quote, backslash or (HTML) '<', '>' or '&'.
func appendEscape(dst []byte, c byte) []byte {
	switch c {
	case '\\', '"':
		return append(dst, '\\', c)
	case '\b':
		return append(dst, '\\', 'b')
	case '\f':
		return append(dst, '\\', 'f')
	case '\n':
		return append(dst, '\\', 'n')
	case '\r':
		return append(dst, '\\', 'r')
	case '\t':
		return append(dst, '\\', 't')
	}
	return append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
}

// plainRun returns the index of the first byte at or after i that
// encoding/json does not copy as it is: a control character, '"', '\\',
// with html '<', '>' or '&', or any byte of a multi-byte sequence (which may
// be invalid UTF-8, U+2028 or U+2029); len(s) if there is none.
func plainRun(s string, i int, html bool) int {
	for i+8 <= len(s) {
		w := load8(s, i)
		m := w&(lowBits<<7) | lessThan0x20(w) | zeroBytes(w^(lowBits*'"')) | zeroBytes(w^(lowBits*'\\'))
		if html {
			m |= zeroBytes(w^(lowBits*'<')) | zeroBytes(w^(lowBits*'>')) | zeroBytes(w^(lowBits*'&'))
		}
		if m != 0 {
			// The lowest flagged byte is a true match: a borrow in
			// zeroBytes or lessThan0x20 only moves upward from one.
			return i + bits.TrailingZeros64(m)/8
		}
		i += 8
	}
	for ; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || html && (c == '<' || c == '>' || c == '&') {
			return i
		}
	}
	return i
}

// lessThan0x20 has the high bit of the lowest byte of w below 0x20 set (and
// maybe of higher bytes); it is zero when w has none. Bytes of 0x80 and
// above may be flagged too, which the caller treats as stops anyway.
func lessThan0x20(w uint64) uint64 { return (w - lowBits*0x20) &^ w & (lowBits << 7) }

// load8 reads s[i:i+8] as a little-endian word (the compiler makes it one
// load).
func load8(s string, i int) uint64 {
	b := s[i : i+8]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}
