package canonical

import (
	"encoding/binary"
	"math/bits"
	"slices"
	"unicode/utf8"
)

// shortEscape maps an ASCII byte to the letter of its two-byte escape
// (\", \\, \b, \t, \n, \f, \r), to 'u' when it needs \u00XX, or to 0
// when it is copied verbatim.
var shortEscape = func() [utf8.RuneSelf]byte {
	var t [utf8.RuneSelf]byte
	for c := range 0x20 {
		t[c] = 'u'
	}
	t['\b'], t['\t'], t['\n'], t['\f'], t['\r'] = 'b', 't', 'n', 'f', 'r'
	t['"'], t['\\'] = '"', '\\'
	return t
}()

const upperHex = "0123456789ABCDEF"

// string writes s quoted with OTP json escaping (see AppendString). The
// encoder's buffer mostly has room for s already, so AppendString's common
// case is repeated here, which saves a call for every string.
func (e *encoder) string(s string) error {
	var err error
	n := len(e.buf)
	if cap(e.buf)-n < len(s)+2+escapeRoom {
		e.buf, err = AppendString(e.buf, s)
		return err
	}
	buf := e.buf[:cap(e.buf)]
	buf[n] = '"'
	read, written := escapeASCII(buf[n+1:len(buf)-1], s)
	n += 1 + written
	if read != len(s) {
		e.buf, err = appendStringRest(e.buf, buf, n, s, read)
		return err
	}
	buf[n] = '"'
	e.buf = e.buf[:n+1] // only the length changes: no pointer store
	return nil
}

// AppendString appends s quoted with OTP json escaping, the canonical
// encoding of a string: only '"', '\\' and control characters are escaped
// (uppercase hex); everything else, including '/', DEL, U+2028 and U+2029,
// is copied verbatim. It validates UTF-8 in the same pass. On error (invalid
// UTF-8, wrapping ErrNotCanonical) dst is returned unextended.
//
// The output slice is used at its full capacity, which always leaves room
// for the rest of s, the closing quote and some escapes, so escapeASCII can
// copy plain runs while it scans them. It stops at non-ASCII text, which is
// validated here, and when the room for escapes runs out.
func AppendString(dst []byte, s string) ([]byte, error) {
	n := len(dst)
	buf := ensure(dst, n, len(s)+2+escapeRoom)
	buf[n] = '"'
	// One byte is kept back for the closing quote.
	read, written := escapeASCII(buf[n+1:len(buf)-1], s)
	n += 1 + written
	if read == len(s) {
		// Most strings are done in one call; they skip the loop below.
		buf[n] = '"'
		return buf[:n+1], nil
	}
	return appendStringRest(dst, buf, n, s, read)
}

// appendStringRest finishes AppendString(dst, s) from s[i], which is not
// ASCII or an escape there was no room for; buf[:n] is written.
func appendStringRest(dst, buf []byte, n int, s string, i int) ([]byte, error) {
	for {
		switch {
		case i == len(s):
			buf[n] = '"'
			return buf[:n+1], nil
		case s[i] >= utf8.RuneSelf:
			k, ok := copyRunes(buf[n:], s[i:])
			if !ok {
				return dst, notCanonical("string is not valid UTF-8")
			}
			i += k
			n += k
		default:
			// More escapes than room: grow for as many again.
			buf = ensure(buf, n, 1+len(s)-i+max(escapeRoom, len(s)-i))
		}
		read, written := escapeASCII(buf[n:len(buf)-1], s[i:])
		i += read
		n += written
	}
}

// escapeRoom is the least room string leaves for escapes beyond the bytes
// of s; escapeASCII needs seven to write any escape (it may store a word).
const escapeRoom = 64

// ensure returns buf extended to its full capacity, which it grows first if
// fewer than need bytes follow index n. Bytes before n are kept.
func ensure(buf []byte, n, need int) []byte {
	if cap(buf)-n < need {
		buf = slices.Grow(buf[:n], need)
	}
	return buf[:cap(buf)]
}

// escapeASCIIWords is the portable escapeASCII. It writes s to dst with the
// escapes of string until it has read all of s, reaches a byte >= 0x80, or
// reaches a byte to escape when the slack (the room in dst beyond a verbatim
// copy of the unread bytes) is under seven bytes; it returns how many bytes it
// read and wrote. len(dst) >= len(s). Bytes of dst past those written may be
// overwritten too.
func escapeASCIIWords(dst []byte, s string) (read, written int) {
	slack := len(dst) - len(s)
	i, n := 0, 0
	for {
		k := copyPlainWords(dst[n:], s[i:])
		i += k
		n += k
		if i == len(s) || s[i] >= utf8.RuneSelf || slack < 7 {
			return i, n
		}
		k = writeEscape(dst[n:], s[i])
		slack -= k - 1
		n += k
		i++
	}
}

// writeEscape writes the escape of the ASCII byte c to dst and returns its
// length.
func writeEscape(dst []byte, c byte) int {
	if esc := shortEscape[c]; esc != 'u' {
		dst[0], dst[1] = '\\', esc
		return 2
	}
	dst[0], dst[1], dst[2], dst[3] = '\\', 'u', '0', '0'
	dst[4], dst[5] = upperHex[c>>4], upperHex[c&0xF]
	return 6
}

// copyRunes copies the multi-byte UTF-8 sequences at the start of s to dst
// and returns their length, or false if they are not valid UTF-8. Text in
// other scripts is mostly such runs, which are checked here in one go rather
// than one rune per copyPlain call.
func copyRunes(dst []byte, s string) (int, bool) {
	i := 0
	for i < len(s) && s[i] >= utf8.RuneSelf {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return 0, false
		}
		i += size
	}
	return copy(dst, s[:i]), true
}

// copyPlainWords copies the plain bytes at the start of s (those written
// verbatim: not '"', '\\', a control byte or a byte >= 0x80) to the same
// places in dst and returns how many there are; it may also copy later bytes
// of s to their places, and writes nothing else. len(dst) >= len(s).
//
// It goes eight bytes at a time, storing each word before checking it, so a
// plain run costs no second pass to copy it.
func copyPlainWords(dst []byte, s string) int {
	dst = dst[:len(s)]
	i := 0
	for ; i+8 <= len(s); i += 8 {
		w := load8(s, i)
		binary.LittleEndian.PutUint64(dst[i:], w)
		if m := plainMask(w); m != 0 {
			// The lowest flagged byte is always a true special byte: a
			// borrow only moves upward from one.
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	if i == len(s) {
		return i
	}
	if len(s) < 8 {
		for ; i < len(s); i++ {
			c := s[i]
			if c >= utf8.RuneSelf || shortEscape[c] != 0 {
				break
			}
			dst[i] = c
		}
		return i
	}
	// Fewer than eight bytes are left: handle the last word of s instead.
	// Its bytes before i are plain (so no borrow starts there) and already
	// copied to the same places.
	last := len(s) - 8
	w := load8(s, last)
	binary.LittleEndian.PutUint64(dst[last:], w)
	m := plainMask(w) >> (8 * (i - last))
	if m == 0 {
		return len(s)
	}
	return i + bits.TrailingZeros64(m)>>3
}

const (
	lowBits  = 0x0101010101010101
	highBits = 0x8080808080808080
)

// load8 reads s[i:i+8] as a little-endian word.
func load8(s string, i int) uint64 {
	b := s[i : i+8]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

// plainMask has a high bit set in the byte of every byte of w that is not
// copied verbatim (>= 0x80, < 0x20, '"' or '\\'), and possibly in bytes above
// the lowest such byte; it is zero when all eight bytes are plain.
func plainMask(w uint64) uint64 {
	below20 := (w - lowBits*0x20) &^ w
	quote := hasZeroByte(w ^ (lowBits * '"'))
	backslash := hasZeroByte(w ^ (lowBits * '\\'))
	return (w | below20 | quote | backslash) & highBits
}

// hasZeroByte has a high bit set in some byte exactly when some byte of v is
// zero; callers mask with highBits.
func hasZeroByte(v uint64) uint64 { return (v - lowBits) &^ v }
