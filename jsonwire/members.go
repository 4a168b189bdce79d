// Package jsonwire reads and writes Cairn's wire objects by their structs'
// tags: a struct's json tags are an object's key set and required members,
// its Go field types the members' JSON types, and further tags the messages
// of its failures. Values come from canonical.Decode (nil, bool,
// json.Number, string, []any, map[string]any); Go-built values (int,
// int64, float64, []string) are accepted too, so callers can build them in
// code. It imports nothing but the canonical package.
package jsonwire

import (
	"reflect"
	"slices"
	"strings"

	"github.com/cairnhq/cairn/canonical"
)

// Field is one JSON member of a struct.
type Field struct {
	Name string
	// Required: not omitempty, and not tagged required:"false" (a member
	// that may be absent although it is always encoded).
	Required bool
	// OmitEmpty: tagged omitempty.
	OmitEmpty bool
	Type      reflect.Type
	Index     []int // for reflect.Value.FieldByIndex
	Tag       reflect.StructTag
}

// Fields lists t's JSON members in encoding order, flattening embedded
// structs as encoding/json does.
func Fields(t reflect.Type) []Field {
	var out []Field
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct:
			for _, inner := range Fields(f.Type) {
				inner.Index = append([]int{i}, inner.Index...)
				out = append(out, inner)
			}
		case f.IsExported() && name != "-":
			omitEmpty := strings.Contains(opts, "omitempty")
			required := !omitEmpty && f.Tag.Get("required") != "false"
			out = append(out, Field{name, required, omitEmpty, f.Type, []int{i}, f.Tag})
		}
	}
	return out
}

// Names is the names of fields, only the required ones if requiredOnly.
func Names(fields []Field, requiredOnly bool) []string {
	var out []string
	for _, f := range fields {
		if f.Required || !requiredOnly {
			out = append(out, f.Name)
		}
	}
	return out
}

// Keys is the set of t's JSON member names: the keys an object decoded
// into t may have.
func Keys(t reflect.Type) map[string]bool { return KeySet(Names(Fields(t), false)...) }

// Select is the fields of the given names, in the order given. A name
// fields lack panics: names are a table in the caller's code, and the
// mistake shows when its package loads.
func Select(fields []Field, names ...string) []Field {
	out := make([]Field, 0, len(names))
	for _, name := range names {
		i := slices.IndexFunc(fields, func(f Field) bool { return f.Name == name })
		if i < 0 {
			panic("jsonwire: no member " + name)
		}
		out = append(out, fields[i])
	}
	return out
}

// Missing is the names of the required fields that m lacks, in field order.
func Missing(fields []Field, m map[string]any) []string {
	var out []string
	for _, f := range fields {
		if _, ok := m[f.Name]; f.Required && !ok {
			out = append(out, f.Name)
		}
	}
	return out
}

// Read stores the members of m that fields name into dst (a struct
// value), in field order. A member that is absent is left zero. The first
// member of the wrong JSON type stops the read: fail gets its field and the
// rule it broke (see ReadMember).
func Read(dst reflect.Value, fields []Field, m map[string]any, fail func(f Field, rule string) error) error {
	for _, f := range fields {
		raw, present := m[f.Name]
		if !present {
			continue
		}
		if rule := ReadMember(dst.FieldByIndex(f.Index), f, raw); rule != "" {
			return fail(f, rule)
		}
	}
	return nil
}

// ReadMember stores raw, the value of member f, in dst; it returns the rule
// raw broke, or "". Null leaves dst zero where its Go type has no value for
// it (a pointer, map, list, any) or f is tagged null:"true". An empty
// string fails with "pattern" where f is tagged null:"true" and has a
// pattern: "" is the Go value of a null one, which the pattern would not
// have let through. A struct is an object with its fields' members; any
// fault inside it is a "type" fault of f.
func ReadMember(dst reflect.Value, f Field, raw any) string {
	if raw == nil && (f.Tag.Get("null") == "true" || nilable(dst.Kind())) {
		return ""
	}
	switch dst.Kind() {
	case reflect.String:
		s, ok := raw.(string)
		switch {
		case !ok:
			return "type"
		case s == "" && f.Tag.Get("null") == "true" && f.Tag.Get("pattern") != "":
			return "pattern"
		}
		dst.SetString(s)
	case reflect.Int64:
		n, ok := canonical.Int(raw)
		if !ok {
			return "type"
		}
		dst.SetInt(n)
	case reflect.Float64:
		f, ok := canonical.Float(raw)
		if !ok {
			return "type"
		}
		dst.SetFloat(f)
	case reflect.Bool:
		b, ok := raw.(bool)
		if !ok {
			return "type"
		}
		dst.SetBool(b)
	case reflect.Interface:
		dst.Set(reflect.ValueOf(raw))
	case reflect.Pointer:
		elem := reflect.New(dst.Type().Elem())
		if rule := ReadMember(elem.Elem(), Field{Name: f.Name}, raw); rule != "" {
			return rule
		}
		dst.Set(elem)
	case reflect.Map:
		return readMap(dst, raw)
	case reflect.Slice:
		return readList(dst, raw)
	case reflect.Struct:
		return readObject(dst, raw)
	default:
		return "type"
	}
	return ""
}

// readMap reads raw into the map dst: an object whose members each read
// as the map's element type.
func readMap(dst reflect.Value, raw any) string {
	obj, ok := raw.(map[string]any)
	switch {
	case !ok || dst.Type().Key().Kind() != reflect.String:
		return "type"
	case dst.Type() == reflect.TypeOf(obj):
		dst.Set(reflect.ValueOf(obj))
		return ""
	}
	out := reflect.MakeMapWithSize(dst.Type(), len(obj))
	for k, v := range obj {
		elem := reflect.New(dst.Type().Elem()).Elem()
		if ReadMember(elem, Field{Name: k}, v) != "" {
			return "type"
		}
		out.SetMapIndex(reflect.ValueOf(k).Convert(dst.Type().Key()), elem)
	}
	dst.Set(out)
	return ""
}

// readList reads raw into the slice dst: an array whose elements each read
// as the slice's element type.
func readList(dst reflect.Value, raw any) string {
	if dst.Type().Elem() == reflect.TypeFor[string]() {
		list, ok := StringList(raw)
		if !ok {
			return "type"
		}
		dst.Set(reflect.ValueOf(list).Convert(dst.Type()))
		return ""
	}
	list, ok := raw.([]any)
	if !ok {
		return "type"
	}
	out := reflect.MakeSlice(dst.Type(), len(list), len(list))
	for i, v := range list {
		if ReadMember(out.Index(i), Field{}, v) != "" {
			return "type"
		}
	}
	dst.Set(out)
	return ""
}

// readObject reads raw into the struct dst: an object with every required
// member of dst and no member dst lacks.
func readObject(dst reflect.Value, raw any) string {
	obj, ok := raw.(map[string]any)
	if !ok {
		return "type"
	}
	known := 0
	for _, f := range Fields(dst.Type()) {
		v, present := obj[f.Name]
		switch {
		case !present && f.Required:
			return "type"
		case present && ReadMember(dst.FieldByIndex(f.Index), f, v) != "":
			return "type"
		case present:
			known++
		}
	}
	if known != len(obj) {
		return "type"
	}
	return ""
}

func nilable(k reflect.Kind) bool {
	return k == reflect.Pointer || k == reflect.Map || k == reflect.Slice || k == reflect.Interface
}
