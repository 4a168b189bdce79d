package events

import (
	"reflect"
	"sync"

	"github.com/cairnhq/cairn/canonical"
	"github.com/cairnhq/cairn/jsonwire"
)

// A wire object's members are read and written by its struct's json tags:
// the decoders of this package read them with jsonwire, which takes the
// key set, the required members and each member's JSON type from the tags,
// and the plain form a type encodes canonically is built from them here,
// so a field added to a type is decoded, type-checked and encoded with no
// further edit.

// plainMembers is the plain form of v (a struct value) that the canonical
// encoder takes: every member under its json name; a value that has its
// own plain form (canonical.Valuer) as that form; a nil pointer as null; a
// nil map or list as {} or [], or as null where the field is tagged
// nil:"null"; a struct, or a list of structs, as members again.
func plainMembers(v reflect.Value, fields []jsonwire.Field) map[string]any {
	m := make(map[string]any, len(fields))
	for _, f := range fields {
		m[f.Name] = plainMember(v.FieldByIndex(f.Index), f.Tag.Get("nil") == "null")
	}
	return m
}

// fieldsOf caches jsonwire.Fields of the struct types plainMember meets inside
// others (ranges, manifest entries).
var fieldsOf sync.Map // reflect.Type → []jsonwire.Field

func structFields(t reflect.Type) []jsonwire.Field {
	if f, ok := fieldsOf.Load(t); ok {
		return f.([]jsonwire.Field)
	}
	f := jsonwire.Fields(t)
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
