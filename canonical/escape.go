package canonical

import (
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

// string writes s quoted with OTP json escaping (see AppendString).
func (e *encoder) string(s string) error {
	var err error
	e.buf, err = AppendString(e.buf, s)
	return err
}

// AppendString appends s quoted with OTP json escaping, the canonical
// encoding of a string: only '"', '\\' and control characters are escaped
// (uppercase hex); everything else, including '/', DEL, U+2028 and U+2029,
// is copied verbatim. On error (invalid UTF-8, wrapping ErrNotCanonical)
// dst is returned unextended.
func AppendString(dst []byte, s string) ([]byte, error) {
	if !utf8.ValidString(s) {
		return dst, notCanonical("string is not valid UTF-8")
	}
	dst = slices.Grow(dst, len(s)+2)
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf || shortEscape[c] == 0 {
			continue
		}
		dst = appendEscape(append(dst, s[start:i]...), c)
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"'), nil
}

// AppendStrings appends the canonical encoding of list, nil as [].
func AppendStrings(dst []byte, list []string) ([]byte, error) {
	dst = append(dst, '[')
	for i, s := range list {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = AppendString(dst, s); err != nil {
			return dst, err
		}
	}
	return append(dst, ']'), nil
}

// AppendStringOrNull appends null for nil, else the encoding of *s.
func AppendStringOrNull(dst []byte, s *string) ([]byte, error) {
	if s == nil {
		return append(dst, "null"...), nil
	}
	return AppendString(dst, *s)
}

// appendEscape appends the escape of the ASCII byte c.
func appendEscape(dst []byte, c byte) []byte {
	if esc := shortEscape[c]; esc != 'u' {
		return append(dst, '\\', esc)
	}
	return append(dst, '\\', 'u', '0', '0', upperHex[c>>4], upperHex[c&0xF])
}
