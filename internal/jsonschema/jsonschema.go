// Package jsonschema derives draft 2020-12 JSON Schemas from Go types, so that published schemas cannot drift from the code.
package jsonschema

import (
	"encoding/json"
	"reflect"
	"strings"
	"time"
)

// Draft is the meta-schema every generated schema declares.
const Draft = "https://json-schema.org/draft/2020-12/schema"

var (
	rawMessageType = reflect.TypeFor[json.RawMessage]()
	timeType       = reflect.TypeFor[time.Time]()
)

// For returns the schema of the JSON encoding of v's type. Objects are
// closed (additionalProperties false); a field is required unless it is
// tagged omitempty; pointer fields may also be null. A field's `doc` tag
// becomes its description, `enum` (values separated by '|') its allowed
// values and `pattern` its pattern; for a pointer field the last two apply
// to the non-null alternative. Overrides replace the
// schema of named properties at the top level (for constants such as "v").
func For(v any, id, title string, overrides map[string]any) map[string]any {
	s := schemaOf(reflect.TypeOf(v))
	s["$schema"] = Draft
	s["$id"] = id
	s["title"] = title
	props, _ := s["properties"].(map[string]any)
	for name, o := range overrides {
		props[name] = o
	}
	return s
}

func schemaOf(t reflect.Type) map[string]any {
	if t == rawMessageType {
		return map[string]any{}
	}
	if t == timeType {
		return map[string]any{"type": "string", "format": "date-time"}
	}
	switch t.Kind() {
	case reflect.Pointer:
		inner := schemaOf(t.Elem())
		return map[string]any{"anyOf": []any{inner, map[string]any{"type": "null"}}}
	case reflect.Struct:
		return objectOf(t)
	case reflect.Slice, reflect.Array:
		return map[string]any{"type": []any{"array", "null"}, "items": schemaOf(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": []any{"object", "null"}, "additionalProperties": schemaOf(t.Elem())}
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return map[string]any{"type": "integer"}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer", "minimum": 0}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	}
	return map[string]any{} // interfaces: any JSON value
}

func objectOf(t reflect.Type) map[string]any {
	props := map[string]any{}
	required := []any{}
	addFields(t, props, &required)
	return map[string]any{
		"type":                 "object",
		"properties":           props,
		"required":             required,
		"additionalProperties": false,
	}
}

// addFields adds t's JSON fields, flattening embedded structs as
// encoding/json does.
func addFields(t reflect.Type, props map[string]any, required *[]any) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			addFields(f.Type, props, required)
			continue
		}
		if name == "" {
			name = f.Name
		}
		props[name] = annotate(schemaOf(f.Type), f.Tag)
		if !strings.Contains(opts, "omitempty") && !strings.Contains(opts, "omitzero") {
			*required = append(*required, name)
		}
	}
}

// annotate adds the description, enum and pattern of a field's tags to its
// schema s.
func annotate(s map[string]any, tag reflect.StructTag) map[string]any {
	if doc := tag.Get("doc"); doc != "" {
		s["description"] = doc
	}
	value := s
	if alts, ok := s["anyOf"].([]any); ok {
		value = alts[0].(map[string]any) // a pointer: the non-null alternative
	}
	if enum := tag.Get("enum"); enum != "" {
		var values []any
		for v := range strings.SplitSeq(enum, "|") {
			values = append(values, v)
		}
		value["enum"] = values
	}
	if pattern := tag.Get("pattern"); pattern != "" {
		value["pattern"] = pattern
	}
	return s
}
