package canonical

import (
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// referenceDecode is Decode as it was before it was tuned for speed, kept
// verbatim but for names so tests can check that the two agree on every
// input: the same values and the same errors.
func referenceDecode(data []byte) (any, error) {
	d := referenceDecoder{data: data}
	d.skipSpace()
	v, err := d.value(0)
	if err != nil {
		return nil, err
	}
	d.skipSpace()
	if d.pos != len(d.data) {
		return nil, d.fail("unexpected data after the JSON value")
	}
	return v, nil
}

type referenceDecoder struct {
	data []byte
	pos  int
}

func (d *referenceDecoder) fail(reason string) error {
	return &DecodeError{Offset: d.pos, Reason: reason, Err: ErrInvalidJSON}
}

func (d *referenceDecoder) skipSpace() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

func (d *referenceDecoder) value(depth int) (any, error) {
	if depth > MaxDepth {
		return nil, d.fail(fmt.Sprintf("nesting deeper than %d levels", MaxDepth))
	}
	if d.pos >= len(d.data) {
		return nil, d.fail("unexpected end of input")
	}
	switch c := d.data[d.pos]; {
	case c == '{':
		return d.object(depth)
	case c == '[':
		return d.array(depth)
	case c == '"':
		return d.string()
	case c == 't':
		return true, d.literal("true")
	case c == 'f':
		return false, d.literal("false")
	case c == 'n':
		return nil, d.literal("null")
	case c == '-' || isDigit(c):
		return d.number()
	default:
		return nil, d.fail(fmt.Sprintf("unexpected character %q", c))
	}
}

func (d *referenceDecoder) literal(word string) error {
	if len(d.data)-d.pos < len(word) || string(d.data[d.pos:d.pos+len(word)]) != word {
		return d.fail("invalid literal")
	}
	d.pos += len(word)
	return nil
}

func (d *referenceDecoder) object(depth int) (any, error) {
	d.pos++ // '{'
	m := map[string]any{}
	d.skipSpace()
	if d.pos < len(d.data) && d.data[d.pos] == '}' {
		d.pos++
		return m, nil
	}
	for {
		d.skipSpace()
		if d.pos >= len(d.data) || d.data[d.pos] != '"' {
			return nil, d.fail("expected a string object key")
		}
		keyAt := d.pos
		key, err := d.string()
		if err != nil {
			return nil, err
		}
		if _, dup := m[key]; dup {
			return nil, &DecodeError{Offset: keyAt, Reason: fmt.Sprintf("key %q appears twice", truncate(key)), Err: ErrDuplicateKey}
		}
		d.skipSpace()
		if d.pos >= len(d.data) || d.data[d.pos] != ':' {
			return nil, d.fail("expected ':' after an object key")
		}
		d.pos++
		d.skipSpace()
		v, err := d.value(depth + 1)
		if err != nil {
			return nil, err
		}
		m[key] = v
		d.skipSpace()
		if d.pos >= len(d.data) {
			return nil, d.fail("unterminated object")
		}
		switch d.data[d.pos] {
		case ',':
			d.pos++
		case '}':
			d.pos++
			return m, nil
		default:
			return nil, d.fail("expected ',' or '}' in an object")
		}
	}
}

func (d *referenceDecoder) array(depth int) (any, error) {
	d.pos++ // '['
	list := []any{}
	d.skipSpace()
	if d.pos < len(d.data) && d.data[d.pos] == ']' {
		d.pos++
		return list, nil
	}
	for {
		d.skipSpace()
		v, err := d.value(depth + 1)
		if err != nil {
			return nil, err
		}
		list = append(list, v)
		d.skipSpace()
		if d.pos >= len(d.data) {
			return nil, d.fail("unterminated array")
		}
		switch d.data[d.pos] {
		case ',':
			d.pos++
		case ']':
			d.pos++
			return list, nil
		default:
			return nil, d.fail("expected ',' or ']' in an array")
		}
	}
}

func (d *referenceDecoder) number() (any, error) {
	n := referenceNumberLen(d.data[d.pos:])
	if n == 0 {
		return nil, d.fail("invalid number")
	}
	text := string(d.data[d.pos : d.pos+n])
	isInt, _ := referenceScanNumber(text)
	if !isInt {
		if _, err := strconv.ParseFloat(text, 64); err != nil {
			return nil, d.fail("number does not fit a binary64 float")
		}
	}
	d.pos += n
	return json.Number(text), nil
}

// string parses a quoted string at d.pos, which must be '"'.
func (d *referenceDecoder) string() (string, error) {
	d.pos++ // opening quote
	start := d.pos
	// Fast path: no escapes, all ASCII or valid UTF-8.
	for d.pos < len(d.data) {
		c := d.data[d.pos]
		if c == '"' {
			s := d.data[start:d.pos]
			if !utf8.Valid(s) {
				return "", &DecodeError{Offset: start, Reason: "string is not valid UTF-8", Err: ErrInvalidJSON}
			}
			d.pos++
			return string(s), nil
		}
		if c == '\\' || c < 0x20 {
			break
		}
		d.pos++
	}
	return d.slowString(start)
}

// slowString continues a string that contains escapes or control bytes,
// copying the plain runs between escapes in bulk.
func (d *referenceDecoder) slowString(start int) (string, error) {
	out := make([]byte, 0, d.pos-start+64)
	out = append(out, d.data[start:d.pos]...)
	for d.pos < len(d.data) {
		run := d.pos
		for d.pos < len(d.data) {
			if c := d.data[d.pos]; c == '"' || c == '\\' || c < 0x20 {
				break
			}
			d.pos++
		}
		out = append(out, d.data[run:d.pos]...)
		if d.pos >= len(d.data) {
			break
		}
		switch c := d.data[d.pos]; {
		case c == '"':
			d.pos++
			if !utf8.Valid(out) {
				return "", &DecodeError{Offset: start, Reason: "string is not valid UTF-8", Err: ErrInvalidJSON}
			}
			return string(out), nil
		case c == '\\':
			var err error
			if out, err = d.escape(out); err != nil {
				return "", err
			}
		default:
			return "", d.fail("control character in string")
		}
	}
	return "", d.fail("unterminated string")
}

// escape decodes one escape sequence at d.pos and appends its UTF-8 bytes.
func (d *referenceDecoder) escape(out []byte) ([]byte, error) {
	if d.pos+1 >= len(d.data) {
		return nil, d.fail("unterminated escape")
	}
	c := d.data[d.pos+1]
	if simple, ok := referenceUnescapes[c]; ok {
		d.pos += 2
		return append(out, simple), nil
	}
	if c != 'u' {
		return nil, d.fail("invalid escape")
	}
	r, ok := d.hex4(d.pos + 2)
	if !ok {
		return nil, d.fail("invalid \\u escape")
	}
	d.pos += 6
	if utf16.IsSurrogate(r) {
		lo, ok := d.lowSurrogate()
		if !ok {
			return nil, d.fail("unpaired surrogate in \\u escape")
		}
		r = utf16.DecodeRune(r, lo)
		if r == utf8.RuneError {
			return nil, d.fail("unpaired surrogate in \\u escape")
		}
	}
	return utf8.AppendRune(out, r), nil
}

// lowSurrogate consumes a following \uXXXX escape, if there is one.
func (d *referenceDecoder) lowSurrogate() (rune, bool) {
	if d.pos+1 >= len(d.data) || d.data[d.pos] != '\\' || d.data[d.pos+1] != 'u' {
		return 0, false
	}
	r, ok := d.hex4(d.pos + 2)
	if !ok {
		return 0, false
	}
	d.pos += 6
	return r, true
}

func (d *referenceDecoder) hex4(at int) (rune, bool) {
	if at+4 > len(d.data) {
		return 0, false
	}
	var r rune
	for _, c := range d.data[at : at+4] {
		var v byte
		switch {
		case c >= '0' && c <= '9':
			v = c - '0'
		case c >= 'a' && c <= 'f':
			v = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			v = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(v)
	}
	return r, true
}

var referenceUnescapes = map[byte]byte{
	'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t',
}

// referenceScanNumber and referenceNumberLen are the number grammar the
// reference decoder used (scanNumber and numberLen in encode.go), copied so
// the reference stays fixed whatever becomes of those.
func referenceScanNumber(s string) (isInt, ok bool) {
	n := referenceNumberLen(s)
	if n != len(s) || n == 0 {
		return false, false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '.' || c == 'e' || c == 'E' {
			return false, true
		}
	}
	return true, true
}

func referenceNumberLen[T string | []byte](s T) int {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		i = referenceSkipDigits(s, i+1)
	default:
		return 0
	}
	if i+1 < len(s) && s[i] == '.' && isDigit(s[i+1]) {
		i = referenceSkipDigits(s, i+1)
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		j := i + 1
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		if j < len(s) && isDigit(s[j]) {
			i = referenceSkipDigits(s, j)
		}
	}
	return i
}

func referenceSkipDigits[T string | []byte](s T, i int) int {
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return i
}
