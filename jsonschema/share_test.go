package jsonschema

import (
	"encoding/json"
	"testing"
)

func TestShareDescribesARepeatedShapeOnce(t *testing.T) {
	item := func() map[string]any {
		return map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}}
	}
	once := map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "integer"}}}
	s := map[string]any{"type": "object", "properties": map[string]any{
		"a":    map[string]any{"type": "array", "items": item()},
		"b":    item(),
		"once": once,
	}}
	Share(s, map[string]string{"text": "item"})
	got, _ := json.Marshal(s)
	want := `{"$defs":{"item":{"properties":{"text":{"type":"string"}},"type":"object"}},"properties":{"a":{"items":{"$ref":"#/$defs/item"},"type":"array"},"b":{"$ref":"#/$defs/item"},"once":{"properties":{"n":{"type":"integer"}},"type":"object"}},"type":"object"}`
	if string(got) != want {
		t.Errorf("shared:\n%s\nwant\n%s", got, want)
	}
}

func TestShareRefusesAnUnnamedRepeatedShape(t *testing.T) {
	item := func() map[string]any { return map[string]any{"properties": map[string]any{"x": map[string]any{}}} }
	s := map[string]any{"properties": map[string]any{"a": item(), "b": item()}}
	defer func() {
		if recover() == nil {
			t.Error("a repeated shape with no name was shared")
		}
	}()
	Share(s, nil)
}
