package canonical

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// ErrInvalidJSON reports input that is not a single well-formed JSON value in
// the canonical domain (syntax errors, invalid UTF-8, trailing data, numbers
// outside binary64, nesting deeper than MaxDepth).
var ErrInvalidJSON = errors.New("invalid JSON")

// ErrDuplicateKey reports an object that names the same key twice (after
// unescaping), at any depth.
var ErrDuplicateKey = errors.New("duplicate object key")

// DecodeError describes where and why Decode rejected its input. It unwraps to
// ErrInvalidJSON or ErrDuplicateKey.
type DecodeError struct {
	Offset int // byte offset of the problem in the input
	Reason string
	Err    error // ErrInvalidJSON or ErrDuplicateKey
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("canonical: %v at byte %d: %s", e.Err, e.Offset, e.Reason)
}

// Unwrap returns the sentinel classifying the error.
func (e *DecodeError) Unwrap() error { return e.Err }

// Decode parses untrusted JSON strictly into the canonical value domain:
// objects become map[string]any, arrays []any, numbers json.Number (so
// integers and floats stay distinct), strings string, booleans bool and null
// nil. It rejects duplicate keys at any depth (ErrDuplicateKey), invalid
// UTF-8, unpaired surrogate escapes, trailing data, numbers that overflow
// binary64 and nesting deeper than MaxDepth (ErrInvalidJSON). Every value it
// returns is accepted by Encode. It never panics; its work is linear in the
// input length.
func Decode(data []byte) (any, error) {
	d := decoder{data: data}
	return d.document()
}

// decoder holds one Decode's input and position.
type decoder struct {
	data []byte
	pos  int
}

// document parses the whole input as one value.
func (d *decoder) document() (any, error) {
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

func (d *decoder) fail(reason string) error {
	return &DecodeError{Offset: d.pos, Reason: reason, Err: ErrInvalidJSON}
}

func (d *decoder) skipSpace() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

func (d *decoder) value(depth int) (any, error) {
	if depth > MaxDepth {
		return nil, d.fail(fmt.Sprintf("nesting deeper than %d levels", MaxDepth))
	}
	if d.pos >= len(d.data) {
		return nil, d.fail("unexpected end of input")
	}
	switch c := d.data[d.pos]; {
	case c == '"':
		return d.string()
	case c == '{':
		return d.object(depth)
	case c == '[':
		return d.array(depth)
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

func (d *decoder) literal(word string) error {
	if len(d.data)-d.pos < len(word) || string(d.data[d.pos:d.pos+len(word)]) != word {
		return d.fail("invalid literal")
	}
	d.pos += len(word)
	return nil
}

func (d *decoder) object(depth int) (any, error) {
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

func (d *decoder) array(depth int) (any, error) {
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

func (d *decoder) number() (any, error) {
	n := numberLen(d.data[d.pos:])
	if n == 0 {
		return nil, d.fail("invalid number")
	}
	text := string(d.data[d.pos : d.pos+n])
	if isInt, _ := scanNumber(text); !isInt {
		if _, err := strconv.ParseFloat(text, 64); err != nil {
			return nil, d.fail("number does not fit a binary64 float")
		}
	}
	d.pos += n
	return json.Number(text), nil
}

// string parses a quoted string at d.pos, which must be '"'. Escapes
// always produce whole characters, so the text is valid UTF-8 exactly when
// its unescaped form is; an invalid string is reported at its start, once it
// has otherwise parsed.
func (d *decoder) string() (string, error) {
	d.pos++ // opening quote
	start := d.pos
	var out []byte
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
func (d *decoder) escape(out []byte) ([]byte, error) {
	if d.pos+1 >= len(d.data) {
		return nil, d.fail("unterminated escape")
	}
	c := d.data[d.pos+1]
	if simple := unescapes[c]; simple != 0 {
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
func (d *decoder) lowSurrogate() (rune, bool) {
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

// hex4 reads the four hex digits of a \u escape at at.
func (d *decoder) hex4(at int) (rune, bool) {
	if at+4 > len(d.data) {
		return 0, false
	}
	r, err := strconv.ParseUint(string(d.data[at:at+4]), 16, 16)
	return rune(r), err == nil
}

// unescapes maps the letter of each two-byte escape to the byte it stands
// for; zero means the letter is not one.
var unescapes = [256]byte{
	'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t',
}
