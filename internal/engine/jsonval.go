package engine

import (
	"encoding/json"
	"math"
	"sort"
	"strings"

	"github.com/cairnhq/cairn/canonical"
	"github.com/cairnhq/cairn/errcode"
)

// Values decoded from untrusted JSON (canonical.Decode) are nil, bool,
// json.Number, string, []any and map[string]any. The helpers below read them
// without panicking; Go-built values (int, int64, float64) are accepted too so
// that callers can build requests in code.

// isHash64 reports whether s is 64 lowercase hex digits.
func isHash64(s string) bool {
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

// asStringList returns v as a list of strings, or false if it is not one.
func asStringList(v any) ([]string, bool) {
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

// unknownKeys returns the keys of m that are not in known, sorted.
func unknownKeys(m map[string]any, known map[string]bool) []string {
	var out []string
	for k := range m {
		if !known[k] {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// keySet builds a lookup set from names.
func keySet(names ...string) map[string]bool {
	s := make(map[string]bool, len(names))
	for _, n := range names {
		s[n] = true
	}
	return s
}

// stringsToAny converts a string list to a generic list for canonical maps.
func stringsToAny(list []string) []any {
	out := make([]any, len(list))
	for i, s := range list {
		out[i] = s
	}
	return out
}

// ptr returns a pointer to a copy of v.
func ptr[T any](v T) *T { return &v }

// floorRatio is floor(limit × ratio) as the contract computes it.
func floorRatio(limit int64, ratio float64) int64 {
	return int64(math.Floor(float64(limit) * ratio))
}

// plainValue is v as encoding/json writes it (its json tags name the
// members), decoded back into a canonical value: one path instead of a
// hand-written map per type. canonical.Decode keeps numbers as the text
// encoding/json wrote, which round-trips, so the canonical bytes are those
// of the typed values.
func plainValue(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return canonical.Decode(b)
}

// maxEchoBytes bounds a string value echoed back in error details: a
// failed event must stay small whatever the request held.
const maxEchoBytes = 256

// echoValue returns v for error details: numbers and booleans as they are,
// strings cut to maxEchoBytes, and objects or lists by their JSON type only.
func echoValue(v any) any {
	switch x := v.(type) {
	case string:
		if len(x) > maxEchoBytes {
			return strings.ToValidUTF8(x[:maxEchoBytes], "") + "…"
		}
		return x
	case map[string]any:
		return "(object)"
	case []any:
		return "(array)"
	}
	return v
}

func readInt(m map[string]any, key string, dst *int64) bool {
	raw, present := m[key]
	if !present {
		return true
	}
	n, ok := canonical.Int(raw)
	*dst = n
	return ok
}

func readIntPtr(m map[string]any, key string, dst **int64) bool {
	raw, present := m[key]
	if !present || raw == nil {
		return true
	}
	n, ok := canonical.Int(raw)
	*dst = &n
	return ok
}

func readStringPtr(m map[string]any, key string, dst **string) bool {
	raw, present := m[key]
	if !present || raw == nil {
		return true
	}
	s, ok := raw.(string)
	*dst = &s
	return ok
}

// stateFieldError is an invalid_compaction_state naming the field and the
// rule it broke.
func stateFieldError(message, field, rule string) *errcode.Error {
	return errcode.Field(errcode.InvalidState, message, field, rule)
}
