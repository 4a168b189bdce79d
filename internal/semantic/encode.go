package semantic

import (
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/cairnhq/cairn/internal/canonical"
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
