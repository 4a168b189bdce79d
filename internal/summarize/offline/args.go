package offline

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"
)

// callArgs are the arguments of a tool call this package reads: the first
// non-empty string among the keys of each field, in the order listed.
type callArgs struct {
	command string // command, cmd
	path    string // path, file, file_path, filename
	target  string // path as above, else url, query, pattern: what a label names
}

// argKeys are the argument keys read, in order of preference; the indexes
// below name the groups of callArgs.
var argKeys = [...]string{"command", "cmd", "path", "file", "file_path", "filename", "url", "query", "pattern"}

const (
	argsCommand = 0 // argKeys[0:2]
	argsPath    = 2 // argKeys[2:6]
	argsOther   = 6 // argKeys[6:]
)

// argIndex returns the index of key in argKeys, or -1.
func argIndex(key string) int {
	for i, k := range argKeys {
		if k == key {
			return i
		}
	}
	return -1
}

// argValues holds the string value of each key of argKeys, "" when absent,
// empty or not a string.
type argValues [len(argKeys)]string

func (v *argValues) args() callArgs {
	first := func(from, to int) string {
		for _, s := range v[from:to] {
			if s != "" {
				return s
			}
		}
		return ""
	}
	a := callArgs{command: first(argsCommand, argsPath), path: first(argsPath, argsOther)}
	a.target = a.path
	if a.target == "" {
		a.target = first(argsOther, len(argKeys))
	}
	return a
}

// maxArgumentBytes bounds the JSON text of arguments this package parses.
const maxArgumentBytes = 64 << 10

// arguments reads a call's arguments: model APIs carry them as JSON text,
// some hosts as an object. Anything else, or text that is not a JSON
// object, has none.
func arguments(v any) callArgs {
	switch x := v.(type) {
	case map[string]any:
		return argumentsOf(x)
	case string:
		if len(x) > maxArgumentBytes {
			return callArgs{}
		}
		if a, ok := scanArguments(x); ok {
			return a
		}
		var m map[string]any
		if json.Unmarshal([]byte(x), &m) == nil {
			return argumentsOf(m)
		}
	}
	return callArgs{}
}

// argumentsOf reads the arguments from a decoded object.
func argumentsOf(m map[string]any) callArgs {
	var v argValues
	for i, k := range argKeys {
		v[i], _ = m[k].(string)
	}
	return v.args()
}

// scanArguments reads the arguments from the JSON text of an object without
// decoding all of it into a map, which costs an allocation per key and value.
// It reads what json.Unmarshal into a map would give, the last of duplicate
// keys winning, and reports false, for the caller to decode the text in full,
// whenever that is not plain: text that is not a valid JSON object, a number
// that does not fit a float64 (Unmarshal fails on it), or a key or wanted
// string value with an escape or invalid UTF-8 (Unmarshal rewrites them).
func scanArguments(text string) (callArgs, bool) {
	if !json.Valid([]byte(text)) {
		return callArgs{}, false
	}
	s := jsonScanner{text: text}
	if s.skipSpace(); !s.consume('{') {
		return callArgs{}, false
	}
	var v argValues
	for s.skipSpace(); !s.consume('}'); s.skipSpace() {
		s.consume(',')
		s.skipSpace()
		key, plain := s.str()
		if !plain {
			return callArgs{}, false
		}
		s.skipSpace()
		s.consume(':')
		s.skipSpace()
		i := argIndex(key)
		if i < 0 || s.peek() != '"' {
			if !s.skipValue() {
				return callArgs{}, false
			}
			if i >= 0 {
				v[i] = ""
			}
			continue
		}
		if v[i], plain = s.str(); !plain || !utf8.ValidString(v[i]) {
			return callArgs{}, false
		}
	}
	return v.args(), true
}

// jsonScanner walks JSON text that json.Valid accepted, so it needs no
// syntax checks of its own.
type jsonScanner struct {
	text string
	i    int
}

func (s *jsonScanner) peek() byte { return s.text[s.i] }

func (s *jsonScanner) skipSpace() {
	for s.i < len(s.text) {
		switch s.text[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// consume skips c if it is next.
func (s *jsonScanner) consume(c byte) bool {
	if s.i < len(s.text) && s.text[s.i] == c {
		s.i++
		return true
	}
	return false
}

// str reads the string that starts at the scanner; plain is false when it
// holds an escape, and the string returned is then its raw text.
func (s *jsonScanner) str() (raw string, plain bool) {
	start := s.i + 1
	plain = true
	for s.i = start; s.text[s.i] != '"'; s.i++ {
		if s.text[s.i] == '\\' {
			plain = false
			s.i++ // the escaped byte is never the closing quote
		}
	}
	s.i++
	return s.text[start : s.i-1], plain
}

// skipValue skips the value that starts at the scanner; it reports false
// for a number that does not fit a float64, anywhere in the value.
func (s *jsonScanner) skipValue() bool {
	depth := 0
	for {
		switch c := s.text[s.i]; {
		case c == '"':
			s.str()
		case c == '{' || c == '[':
			depth++
			s.i++
		case c == '}' || c == ']':
			depth--
			s.i++
		case c == '-' || c >= '0' && c <= '9':
			start := s.i
			for s.i < len(s.text) && strings.IndexByte("+-.eE0123456789", s.text[s.i]) >= 0 {
				s.i++
			}
			if _, err := strconv.ParseFloat(s.text[start:s.i], 64); err != nil {
				return false
			}
		default: // white space, separators and the letters of true, false, null
			s.i++
		}
		if depth == 0 && s.i < len(s.text) && (s.text[s.i] == ',' || s.text[s.i] == '}') || s.i == len(s.text) {
			return true
		}
	}
}
