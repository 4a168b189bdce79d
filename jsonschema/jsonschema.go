// Package jsonschema derives draft 2020-12 JSON Schemas from Go types, so that published schemas cannot drift from the code.
package jsonschema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
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

// Generator derives schemas from Go types, with fixed schemas for some
// types.
type Generator struct {
	// Types gives the schema of a type wherever it occurs, for types whose
	// JSON encoding is not what reflection sees (a json.RawMessage with a
	// known shape, a type with its own schema). Each call must return a
	// fresh map.
	Types map[reflect.Type]func() map[string]any
}

// For returns the schema of the JSON encoding of v's type. Objects are
// closed (additionalProperties false); a field is required unless it is
// tagged omitempty or `required:"false"` (a field encoded always that a
// decoder may still miss); pointer, slice and map fields may also be null.
// A field's `null` tag overrides that: "true" lets a field of any type be
// null (a decoder that reads null as absent), "false" forbids it. A
// field's `doc` tag becomes its description, `enum` (values separated by
// '|') its allowed values, `pattern` its pattern, and `const`, `default`,
// `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum`,
// `minLength`, `maxLength`, `minItems`, `maxItems` and `uniqueItems` (JSON
// values) the keywords of those names; for a pointer field all but the
// description apply to the non-null alternative. Overrides are merged into the schema of named
// properties at the top level (for constants such as "v", or the schema of
// a json.RawMessage field), keeping the field's description.
func (g Generator) For(v any, id, title string, overrides map[string]any) map[string]any {
	s := g.Schema(reflect.TypeOf(v))
	s["$schema"] = Draft
	s["$id"] = id
	s["title"] = title
	props, _ := s["properties"].(map[string]any)
	for name, o := range overrides {
		merged, _ := props[name].(map[string]any)
		if merged == nil {
			merged = map[string]any{}
		}
		maps.Copy(merged, o.(map[string]any))
		props[name] = merged
	}
	return s
}

// Schema returns the schema of type t, without $schema, $id or title, for
// use inside another schema.
func (g Generator) Schema(t reflect.Type) map[string]any {
	if fixed, ok := g.Types[t]; ok {
		return fixed()
	}
	if t == rawMessageType {
		return map[string]any{}
	}
	if t == timeType {
		return map[string]any{"type": "string", "format": "date-time"}
	}
	switch t.Kind() {
	case reflect.Pointer:
		inner := g.Schema(t.Elem())
		return map[string]any{"anyOf": []any{inner, map[string]any{"type": "null"}}}
	case reflect.Struct:
		return g.objectOf(t)
	case reflect.Slice, reflect.Array:
		return map[string]any{"type": []any{"array", "null"}, "items": g.Schema(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": []any{"object", "null"}, "additionalProperties": g.Schema(t.Elem())}
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

func (g Generator) objectOf(t reflect.Type) map[string]any {
	props := map[string]any{}
	required := []any{}
	g.addFields(t, props, &required)
	return map[string]any{
		"type":                 "object",
		"properties":           props,
		"required":             required,
		"additionalProperties": false,
	}
}

// addFields adds t's JSON fields, flattening embedded structs as
// encoding/json does.
func (g Generator) addFields(t reflect.Type, props map[string]any, required *[]any) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			g.addFields(f.Type, props, required)
			continue
		}
		if name == "" {
			name = f.Name
		}
		props[name] = annotate(nullability(g.Schema(f.Type), f.Tag.Get("null")), f.Tag)
		optional := strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero") || f.Tag.Get("required") == "false"
		if !optional {
			*required = append(*required, name)
		}
	}
}

// valueKeywords are the tags whose JSON value becomes the keyword of the
// same name.
var valueKeywords = []string{"const", "default", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
	"minLength", "maxLength", "minItems", "maxItems", "uniqueItems"}

// nullability applies a field's `null` tag to its schema s: "true" adds
// null to the values s allows, "false" takes it away, "" keeps s.
func nullability(s map[string]any, tag string) map[string]any {
	alts, isPointer := s["anyOf"].([]any)
	types, isList := s["type"].([]any)
	switch {
	case tag == "true" && !isPointer && !isList:
		return map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}} // as for a pointer
	case tag == "false" && isPointer:
		return alts[0].(map[string]any)
	case tag == "false" && isList:
		s["type"] = types[0]
	case tag != "" && tag != "true" && tag != "false":
		panic(fmt.Sprintf("jsonschema: tag null:%q is neither true nor false", tag))
	}
	return s
}

// annotate adds the description, enum, pattern and value keywords of a
// field's tags to its schema s.
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
	for _, k := range valueKeywords {
		if raw, ok := tag.Lookup(k); ok {
			value[k] = mustJSON(k, raw)
		}
	}
	return s
}

// mustJSON decodes a tag's JSON value, numbers kept exact. A tag that is not
// JSON is a mistake in the type, found by the first schema generated.
func mustJSON(key, raw string) any {
	d := json.NewDecoder(bytes.NewReader([]byte(raw)))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		panic(fmt.Sprintf("jsonschema: tag %s:%q is not JSON: %v", key, raw, err))
	}
	return v
}

// Describe adds the doc tags of t's fields, recursively, as descriptions to
// the properties of a schema written by hand for t's JSON encoding, so that
// such a schema documents the fields as a derived one would. Properties the
// schema lacks are left out; alternatives (oneOf, anyOf) and items are
// followed into pointers, slices and nested structs.
func Describe(s map[string]any, t reflect.Type) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	for _, key := range []string{"oneOf", "anyOf"} {
		if alts, ok := s[key].([]any); ok {
			for _, a := range alts {
				if m, ok := a.(map[string]any); ok && m["type"] != "null" {
					Describe(m, t)
				}
			}
		}
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		if items, ok := s["items"].(map[string]any); ok {
			Describe(items, t.Elem())
		}
	case reflect.Struct:
		props, _ := s["properties"].(map[string]any)
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			p, ok := props[name].(map[string]any)
			if !ok {
				continue
			}
			if doc := f.Tag.Get("doc"); doc != "" {
				p["description"] = doc
			}
			Describe(p, f.Type)
		}
	}
}
