package semantic

import (
	"errors"
	"reflect"
	"slices"

	"github.com/cairnhq/cairn/canonical"
	"github.com/cairnhq/cairn/errcode"
)

// ParseJSON decodes a semantic document strictly (duplicate keys at any depth
// are rejected) and checks it like Parse. Every error is an *errcode.Error
// with code invalid_compaction_semantic.
func ParseJSON(b []byte) (*Semantic, error) {
	if len(b) > MaxJSONBytes {
		return nil, invalidWith("semantic output exceeds the byte limit", map[string]any{"rule": "range", "bytes": len(b), "limit": MaxJSONBytes})
	}
	v, err := canonical.Decode(b)
	if errors.Is(err, canonical.ErrDuplicateKey) {
		return nil, errcode.Wrap(errcode.InvalidSemantic, msgDuplicateFields, err).With("rule", "json")
	}
	if err != nil {
		return nil, errcode.Wrap(errcode.InvalidSemantic, msgNotMap, err).With("rule", "json")
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
		return invalidWith(msgUnknownFields, map[string]any{"rule": "unknown", "fields": unknown})
	}
	var missing []string
	for _, k := range Fields {
		if _, ok := m[k]; !ok {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return invalidWith(msgMissingFields, map[string]any{"rule": "required", "fields": missing})
	}
	return nil
}

// decodeMembers decodes m, a map with exactly the keys of struct dst, into
// dst's fields, in field order.
func decodeMembers(m map[string]any, dst reflect.Value) *errcode.Error {
	for _, f := range fieldsOf[dst.Type()] {
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
		fields := fieldsOf[dst.Type()]
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
		n, ok := canonical.Int(v)
		if !ok {
			return invalidAt(msgCoverage, "")
		}
		dst.SetInt(n)
	case reflect.Int: // version, which may be written 1.0
		if f, ok := canonical.Float(v); !ok || f != Version {
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
