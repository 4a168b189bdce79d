package semantic

import (
	"reflect"
	"strings"

	"github.com/cairnhq/cairn/canonical"
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
	index int
}

// fieldsOf holds the fields, in declaration order (the order they are
// decoded and checked in), of every struct type a Semantic is made of.
var fieldsOf = structsOf(reflect.TypeFor[Semantic]())

func structsOf(root reflect.Type) map[reflect.Type][]field {
	structs := map[reflect.Type][]field{}
	var add func(t reflect.Type)
	add = func(t reflect.Type) {
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice:
			add(t.Elem())
		case reflect.Struct:
			var fields []field
			for i := range t.NumField() {
				name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
				fields = append(fields, field{name: name, index: i})
				add(t.Field(i).Type)
			}
			structs[t] = fields
		}
	}
	add(root)
	return structs
}

// AppendCanonical appends the canonical encoding of s to dst, the bytes
// that are hashed, size-checked and rendered: canonical.Encode(s.Map()). A
// nil s appends null. On error (a string that is not valid UTF-8, wrapping
// canonical.ErrNotCanonical) dst is returned unextended.
func (s *Semantic) AppendCanonical(dst []byte) ([]byte, error) {
	return canonical.AppendEncode(dst, s.CanonicalValue())
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
		fields := fieldsOf[v.Type()]
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
	return canonical.Hash(s.Map())
}

// encodedSize is the length of s's canonical encoding, encoded into the
// encoder's own pooled buffer rather than a fresh one grown by doubling
// (BenchmarkEngineCompactor in internal/consumer reports the allocations).
func (s *Semantic) encodedSize() (int, error) {
	return canonical.EncodedSize(s.CanonicalValue())
}
