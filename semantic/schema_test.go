package semantic

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/canonical"
)

// The schema is closed and derived from the authoritative fields.
func TestJSONSchemaClosedAndDerived(t *testing.T) {
	s := JSONSchema(DefaultBounds)
	if s["additionalProperties"] != false {
		t.Fatalf("additionalProperties = %v", s["additionalProperties"])
	}
	if s["$schema"] != SchemaDraft || s["type"] != "object" {
		t.Fatalf("$schema/type = %v/%v", s["$schema"], s["type"])
	}
	if !reflect.DeepEqual(stringsOf(s["required"]), Fields) {
		t.Fatalf("required = %v, want %v", s["required"], Fields)
	}
	props := s["properties"].(map[string]any)
	if got := props["critical_context"].(map[string]any)["maxItems"]; got != DefaultBounds.CriticalContext || got != 128 {
		t.Fatalf("critical_context.maxItems = %v", got)
	}
	if got := props["version"]; !reflect.DeepEqual(got, map[string]any{"const": 1}) {
		t.Fatalf("version = %v", got)
	}
	ids := props["objective"].(map[string]any)["items"].(map[string]any)["properties"].(map[string]any)["source_event_ids"].(map[string]any)
	want := map[string]any{"type": "array", "minItems": 1, "maxItems": 32, "uniqueItems": true,
		"items": map[string]any{"type": "string", "minLength": 1, "maxLength": 200}}
	if !reflect.DeepEqual(ids, want) {
		t.Fatalf("source_event_ids = %v", ids)
	}
	walkObjects(t, s, func(obj map[string]any) {
		if obj["additionalProperties"] != false {
			t.Errorf("open object %v", obj)
		}
		keys := make([]string, 0)
		for k := range obj["properties"].(map[string]any) {
			keys = append(keys, k)
		}
		req := stringsOf(obj["required"])
		if !sameSet(keys, req) {
			t.Errorf("required %v != properties %v", req, keys)
		}
	})
}

func TestJSONSchemaFollowsBounds(t *testing.T) {
	b := DefaultBounds
	b.CriticalContext, b.TextBytes, b.SourceEventIDs = 7, 99, 3
	props := JSONSchema(b)["properties"].(map[string]any)
	cc := props["critical_context"].(map[string]any)
	if cc["maxItems"] != 7 {
		t.Fatalf("maxItems = %v", cc["maxItems"])
	}
	entry := cc["items"].(map[string]any)["properties"].(map[string]any)
	if entry["text"].(map[string]any)["maxLength"] != 99 || entry["source_event_ids"].(map[string]any)["maxItems"] != 3 {
		t.Fatalf("entry = %v", entry)
	}
	if DefaultBounds.CriticalContext != 128 {
		t.Fatal("JSONSchema mutated DefaultBounds")
	}
}

func TestStrictSchemaUsesOnlyStrictKeywords(t *testing.T) {
	s := StrictSchema(DefaultBounds)
	banned := []string{"oneOf", "allOf", "not", "uniqueItems", "minLength", "maxLength", "$schema", "const", "if", "then", "else"}
	walk(s, func(m map[string]any) {
		for _, k := range banned {
			if _, ok := m[k]; ok {
				t.Errorf("strict schema uses %q in %v", k, m)
			}
		}
	})
	if _, ok := s["anyOf"]; ok {
		t.Fatal("strict root is anyOf")
	}
	walkObjects(t, s, func(obj map[string]any) {
		if obj["additionalProperties"] != false {
			t.Errorf("open object %v", obj)
		}
		keys := make([]string, 0)
		for k := range obj["properties"].(map[string]any) {
			keys = append(keys, k)
		}
		if !sameSet(keys, stringsOf(obj["required"])) {
			t.Errorf("not every property is required in %v", obj)
		}
	})
	if !reflect.DeepEqual(stringsOf(s["required"]), Fields) {
		t.Fatalf("required = %v", s["required"])
	}
	rationale := path(t, s, "properties.decisions.items.properties.rationale")
	if !reflect.DeepEqual(rationale, map[string]any{"type": []any{"string", "null"}}) {
		t.Fatalf("rationale = %v", rationale)
	}
	if _, ok := path(t, s, "properties.user_requests.items.properties.secret_omission").(map[string]any)["anyOf"]; !ok {
		t.Fatal("secret_omission is not anyOf")
	}
}

func TestSchemasEncode(t *testing.T) {
	for _, s := range []map[string]any{JSONSchema(DefaultBounds), StrictSchema(DefaultBounds)} {
		if _, err := canonical.Encode(s); err != nil {
			t.Fatalf("canonical: %v", err)
		}
		if _, err := json.Marshal(s); err != nil {
			t.Fatalf("json: %v", err)
		}
	}
}

// walk calls f on every object node of a schema.
func walk(v any, f func(map[string]any)) {
	switch x := v.(type) {
	case map[string]any:
		f(x)
		for _, c := range x {
			walk(c, f)
		}
	case []any:
		for _, c := range x {
			walk(c, f)
		}
	}
}

// walkObjects calls f on every schema node that describes an object, and
// fails if there are none.
func walkObjects(t *testing.T, s map[string]any, f func(map[string]any)) {
	t.Helper()
	n := 0
	walk(s, func(m map[string]any) {
		if m["type"] == "object" {
			n++
			f(m)
		}
	})
	if n < 10 {
		t.Fatalf("found %d object schemas, want at least 10", n)
	}
}

func stringsOf(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// Every field of the semantic types says what it holds, for the schemas
// generated from the types; an enum tag lists exactly the values the
// validator accepts.
func TestEveryFieldIsDocumented(t *testing.T) {
	enums := map[string][]string{"UserRequest.Status": requestStatuses, "ErrorEntry.Status": errorStatuses}
	for typ := range fieldsOf {
		for i := range typ.NumField() {
			f := typ.Field(i)
			name := typ.Name() + "." + f.Name
			if f.Tag.Get("doc") == "" {
				t.Errorf("%s has no doc tag", name)
			}
			if enum := f.Tag.Get("enum"); enum != strings.Join(enums[name], "|") {
				t.Errorf("%s enum = %q, want %q", name, enum, strings.Join(enums[name], "|"))
			}
		}
	}
	omission, _ := reflect.TypeFor[SecretOmission]().FieldByName("SourceSpanHash")
	if omission.Tag.Get("pattern") != hashPattern.String() {
		t.Errorf("source_span_hash pattern = %q, want %q", omission.Tag.Get("pattern"), hashPattern.String())
	}
}

// Both schemas describe every field of every type, nested ones included:
// each object schema has exactly the json fields of its type, all required
// in the order of the type.
func TestSchemasFollowTheTypes(t *testing.T) {
	for _, s := range []map[string]any{JSONSchema(DefaultBounds), StrictSchema(DefaultBounds)} {
		checkSchemaOf(t, s, reflect.TypeFor[Semantic](), "semantic")
	}
}

// checkSchemaOf checks the object schemas in s, the schema of a value of
// type t, against the types.
func checkSchemaOf(t *testing.T, s map[string]any, typ reflect.Type, where string) {
	t.Helper()
	for _, key := range []string{"oneOf", "anyOf"} { // a nullable value
		if alts, ok := s[key].([]any); ok {
			s = alts[0].(map[string]any)
		}
	}
	switch typ.Kind() {
	case reflect.Pointer:
		checkSchemaOf(t, s, typ.Elem(), where)
	case reflect.Slice:
		checkSchemaOf(t, s["items"].(map[string]any), typ.Elem(), where+"[]")
	case reflect.Struct:
		var names []string
		for _, f := range fieldsOf[typ] {
			names = append(names, f.name)
		}
		if got := stringsOf(s["required"]); !slices.Equal(got, names) {
			t.Errorf("%s: required %v, want %v", where, got, names)
		}
		props := s["properties"].(map[string]any)
		if len(props) != len(names) {
			t.Errorf("%s: %d properties, want %d", where, len(props), len(names))
		}
		for _, f := range fieldsOf[typ] {
			p, ok := props[f.name].(map[string]any)
			if !ok {
				t.Errorf("%s: no property %s", where, f.name)
				continue
			}
			checkSchemaOf(t, p, typ.Field(f.index).Type, where+"."+f.name)
		}
	}
}
