package jsonwire

import (
	"sort"
	"strings"
	"unicode/utf8"
)

// IsHash64 reports whether s is 64 lowercase hex digits.
func IsHash64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := range len(s) {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// StringList returns v as a list of strings, or false if it is not one.
func StringList(v any) ([]string, bool) {
	switch x := v.(type) {
	case []string:
		return x, true
	case []any:
		out := make([]string, 0, len(x))
		for _, el := range x {
			s, ok := el.(string)
			if !ok {
				return nil, false
			}
			out = append(out, s)
		}
		return out, true
	}
	return nil, false
}

// UnknownKeys returns the keys of m that are not in known, sorted.
func UnknownKeys(m map[string]any, known map[string]bool) []string {
	var out []string
	for k := range m {
		if !known[k] {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// KeySet builds a lookup set from names.
func KeySet(names ...string) map[string]bool {
	s := make(map[string]bool, len(names))
	for _, n := range names {
		s[n] = true
	}
	return s
}

// StringsToAny converts a string list to a generic list for canonical maps.
func StringsToAny(list []string) []any {
	out := make([]any, len(list))
	for i, s := range list {
		out[i] = s
	}
	return out
}

// MaxEchoBytes bounds a string value echoed back in error details: a
// failed event must stay small whatever the request held.
const MaxEchoBytes = 256

// Echo returns v for error details: numbers and booleans as they are,
// strings cut to MaxEchoBytes, and objects or lists by their JSON type only.
func Echo(v any) any {
	switch x := v.(type) {
	case string:
		if len(x) > MaxEchoBytes {
			return strings.ToValidUTF8(x[:MaxEchoBytes], "") + "…"
		}
		return x
	case map[string]any:
		return "(object)"
	case []any:
		return "(array)"
	}
	return v
}

// TruncateUTF8 returns s when it has at most limit bytes, else its longest
// prefix of whole characters that leaves room for the "…" marker, and the
// marker.
func TruncateUTF8(s string, limit int) string {
	const marker = "…"
	if len(s) <= limit {
		return s
	}
	cut := max(limit-len(marker), 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + marker
}
