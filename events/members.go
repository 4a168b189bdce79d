package events

import (
	"reflect"
	"strings"
	"sync"

	"github.com/cairnhq/cairn/canonical"
)

// A wire object's members are read and written by its struct's json tags:
// the decoders of this package take the key set, the required members and
// each member's JSON type from the tags, and the plain form a type encodes
// canonically is built from them, so a field added to a type is decoded,
// type-checked and encoded with no further edit.

// wireField is one JSON member of a struct.
type wireField struct {
	name string
	// required: not omitempty, and not tagged required:"false" (a member
	// that may be absent although it is always encoded).
	required bool
	// omitEmpty: tagged omitempty.
	omitEmpty bool
	typ       reflect.Type
	index     []int // for reflect.Value.FieldByIndex
	tag       reflect.StructTag
}

// wireFields lists t's JSON members in encoding order, flattening embedded
// structs as encoding/json does.
func wireFields(t reflect.Type) []wireField {
	var out []wireField
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct:
			for _, inner := range wireFields(f.Type) {
				inner.index = append([]int{i}, inner.index...)
				out = append(out, inner)
			}
		case f.IsExported() && name != "-":
			required := !strings.Contains(opts, "omitempty") && f.Tag.Get("required") != "false"
			omitEmpty := strings.Contains(opts, "omitempty")
			out = append(out, wireField{name, required, omitEmpty, f.Type, []int{i}, f.Tag})
		}
	}
	return out
}

// fieldNames is the names of fields, only the required ones if
// requiredOnly.
func fieldNames(fields []wireField, requiredOnly bool) []string {
	var out []string
	for _, f := range fields {
		if f.required || !requiredOnly {
			out = append(out, f.name)
		}
	}
	return out
}

// jsonKeys is the set of t's JSON member names: the keys an object
// decoded into t may have.
func jsonKeys(t reflect.Type) map[string]bool { return keySet(fieldNames(wireFields(t), false)...) }

// readMembers stores the members of m that fields name into dst (a struct
// value), in field order. A member that is absent is left zero, and so is
// null where the field's Go type has no value for it (a pointer, map, list,
// any, or a string tagged null:"true"). The first member of the wrong JSON
// type stops the read: fail gets its field and the rule it broke, "type",
// or "pattern" for an empty string that may be null, since "" is the Go
// value of an absent one.
func readMembers(dst reflect.Value, fields []wireField, m map[string]any, fail func(f wireField, rule string) error) error {
	for _, f := range fields {
		raw, present := m[f.name]
		if !present {
			continue
		}
		if rule := readMember(dst.FieldByIndex(f.index), f, raw); rule != "" {
			return fail(f, rule)
		}
	}
	return nil
}

// readMember stores raw in dst; it returns the rule raw broke, or "".
func readMember(dst reflect.Value, f wireField, raw any) string {
	if raw == nil && (f.tag.Get("null") == "true" || nilable(dst.Kind())) {
		return ""
	}
	switch dst.Kind() {
	case reflect.String:
		s, ok := raw.(string)
		switch {
		case !ok:
			return "type"
		case s == "" && f.tag.Get("null") == "true":
			return "pattern"
		}
		dst.SetString(s)
	case reflect.Int64:
		n, ok := canonical.Int(raw)
		if !ok {
			return "type"
		}
		dst.SetInt(n)
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
		if rule := readMember(elem.Elem(), wireField{name: f.name}, raw); rule != "" {
			return rule
		}
		dst.Set(elem)
	case reflect.Map:
		obj, ok := raw.(map[string]any)
		if !ok || dst.Type() != reflect.TypeOf(obj) {
			return "type"
		}
		dst.Set(reflect.ValueOf(obj))
	case reflect.Slice:
		list, ok := asStringList(raw)
		if !ok || dst.Type().Elem().Kind() != reflect.String {
			return "type"
		}
		dst.Set(reflect.ValueOf(list))
	default:
		return "type"
	}
	return ""
}

func nilable(k reflect.Kind) bool {
	return k == reflect.Pointer || k == reflect.Map || k == reflect.Slice || k == reflect.Interface
}

// plainMembers is the plain form of v (a struct value) that the canonical
// encoder takes: every member under its json name; a value that has its
// own plain form (canonical.Valuer) as that form; a nil pointer as null; a
// nil map or list as {} or [], or as null where the field is tagged
// nil:"null"; a struct, or a list of structs, as members again.
func plainMembers(v reflect.Value, fields []wireField) map[string]any {
	m := make(map[string]any, len(fields))
	for _, f := range fields {
		m[f.name] = plainMember(v.FieldByIndex(f.index), f.tag.Get("nil") == "null")
	}
	return m
}

// fieldsOf caches wireFields of the struct types plainMember meets inside
// others (ranges, manifest entries).
var fieldsOf sync.Map // reflect.Type → []wireField

func structFields(t reflect.Type) []wireField {
	if f, ok := fieldsOf.Load(t); ok {
		return f.([]wireField)
	}
	f := wireFields(t)
	fieldsOf.Store(t, f)
	return f
}

func plainMember(v reflect.Value, nilIsNull bool) any {
	if v.CanInterface() {
		if vr, ok := v.Interface().(canonical.Valuer); ok && (v.Kind() != reflect.Pointer || !v.IsNil()) {
			return vr.CanonicalValue()
		}
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		if v.Kind() == reflect.Pointer {
			return v.Elem().Interface()
		}
	case reflect.Map:
		if v.IsNil() && nilIsNull {
			return nil
		}
		if v.IsNil() {
			return reflect.MakeMap(v.Type()).Interface()
		}
	case reflect.Slice:
		switch {
		case v.IsNil() && nilIsNull:
			return nil
		case v.Type().Elem().Kind() == reflect.Struct:
			list := make([]any, v.Len())
			for i := range list {
				list[i] = plainMembers(v.Index(i), structFields(v.Type().Elem()))
			}
			return list
		case v.IsNil():
			return reflect.MakeSlice(v.Type(), 0, 0).Interface()
		}
	case reflect.Struct:
		return plainMembers(v, structFields(v.Type()))
	}
	return v.Interface()
}
