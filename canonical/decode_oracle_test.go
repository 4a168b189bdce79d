package canonical

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// oracleDecode states what Decode must return for data without sharing any
// of its code: encoding/json's tokenizer checks the grammar and decodes
// strings and numbers, and the rules of docs/canonical-json.md that
// encoding/json does not enforce are checked on its tokens, in document
// order: strings of valid UTF-8 without unpaired surrogate escapes, no key
// twice in an object, no value deeper than MaxDepth, and numbers that are
// integers or fit a binary64 float. Its error is the sentinel Decode's
// error must match: ErrInvalidJSON or ErrDuplicateKey.
func oracleDecode(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	o := oracle{data: data, dec: dec}
	v, err := o.value()
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, ErrInvalidJSON // more after the value
	}
	return v, nil
}

// oracle walks one document token by token.
type oracle struct {
	data  []byte
	dec   *json.Decoder
	depth int
}

// token returns the next token and the bytes it was read from (with the
// separators and white space before it), or ErrInvalidJSON.
func (o *oracle) token() (json.Token, []byte, error) {
	from := o.dec.InputOffset()
	tok, err := o.dec.Token()
	if err != nil {
		return nil, nil, ErrInvalidJSON // a syntax error, or the end of the input mid-value
	}
	raw := o.data[from:o.dec.InputOffset()]
	if !utf8.Valid(raw) {
		return nil, nil, ErrInvalidJSON
	}
	return tok, raw, nil
}

// value reads one value, at o.depth.
func (o *oracle) value() (any, error) {
	tok, raw, err := o.token()
	if err != nil {
		return nil, err
	}
	return o.valueFrom(tok, raw)
}

func (o *oracle) valueFrom(tok json.Token, raw []byte) (any, error) {
	if o.depth > MaxDepth {
		return nil, ErrInvalidJSON
	}
	switch t := tok.(type) {
	case json.Delim:
		if t == '{' {
			return o.object()
		}
		if t == '[' {
			return o.array()
		}
		return nil, ErrInvalidJSON
	case string:
		if unpairedSurrogate(raw) {
			return nil, ErrInvalidJSON
		}
		return t, nil
	case json.Number:
		if !isInteger(string(t)) {
			if _, err := strconv.ParseFloat(string(t), 64); err != nil {
				return nil, ErrInvalidJSON
			}
		}
		return t, nil
	}
	return tok, nil // true, false or nil
}

func (o *oracle) object() (any, error) {
	o.depth++
	defer func() { o.depth-- }()
	m := map[string]any{}
	for {
		tok, raw, err := o.token()
		if err != nil {
			return nil, err
		}
		if tok == json.Delim('}') {
			return m, nil
		}
		key, ok := tok.(string)
		if !ok || unpairedSurrogate(raw) {
			return nil, ErrInvalidJSON
		}
		if _, dup := m[key]; dup {
			return nil, ErrDuplicateKey
		}
		if m[key], err = o.value(); err != nil {
			return nil, err
		}
	}
}

func (o *oracle) array() (any, error) {
	o.depth++
	defer func() { o.depth-- }()
	list := []any{}
	for {
		tok, raw, err := o.token()
		if err != nil {
			return nil, err
		}
		if tok == json.Delim(']') {
			return list, nil
		}
		v, err := o.valueFrom(tok, raw)
		if err != nil {
			return nil, err
		}
		list = append(list, v)
	}
}

// isInteger reports whether a JSON number has neither fraction nor
// exponent.
func isInteger(n string) bool {
	return !strings.ContainsAny(n, ".eE")
}

// unpairedSurrogate reports whether the JSON string in raw (which
// encoding/json accepted, so every escape is well formed) has a \u escape
// of a UTF-16 surrogate that is not a high one followed at once by a low
// one. encoding/json decodes those to U+FFFD; Cairn refuses them.
func unpairedSurrogate(raw []byte) bool {
	s := raw[bytes.IndexByte(raw, '"'):]
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			continue
		}
		if s[i+1] != 'u' {
			i++ // a one-letter escape, \\ included
			continue
		}
		r := hexRune(s[i+2 : i+6])
		i += 5
		switch {
		case r >= 0xDC00 && r <= 0xDFFF:
			return true
		case r >= 0xD800 && r <= 0xDBFF:
			if i+6 >= len(s) || s[i+1] != '\\' || s[i+2] != 'u' {
				return true
			}
			if lo := hexRune(s[i+3 : i+7]); lo < 0xDC00 || lo > 0xDFFF {
				return true
			}
			i += 6
		}
	}
	return false
}

func hexRune(h []byte) rune {
	n, err := strconv.ParseUint(string(h), 16, 16)
	if err != nil {
		panic(errors.New("oracle: an escape encoding/json accepted is not hex: " + string(h)))
	}
	return rune(n)
}
