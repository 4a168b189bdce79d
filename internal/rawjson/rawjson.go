// Package rawjson appends a json.RawMessage exactly as encoding/json.Marshal
// writes it, without re-scanning embedded JSON that Cairn produced itself.
//
// encoding/json validates and compacts every json.RawMessage it encodes.
// AppendRaw produces the same bytes (HTML escaping included) and falls back
// to json.Marshal whenever a value needs any rewriting, so the fast path
// never changes what is written.
package rawjson

import "encoding/json"

// AppendRaw appends the JSON value raw as json.Marshal encodes a
// json.RawMessage: "null" when empty; raw itself when it is already compact
// and needs no HTML escaping; otherwise whatever json.Marshal makes of it
// (compacted and escaped, or its error for invalid JSON).
func AppendRaw(dst []byte, raw []byte) ([]byte, error) {
	if len(raw) == 0 {
		return append(dst, "null"...), nil
	}
	if plain(raw) {
		return append(dst, raw...), nil
	}
	b, err := json.Marshal(json.RawMessage(raw))
	if err != nil {
		return dst, err
	}
	return append(dst, b...), nil
}

// plain reports whether raw has no insignificant whitespace and nothing
// json.Marshal escapes for HTML ('<', '>', '&', U+2028, U+2029). It does
// not validate; a raw value that is not plain goes through json.Marshal,
// which does.
func plain(raw []byte) bool {
	if c := raw[0]; c != '{' && c != '[' && c != '"' && c != 't' && c != 'f' && c != 'n' && c != '-' && (c < '0' || c > '9') {
		return false
	}
	inString := false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if special[c] == 0 {
			continue
		}
		switch {
		case c == '<' || c == '>' || c == '&':
			return false
		case c == 0xE2:
			if i+2 < len(raw) && raw[i+1] == 0x80 && raw[i+2]&^1 == 0xA8 {
				return false
			}
		case inString:
			if c == '\\' {
				i++
			} else if c == '"' {
				inString = false
			}
		case c == '"':
			inString = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			return false
		}
	}
	return !inString
}

// special marks the bytes plain must look at; every other byte is skipped.
var special = func() (t [256]byte) {
	for _, c := range []byte{'<', '>', '&', 0xE2, '\\', '"', ' ', '\t', '\n', '\r'} {
		t[c] = 1
	}
	return t
}()
