package canonical

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
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
	d := getDecoder(data)
	v, err := d.document()
	putDecoder(d)
	return v, err
}

// decoder holds one Decode's position and the scratch space it reuses while
// building values. Decoders are pooled, so the scratch and the caches of
// short strings outlive one call. The scratch never ends up in a result; the
// cached strings do, shared between results, which immutability makes safe.
type decoder struct {
	data []byte
	pos  int

	// members and elems are stacks of the members of the objects and the
	// elements of the arrays still being decoded, innermost last. Collecting
	// them first means each map and slice is allocated once, at its size.
	// (member is shared with the encoder, which stacks members to write.)
	members []member
	elems   []any
	// unescaped receives the text of strings with escapes.
	unescaped []byte

	keys    shortStrings
	strings shortValues[string]
	numbers shortValues[json.Number]
}

// decoderPool keeps decoders with their stacks and string caches: kept by
// the speed rule (docs/architecture.md, "Speed work") on
// BenchmarkFairProcessor/generated=100 (internal/consumer).
var decoderPool = sync.Pool{New: func() any { return new(decoder) }}

func getDecoder(data []byte) *decoder {
	d := decoderPool.Get().(*decoder)
	d.data, d.pos = data, 0
	return d
}

func putDecoder(d *decoder) {
	d.dropReferences()
	if cap(d.unescaped) > maxPooledBuffer || cap(d.members) > maxPooledBuffer/32 || cap(d.elems) > maxPooledBuffer/16 {
		return // grown for one huge input; let it go
	}
	decoderPool.Put(d)
}

// dropReferences forgets the input and the decoded values still stacked (a
// failed Decode leaves members and elements behind; popped ones were cleared
// as they went), so a pooled decoder pins neither.
func (d *decoder) dropReferences() {
	d.data = nil
	clear(d.members)
	clear(d.elems)
	d.members, d.elems, d.unescaped = d.members[:0], d.elems[:0], d.unescaped[:0]
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
		return d.stringValue()
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

// openObject tracks the members of an object being decoded: on the members
// stack from base while there are few, in big once there are many.
type openObject struct {
	base int
	// seen has bit keyBit(k) set for every key k so far, so most keys are
	// known to be new without comparing them to the others.
	seen uint64
	big  map[string]any
}

// stackedMembersMax bounds the members kept on the stack, where a duplicate
// check compares keys; past it an object's members move to a map, keeping
// the work linear in the number of members.
const stackedMembersMax = 32

func (d *decoder) object(depth int) (any, error) {
	d.pos++ // '{'
	d.skipSpace()
	if d.pos < len(d.data) && d.data[d.pos] == '}' {
		d.pos++
		return map[string]any{}, nil
	}
	o := openObject{base: len(d.members)}
	for {
		d.skipSpace()
		if d.pos >= len(d.data) || d.data[d.pos] != '"' {
			return nil, d.fail("expected a string object key")
		}
		keyAt := d.pos
		key, err := d.key()
		if err != nil {
			return nil, err
		}
		if d.hasKey(&o, key) {
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
		d.addMember(&o, key, v)
		d.skipSpace()
		if d.pos >= len(d.data) {
			return nil, d.fail("unterminated object")
		}
		switch d.data[d.pos] {
		case ',':
			d.pos++
		case '}':
			d.pos++
			return d.closeObject(&o), nil
		default:
			return nil, d.fail("expected ',' or '}' in an object")
		}
	}
}

// hasKey reports whether the open object already has key.
func (d *decoder) hasKey(o *openObject, key string) bool {
	if o.big != nil {
		_, dup := o.big[key]
		return dup
	}
	if o.seen&keyBit(key) == 0 {
		return false
	}
	for _, m := range d.members[o.base:] {
		if m.key == key {
			return true
		}
	}
	return false
}

// addMember adds a member with a new key to the open object, moving its
// members to a map when there get to be many.
func (d *decoder) addMember(o *openObject, key string, v any) {
	if o.big != nil {
		o.big[key] = v
		return
	}
	o.seen |= keyBit(key)
	d.members = append(d.members, member{key, v})
	if len(d.members)-o.base > stackedMembersMax {
		o.big = make(map[string]any, 2*stackedMembersMax)
		d.moveMembers(o.base, o.big)
	}
}

// closeObject returns the finished object's map.
func (d *decoder) closeObject(o *openObject) map[string]any {
	if o.big != nil {
		return o.big
	}
	m := make(map[string]any, len(d.members)-o.base)
	d.moveMembers(o.base, m)
	return m
}

// moveMembers pops the members stacked from base into m.
func (d *decoder) moveMembers(base int, m map[string]any) {
	for _, mb := range d.members[base:] {
		m[mb.key] = mb.value
	}
	clear(d.members[base:])
	d.members = d.members[:base]
}

// keyBit maps a key to one of 64 bits by its length and end bytes, which
// tell apart the keys of typical objects.
func keyBit(key string) uint64 {
	h := uint(len(key))
	if len(key) > 0 {
		h = h*31 + uint(key[0])*7 + uint(key[len(key)-1])
	}
	return 1 << (h & 63)
}

func (d *decoder) array(depth int) (any, error) {
	d.pos++ // '['
	d.skipSpace()
	if d.pos < len(d.data) && d.data[d.pos] == ']' {
		d.pos++
		return emptyArray, nil
	}
	base := len(d.elems)
	for {
		d.skipSpace()
		v, err := d.value(depth + 1)
		if err != nil {
			return nil, err
		}
		d.elems = append(d.elems, v)
		d.skipSpace()
		if d.pos >= len(d.data) {
			return nil, d.fail("unterminated array")
		}
		switch d.data[d.pos] {
		case ',':
			d.pos++
		case ']':
			d.pos++
			return d.closeArray(base), nil
		default:
			return nil, d.fail("expected ',' or ']' in an array")
		}
	}
}

// emptyArray is every decoded [], boxed once: a slice with no capacity
// cannot be written through, so sharing it is safe, and boxing a fresh one
// would allocate for each.
var emptyArray any = []any{}

// closeArray pops the elements stacked from base into a slice of their own.
func (d *decoder) closeArray(base int) []any {
	list := make([]any, len(d.elems)-base)
	copy(list, d.elems[base:])
	clear(d.elems[base:])
	d.elems = d.elems[:base]
	return list
}

func (d *decoder) number() (any, error) {
	n := numberLen(d.data[d.pos:])
	if n == 0 {
		return nil, d.fail("invalid number")
	}
	text := d.data[d.pos : d.pos+n]
	if !isIntegerText(text) {
		if _, err := strconv.ParseFloat(string(text), 64); err != nil {
			return nil, d.fail("number does not fit a binary64 float")
		}
	}
	d.pos += n
	return d.numbers.intern(text), nil
}

// isIntegerText reports whether number text has neither fraction nor
// exponent.
func isIntegerText(text []byte) bool {
	for _, c := range text {
		if c == '.' || c == 'e' || c == 'E' {
			return false
		}
	}
	return true
}

// key parses an object key at d.pos, which must be '"'.
func (d *decoder) key() (string, error) {
	text, err := d.quoted()
	if err != nil {
		return "", err
	}
	return d.keys.intern(text), nil
}

// stringValue parses a string value at d.pos, which must be '"'.
func (d *decoder) stringValue() (any, error) {
	text, err := d.quoted()
	if err != nil {
		return nil, err
	}
	return d.strings.intern(text), nil
}

// quoted parses a quoted string at d.pos, which must be '"', and returns its
// unescaped text: a slice of the input when there are no escapes, else of
// d.unescaped. Either is only valid until the next string.
func (d *decoder) quoted() ([]byte, error) {
	d.pos++ // opening quote
	start := d.pos
	var valid bool
	d.pos, valid = scanPlain(d.data, start)
	if d.pos < len(d.data) && d.data[d.pos] == '"' {
		if !valid {
			return nil, invalidUTF8(start)
		}
		d.pos++
		return d.data[start : d.pos-1], nil
	}
	return d.unescape(start, valid)
}

func invalidUTF8(start int) error {
	return &DecodeError{Offset: start, Reason: "string is not valid UTF-8", Err: ErrInvalidJSON}
}

// unescape continues a string that starts at start and has an escape or a
// control byte at d.pos. Its UTF-8 is checked run by run between escapes:
// escapes always produce whole characters, so the text is valid exactly when
// every run is, and an invalid run is reported (as the whole string's error)
// only once the string has otherwise parsed.
func (d *decoder) unescape(start int, valid bool) ([]byte, error) {
	out := append(d.unescaped[:0], d.data[start:d.pos]...)
	for d.pos < len(d.data) {
		switch c := d.data[d.pos]; {
		case c == '"':
			d.pos++
			d.unescaped = out
			if !valid {
				return nil, invalidUTF8(start)
			}
			return out, nil
		case c == '\\':
			var err error
			if out, err = d.escape(out); err != nil {
				return nil, err
			}
		default:
			return nil, d.fail("control character in string")
		}
		run := d.pos
		var runValid bool
		d.pos, runValid = scanPlain(d.data, run)
		valid = valid && runValid
		out = append(out, d.data[run:d.pos]...)
	}
	d.unescaped = out
	return nil, d.fail("unterminated string")
}

// scanPlain returns the index of the first byte from i that ends a plain run
// of string text ('"', '\\' or a control byte), or len(data), and whether the
// run is valid UTF-8. A character cannot straddle the end of the run, since
// the bytes that end it are ASCII.
func scanPlain(data []byte, i int) (end int, valid bool) {
	valid = true
	for i < len(data) {
		switch c := data[i]; {
		case c == '"' || c == '\\' || c < 0x20:
			return i, valid
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && size == 1 {
				valid = false
			}
			i += size
		}
	}
	return i, valid
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

func (d *decoder) hex4(at int) (rune, bool) {
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

// unescapes maps the letter of each two-byte escape to the byte it stands
// for; zero means the letter is not one.
var unescapes = [256]byte{
	'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t',
}
