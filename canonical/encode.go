// Package canonical encodes JSON values byte-exactly for hashing.
//
// The encoding is the identity behind every hash Cairn stores (content hashes,
// semantic hashes, provenance hashes): no insignificant whitespace, object
// members sorted by the bytes of their keys, OTP-style string escaping and
// Erlang "short" float formatting (docs/canonical-json.md).
package canonical

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"math"
	"slices"
	"strconv"
)

// MaxDepth is the deepest level a value may sit at. The root is depth 0 and
// each array element or object value is one level deeper, so 33 nested
// containers are canonical and 34 are not.
const MaxDepth = 32

// maxValuerHops bounds how many CanonicalValue calls may be chained for one
// value, so a type whose CanonicalValue returns itself cannot loop forever.
const maxValuerHops = 8

// ErrNotCanonical reports a value outside the canonical domain: invalid UTF-8,
// nesting deeper than MaxDepth, NaN or infinite floats, malformed json.Number
// text, or an unsupported Go type.
var ErrNotCanonical = errors.New("value is not canonical JSON")

// Valuer is implemented by typed values (for example semantic.Semantic) that
// supply their plain canonical form. CanonicalValue must return a value of the
// canonical domain; it is called once per encoding.
type Valuer interface {
	CanonicalValue() any
}

// Raw is a value's canonical encoding, from Encode or AppendEncode, that an
// encoding containing the value takes as it is instead of encoding the value
// again. The encoder trusts it: bytes that did not come from this package
// make the output non-canonical. It marshals with encoding/json as the JSON
// it holds.
type Raw []byte

// MarshalJSON returns r itself.
func (r Raw) MarshalJSON() ([]byte, error) { return r, nil }

// Encode returns the canonical encoding of v. Any error wraps ErrNotCanonical.
func Encode(v any) ([]byte, error) {
	return AppendEncode(nil, v)
}

// AppendEncode appends the canonical encoding of v to dst and returns the
// extended slice. On error dst is returned unextended together with an error
// wrapping ErrNotCanonical.
func AppendEncode(dst []byte, v any) ([]byte, error) {
	e := getEncoder()
	defer putEncoder(e)
	// Encode straight into dst (no copy); the pooled buffer waits aside.
	own := e.buf
	e.buf = dst
	err := e.value(v, 0)
	out := e.buf
	e.buf = own
	if err != nil {
		return dst, err
	}
	return out, nil
}

// EncodedSize returns the byte length of the canonical encoding of v.
func EncodedSize(v any) (int, error) {
	e := getEncoder()
	defer putEncoder(e)
	if err := e.value(v, 0); err != nil {
		return 0, err
	}
	return len(e.buf), nil
}

// encoder holds the output buffer, a shared scratch area for sorting keys
// and the key orders of recent objects; all are reused through a pool.
type encoder struct {
	buf    []byte
	keys   []string
	pairs  []member
	orders keyOrders

	// pairsHigh is the most of pairs used since the encoder left the pool;
	// putEncoder clears that much.
	pairsHigh int

	// digest and sum serve EncodeHashWithout, which hashes two pieces.
	digest hash.Hash
	sum    [sha256.Size]byte
}

func notCanonical(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrNotCanonical, fmt.Sprintf(format, args...))
}

func (e *encoder) value(v any, depth int) error {
	if depth > MaxDepth {
		return notCanonical("nesting deeper than %d levels", MaxDepth)
	}
	switch x := v.(type) {
	case nil:
		e.buf = append(e.buf, "null"...)
	case bool:
		if x {
			e.buf = append(e.buf, "true"...)
		} else {
			e.buf = append(e.buf, "false"...)
		}
	case string:
		return e.string(x)
	case map[string]any:
		return e.mapAny(x, depth)
	case []any:
		e.buf = append(e.buf, '[')
		for i, el := range x {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			if err := e.value(el, depth+1); err != nil {
				return err
			}
		}
		e.buf = append(e.buf, ']')
	case json.Number:
		return e.number(x)
	case int:
		e.buf = strconv.AppendInt(e.buf, int64(x), 10)
	case int64:
		e.buf = strconv.AppendInt(e.buf, x, 10)
	case int32:
		e.buf = strconv.AppendInt(e.buf, int64(x), 10)
	case int16:
		e.buf = strconv.AppendInt(e.buf, int64(x), 10)
	case int8:
		e.buf = strconv.AppendInt(e.buf, int64(x), 10)
	case uint:
		e.buf = strconv.AppendUint(e.buf, uint64(x), 10)
	case uint64:
		e.buf = strconv.AppendUint(e.buf, x, 10)
	case uint32:
		e.buf = strconv.AppendUint(e.buf, uint64(x), 10)
	case uint16:
		e.buf = strconv.AppendUint(e.buf, uint64(x), 10)
	case uint8:
		e.buf = strconv.AppendUint(e.buf, uint64(x), 10)
	case float64:
		return e.float(x)
	case float32:
		return e.float(float64(x))
	default:
		return e.typed(v, depth)
	}
	return nil
}

// typed handles the less common container types and Valuer implementations.
// A nil typed list encodes as [] and a nil typed map as {}.
func (e *encoder) typed(v any, depth int) error {
	switch x := v.(type) {
	case []string:
		e.buf = append(e.buf, '[')
		for i, s := range x {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			if depth+1 > MaxDepth {
				return notCanonical("nesting deeper than %d levels", MaxDepth)
			}
			if err := e.string(s); err != nil {
				return err
			}
		}
		e.buf = append(e.buf, ']')
	case []int64:
		if len(x) > 0 && depth+1 > MaxDepth {
			return notCanonical("nesting deeper than %d levels", MaxDepth)
		}
		e.buf = append(e.buf, '[')
		for i, n := range x {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			e.buf = strconv.AppendInt(e.buf, n, 10)
		}
		e.buf = append(e.buf, ']')
	case []map[string]any:
		e.buf = append(e.buf, '[')
		for i, m := range x {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			if depth+1 > MaxDepth {
				return notCanonical("nesting deeper than %d levels", MaxDepth)
			}
			if err := e.mapAny(m, depth+1); err != nil {
				return err
			}
		}
		e.buf = append(e.buf, ']')
	case map[string]string:
		return encodeMap(e, x, depth, func(s string) error { return e.string(s) })
	case map[string]int64:
		return encodeMap(e, x, depth, func(n int64) error {
			e.buf = strconv.AppendInt(e.buf, n, 10)
			return nil
		})
	case map[string]int:
		return encodeMap(e, x, depth, func(n int) error {
			e.buf = strconv.AppendInt(e.buf, int64(n), 10)
			return nil
		})
	case Raw:
		e.buf = append(e.buf, x...)
	case Valuer:
		return e.valuer(x, depth)
	default:
		return notCanonical("unsupported type %T", v)
	}
	return nil
}

// valuer resolves a chain of CanonicalValue calls at the same depth. A
// CanonicalValue that panics (say, a method that dereferences a nil
// receiver) makes the value non-canonical instead of crashing the caller.
func (e *encoder) valuer(x Valuer, depth int) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = notCanonical("CanonicalValue of %T panicked: %v", x, r)
		}
	}()
	var v any = x
	for range maxValuerHops {
		vr, ok := v.(Valuer)
		if !ok {
			return e.value(v, depth)
		}
		v = vr.CanonicalValue()
	}
	return notCanonical("CanonicalValue chain longer than %d", maxValuerHops)
}

// mapAny writes the most common object type. Its members are collected
// with their values into the shared pair scratch (saving a lookup per key)
// in key order; nested objects use the region above this one.
func (e *encoder) mapAny(m map[string]any, depth int) error {
	start := len(e.pairs)
	order, kept := e.collect(m)
	members := e.pairs[start:]
	var err error
	if order != nil {
		// Nested objects must not replace the order while it is in use.
		order.busy++
	}
	if kept {
		err = e.membersWithKeys(members, order, depth)
	} else {
		err = e.members(members, order, depth)
	}
	if order != nil {
		order.busy--
	}
	// The members stay in the scratch above len until putEncoder clears
	// it: they belong to the value being encoded anyway.
	e.pairs = e.pairs[:start]
	return err
}

// members writes an object's members, given in key order. If keep is not
// nil, the encoded keys are copied into it as they are written and it is
// made the kept order for these keys once all are written.
func (e *encoder) members(ms []member, keep *keyOrder, depth int) error {
	e.buf = append(e.buf, '{')
	for i := range ms {
		from := len(e.buf)
		if i > 0 {
			e.buf = append(e.buf, ',')
		}
		if err := e.string(ms[i].key); err != nil {
			return err
		}
		e.buf = append(e.buf, ':')
		if keep != nil {
			keep.enc = append(keep.enc, e.buf[from:]...)
			keep.ends = append(keep.ends, len(keep.enc))
		}
		if err := e.value(ms[i].value, depth+1); err != nil {
			return err
		}
	}
	e.buf = append(e.buf, '}')
	if keep != nil {
		keep.setKeys(ms)
	}
	return nil
}

// membersWithKeys is members for an object with a kept key order, whose
// keys are copied already encoded, each with its comma.
func (e *encoder) membersWithKeys(ms []member, order *keyOrder, depth int) error {
	e.buf = append(e.buf, '{')
	enc, ends := order.enc, order.ends[:len(ms)]
	from := 0
	for i := range ms {
		to := ends[i]
		e.buf = append(e.buf, enc[from:to]...)
		from = to
		// Most member values are strings: they skip value's type switch
		// (and its depth check, made here).
		var err error
		if str, ok := ms[i].value.(string); ok && depth < MaxDepth {
			err = e.string(str)
		} else {
			err = e.value(ms[i].value, depth+1)
		}
		if err != nil {
			return err
		}
	}
	e.buf = append(e.buf, '}')
	return nil
}

// encodeMap writes m with its members sorted by key bytes. Keys are sorted in
// the encoder's shared scratch slice; nested maps append above this map's
// region, which stays intact even if the slice is reallocated.
func encodeMap[V any](e *encoder, m map[string]V, depth int, enc func(V) error) error {
	if len(m) > 0 && depth+1 > MaxDepth {
		return notCanonical("nesting deeper than %d levels", MaxDepth)
	}
	start := len(e.keys)
	for k := range m {
		e.keys = append(e.keys, k)
	}
	keys := e.keys[start:]
	slices.Sort(keys)
	defer func() { e.keys = e.keys[:start] }()
	e.buf = append(e.buf, '{')
	for i, k := range keys {
		if i > 0 {
			e.buf = append(e.buf, ',')
		}
		if err := e.string(k); err != nil {
			return err
		}
		e.buf = append(e.buf, ':')
		if err := enc(m[k]); err != nil {
			return err
		}
	}
	e.buf = append(e.buf, '}')
	return nil
}

// number writes a json.Number: integer text as a normalised integer, any
// other valid JSON number as a float.
func (e *encoder) number(n json.Number) error {
	s := string(n)
	isInt, ok := scanNumber(s)
	if !ok {
		return notCanonical("malformed number %q", truncate(s))
	}
	if isInt {
		e.buf = appendInteger(e.buf, s)
		return nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return notCanonical("number %q does not fit a binary64 float", truncate(s))
	}
	return e.float(f)
}

// appendInteger appends JSON integer text, writing negative zero as 0 (an
// integer has no sign of zero).
func appendInteger(dst []byte, s string) []byte {
	if s == "-0" {
		return append(dst, '0')
	}
	return append(dst, s...)
}

func (e *encoder) float(f float64) error {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return notCanonical("float %v has no JSON form", f)
	}
	e.buf = AppendFloat(e.buf, f)
	return nil
}

// truncate shortens s for error messages.
func truncate(s string) string {
	const limit = 40
	if len(s) <= limit {
		return s
	}
	return s[:limit] + "..."
}

// scanNumber reports whether s is a JSON number (RFC 8259 grammar) and, if
// so, whether it is in integer form (no fraction, no exponent).
func scanNumber(s string) (isInt, ok bool) {
	n := numberLen(s)
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

// numberLen returns the length of the longest JSON number prefix of s, or 0
// if s does not start with one.
func numberLen[T string | []byte](s T) int {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		i = skipDigits(s, i+1)
	default:
		return 0
	}
	if i+1 < len(s) && s[i] == '.' && isDigit(s[i+1]) {
		i = skipDigits(s, i+1)
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		j := i + 1
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		if j < len(s) && isDigit(s[j]) {
			i = skipDigits(s, j)
		}
	}
	return i
}

func skipDigits[T string | []byte](s T, i int) int {
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return i
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
