package semantic

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/cairnhq/cairn/internal/canonical"
	"github.com/cairnhq/cairn/internal/errcode"
)

// The semantic is encoded and decoded by its types' json tags alone:
// AppendCanonical writes the canonical encoding of the value the tags
// describe (keys sorted by their bytes, the canonical string escapes, no
// whitespace, a nil list as [] and a nil pointer as null), Map builds that
// value for callers that embed it in a larger one, and decoding reads the
// value canonical.Decode returns into the types, checking its structure on
// the way, before the value check (shape.go). A field added to a type is
// encoded, hashed and decoded without further edits.

// field is a struct field as encoding/json names it.
type field struct {
	name  string
	key   string // the canonical encoding of the name and the colon
	index int
}

// structFields are a struct's fields in declaration order (the order they
// are decoded and checked in) and sorted by name (the canonical order).
type structFields struct {
	declared, sorted []field
}

// fieldsOf holds the fields of every struct type a Semantic is made of.
var fieldsOf = structsOf(reflect.TypeFor[Semantic]())

func structsOf(root reflect.Type) map[reflect.Type]structFields {
	structs := map[reflect.Type]structFields{}
	var add func(t reflect.Type)
	add = func(t reflect.Type) {
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice:
			add(t.Elem())
		case reflect.Struct:
			var f structFields
			for i := range t.NumField() {
				name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
				f.declared = append(f.declared, field{name: name, key: strconv.Quote(name) + ":", index: i})
				add(t.Field(i).Type)
			}
			f.sorted = slices.SortedFunc(slices.Values(f.declared), func(a, b field) int { return strings.Compare(a.name, b.name) })
			structs[t] = f
		}
	}
	add(root)
	return structs
}

// AppendCanonical appends the canonical encoding of s to dst, the bytes
// that are hashed, size-checked and rendered: canonical.Encode(s.Map()),
// without building the map. A nil s appends null. On error (a string that is
// not valid UTF-8, wrapping canonical.ErrNotCanonical) dst is returned
// unextended.
func (s *Semantic) AppendCanonical(dst []byte) ([]byte, error) {
	b, err := appendCanonical(dst, reflect.ValueOf(s))
	if err != nil {
		return dst, err
	}
	return b, nil
}

func appendCanonical(b []byte, v reflect.Value) ([]byte, error) {
	var err error
	switch v.Kind() {
	case reflect.Struct:
		b = append(b, '{')
		for i, f := range fieldsOf[v.Type()].sorted {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendCanonical(append(b, f.key...), v.Field(f.index)); err != nil {
				return b, err
			}
		}
		return append(b, '}'), nil
	case reflect.Slice:
		b = append(b, '[')
		for i := range v.Len() {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendCanonical(b, v.Index(i)); err != nil {
				return b, err
			}
		}
		return append(b, ']'), nil
	case reflect.Pointer:
		if v.IsNil() {
			return append(b, "null"...), nil
		}
		return appendCanonical(b, v.Elem())
	case reflect.String:
		return canonical.AppendString(b, v.String())
	case reflect.Int, reflect.Int64:
		return strconv.AppendInt(b, v.Int(), 10), nil
	}
	panic("semantic: no canonical encoding for " + v.Type().String())
}

// Map returns the plain form of s, the value whose canonical encoding
// AppendCanonical writes: a struct as a map[string]any keyed by its json
// names, a nil list as an empty one, a nil pointer as nil. A nil s maps to
// nil.
func (s *Semantic) Map() map[string]any {
	if s == nil {
		return nil
	}
	return plain(reflect.ValueOf(s).Elem()).(map[string]any)
}

func plain(v reflect.Value) any {
	switch v.Kind() {
	case reflect.Struct:
		fields := fieldsOf[v.Type()].declared
		m := make(map[string]any, len(fields))
		for _, f := range fields {
			m[f.name] = plain(v.Field(f.index))
		}
		return m
	case reflect.Slice:
		list := make([]any, v.Len())
		for i := range list {
			list[i] = plain(v.Index(i))
		}
		return list
	case reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		return plain(v.Elem())
	case reflect.String:
		return v.String()
	case reflect.Int, reflect.Int64:
		return v.Int()
	}
	panic("semantic: no plain form for " + v.Type().String())
}

// CanonicalValue implements canonical.Valuer: a *Semantic encodes as its
// Map, and a nil *Semantic as null.
func (s *Semantic) CanonicalValue() any {
	if s == nil {
		return nil
	}
	return s.Map()
}

var _ canonical.Valuer = (*Semantic)(nil)

// Hash returns the semantic_hash of s: the lowercase hex SHA-256 of its
// canonical encoding. It fails only when s holds invalid UTF-8. A nil s
// hashes as its Map, a nil map, which encodes as {}, not as null.
func (s *Semantic) Hash() (string, error) {
	if s == nil {
		return canonical.Hash(s.Map())
	}
	var h string
	err := s.encoded(func(b []byte) { h = canonical.HashBytes(b) })
	return h, err
}

// encodedSize is the length of s's canonical encoding.
func (s *Semantic) encodedSize() (int, error) {
	var n int
	err := s.encoded(func(b []byte) { n = len(b) })
	return n, err
}

// scratch holds buffers for Hash and the size check, which need the
// encoding only for a moment; one that grew past maxPooledScratch for a
// huge semantic is dropped.
var scratch = sync.Pool{New: func() any { return new([]byte) }}

const maxPooledScratch = 1 << 20

// encoded calls use with the canonical encoding of s, in a pooled buffer
// that use must not keep.
func (s *Semantic) encoded(use func(b []byte)) error {
	bp := scratch.Get().(*[]byte)
	b, err := s.AppendCanonical((*bp)[:0])
	if err == nil {
		use(b)
	}
	if cap(b) <= maxPooledScratch {
		*bp = b[:0]
		scratch.Put(bp)
	}
	return err
}

// ParseJSON decodes a semantic document strictly (duplicate keys at any depth
// are rejected) and checks it like Parse. Every error is an *errcode.Error
// with code invalid_compaction_semantic.
func ParseJSON(b []byte) (*Semantic, error) {
	if len(b) > MaxJSONBytes {
		return nil, invalidWith("semantic output exceeds the byte limit", map[string]any{"bytes": len(b), "limit": MaxJSONBytes})
	}
	v, err := canonical.Decode(b)
	if errors.Is(err, canonical.ErrDuplicateKey) {
		return nil, errcode.Wrap(errcode.InvalidSemantic, msgDuplicateFields, err)
	}
	if err != nil {
		return nil, errcode.Wrap(errcode.InvalidSemantic, msgNotMap, err)
	}
	return Parse(v)
}

// Parse builds a Semantic from a decoded value: a map[string]any as returned
// by canonical.Decode or built by hand (lists as []any, []map[string]any or
// []string, numbers as json.Number or Go numbers), or a *Semantic
// (re-validated and returned as is) or Semantic (re-validated and returned
// by address).
//
// A map is checked in two passes. Decoding checks its structure against the
// types: unknown top-level fields, then missing ones, then field by field in
// the order of the types that every object has exactly its fields and
// every value the JSON type of its field (the version: 1 or 1.0). The
// value check of Validate follows. The first failure is returned as an
// *errcode.Error with code invalid_compaction_semantic, the schema's message
// and, for a field, its path in the details ("objective[0].text"). Parse
// never panics.
func Parse(v any) (*Semantic, error) {
	switch x := v.(type) {
	case *Semantic:
		if x == nil {
			return nil, invalid(msgNotMap)
		}
		if err := x.Validate(); err != nil {
			return nil, err
		}
		return x, nil
	case Semantic:
		if err := x.Validate(); err != nil {
			return nil, err
		}
		return &x, nil
	case map[string]any:
		if err := closedFields(x); err != nil {
			return nil, err
		}
		var s Semantic
		if err := decodeMembers(x, reflect.ValueOf(&s).Elem()); err != nil {
			return nil, err
		}
		if err := s.validateShape(); err != nil {
			return nil, err
		}
		return &s, nil
	default:
		return nil, invalid(msgNotMap)
	}
}

// closedFields rejects unknown top-level keys, then missing ones, each with
// the list of their names. Duplicate keys cannot reach a Go map; ParseJSON
// reports them while decoding.
func closedFields(m map[string]any) error {
	var unknown []string
	for k := range m {
		if !slices.Contains(Fields, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return invalidWith(msgUnknownFields, map[string]any{"fields": unknown})
	}
	var missing []string
	for _, k := range Fields {
		if _, ok := m[k]; !ok {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return invalidWith(msgMissingFields, map[string]any{"fields": missing})
	}
	return nil
}

// decodeMembers decodes m, a map with exactly the keys of struct dst, into
// dst's fields, in field order.
func decodeMembers(m map[string]any, dst reflect.Value) *errcode.Error {
	for _, f := range fieldsOf[dst.Type()].declared {
		if err := decode(m[f.name], dst.Field(f.index), f.name); err != nil {
			return within(err, f.name)
		}
	}
	return nil
}

// decode stores v, a decoded JSON value, in dst, the field (or list entry)
// name, if v has the JSON type of dst. Otherwise the error's message is the
// one the schema gives a bad value of that field; its path is relative to
// v. Strings are stored as they are: their UTF-8 is a value check.
func decode(v any, dst reflect.Value, name string) *errcode.Error {
	switch dst.Kind() {
	case reflect.Pointer: // a nullable field
		if v == nil {
			return nil
		}
		dst.Set(reflect.New(dst.Type().Elem()))
		return decode(v, dst.Elem(), name)
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			return invalidAt(msgObject, "")
		}
		fields := fieldsOf[dst.Type()].declared
		if len(m) != len(fields) || slices.ContainsFunc(fields, func(f field) bool { _, ok := m[f.name]; return !ok }) {
			return invalidAt(msgUnexpected, "")
		}
		return decodeMembers(m, dst)
	case reflect.Slice:
		list, ok := asList(v)
		if !ok {
			return invalidAt(listMessage(dst.Type()), "")
		}
		dst.Set(reflect.MakeSlice(dst.Type(), len(list), len(list)))
		for i, e := range list {
			if err := decode(e, dst.Index(i), name); err != nil {
				return within(err, index(i))
			}
		}
	case reflect.String:
		s, ok := v.(string)
		if !ok {
			return invalidAt(stringMessage(name), "")
		}
		dst.SetString(s)
	case reflect.Int64: // coverage
		n, ok := integer(v)
		if !ok {
			return invalidAt(msgCoverage, "")
		}
		dst.SetInt(n)
	case reflect.Int: // version, which may be written 1.0
		if f, ok := number(v); !ok || f != Version {
			return invalidAt(msgVersion, "")
		}
		dst.SetInt(Version)
	}
	return nil
}

// stringMessage is the message of a bad value of the string field (or
// string list entry) name; the fields not named here are texts.
func stringMessage(name string) string {
	switch name {
	case "source_event_ids", "verification_event_ids":
		return msgIDs
	case "source_event_id", "artifact_id":
		return msgUUID
	case "status":
		return msgEnum
	case "source_span_hash":
		return msgOmissionHash
	}
	return msgText
}

// listMessage is the message of a list field that is not a list.
func listMessage(t reflect.Type) string {
	if t.Elem().Kind() == reflect.String {
		return msgIDs
	}
	return msgCollection
}

// asList returns v as a list: []any as decoded, or a typed list built by hand.
func asList(v any) ([]any, bool) {
	switch x := v.(type) {
	case []any:
		return x, true
	case []map[string]any:
		list := make([]any, len(x))
		for i, m := range x {
			list[i] = m
		}
		return list, true
	case []string:
		list := make([]any, len(x))
		for i, s := range x {
			list[i] = s
		}
		return list, true
	}
	return nil, false
}

// number converts a numeric value of any accepted representation to
// float64, so that the version may be 1 or 1.0.
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		return f, err == nil
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case int32:
		return float64(x), true
	case float64:
		return x, true
	case float32:
		return float64(x), true
	}
	return 0, false
}

// integer converts an integer-typed value to int64. Floats (including 1.0
// and json.Number in float form) are not integers.
func integer(v any) (int64, bool) {
	switch x := v.(type) {
	case json.Number:
		n, err := strconv.ParseInt(string(x), 10, 64)
		return n, err == nil
	case int:
		return int64(x), true
	case int64:
		return x, true
	case int32:
		return int64(x), true
	case uint32:
		return int64(x), true
	case uint64:
		if x > math.MaxInt64 {
			return 0, false
		}
		return int64(x), true
	}
	return 0, false
}
