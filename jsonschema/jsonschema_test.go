package jsonschema

import (
	"encoding/json"
	"reflect"
	"testing"
)

type annotated struct {
	Role  string  `json:"role" doc:"who wrote it" enum:"user|tool"`
	Hash  *string `json:"hash,omitempty" doc:"a hash" pattern:"^[0-9a-f]{64}$"`
	Plain int     `json:"plain"`
}

func TestTagsAnnotateProperties(t *testing.T) {
	props := Generator{}.For(annotated{}, "id", "title", nil)["properties"].(map[string]any)
	role := props["role"].(map[string]any)
	if role["description"] != "who wrote it" || !reflect.DeepEqual(role["enum"], []any{"user", "tool"}) {
		t.Errorf("role = %v", role)
	}
	hash := props["hash"].(map[string]any)
	inner := hash["anyOf"].([]any)[0].(map[string]any)
	if hash["description"] != "a hash" || inner["pattern"] != "^[0-9a-f]{64}$" || hash["pattern"] != nil {
		t.Errorf("hash = %v", hash)
	}
	if plain := props["plain"].(map[string]any); len(plain) != 1 {
		t.Errorf("plain = %v, want only its type", plain)
	}
}

type bounded struct {
	Ratio float64 `json:"ratio" exclusiveMinimum:"0" exclusiveMaximum:"1" default:"0.85"`
	Count *int64  `json:"count" minimum:"1"`
	Mode  string  `json:"mode" const:"\"portable\""`
}

func TestValueTagsBecomeKeywords(t *testing.T) {
	props := Generator{}.For(bounded{}, "id", "title", map[string]any{"mode": map[string]any{"title": "m"}})["properties"].(map[string]any)
	ratio := props["ratio"].(map[string]any)
	if ratio["exclusiveMinimum"].(json.Number) != "0" || ratio["exclusiveMaximum"].(json.Number) != "1" || ratio["default"].(json.Number) != "0.85" {
		t.Errorf("ratio = %v", ratio)
	}
	count := props["count"].(map[string]any)["anyOf"].([]any)[0].(map[string]any)
	if count["minimum"].(json.Number) != "1" {
		t.Errorf("count = %v, want the minimum on the non-null alternative", count)
	}
	if mode := props["mode"].(map[string]any); mode["const"] != "portable" || mode["title"] != "m" || mode["type"] != "string" {
		t.Errorf("mode = %v, want the override merged into the derived schema", mode)
	}
}

func TestDescribeFollowsNesting(t *testing.T) {
	type inner struct {
		Name string `json:"name" doc:"the name"`
	}
	type outer struct {
		Items []inner `json:"items" doc:"the items"`
		One   *inner  `json:"one"`
	}
	s := Generator{}.For(outer{}, "id", "title", nil)
	Describe(s, reflect.TypeFor[outer]()) // idempotent on a derived schema
	hand := map[string]any{"properties": map[string]any{
		"items": map[string]any{"items": map[string]any{"properties": map[string]any{"name": map[string]any{}}}},
		"one":   map[string]any{"oneOf": []any{map[string]any{"properties": map[string]any{"name": map[string]any{}}}, map[string]any{"type": "null"}}},
	}}
	Describe(hand, reflect.TypeFor[outer]())
	props := hand["properties"].(map[string]any)
	item := props["items"].(map[string]any)["items"].(map[string]any)["properties"].(map[string]any)["name"].(map[string]any)
	one := props["one"].(map[string]any)["oneOf"].([]any)[0].(map[string]any)["properties"].(map[string]any)["name"].(map[string]any)
	if props["items"].(map[string]any)["description"] != "the items" || item["description"] != "the name" || one["description"] != "the name" {
		t.Errorf("described = %v", hand)
	}
}

type nullables struct {
	Hash   string   `json:"hash,omitempty" null:"true" pattern:"^[0-9a-f]{64}$"`
	List   []string `json:"list,omitempty" null:"false" minItems:"1" uniqueItems:"true"`
	Text   *string  `json:"text" required:"false" maxLength:"5"`
	Strict *int64   `json:"strict" null:"false" minimum:"0"`
}

func TestNullAndRequiredTags(t *testing.T) {
	s := Generator{}.For(nullables{}, "id", "title", nil)
	props := s["properties"].(map[string]any)
	hash := props["hash"].(map[string]any)["anyOf"].([]any)
	if hash[0].(map[string]any)["pattern"] == nil || hash[1].(map[string]any)["type"] != "null" {
		t.Errorf("hash = %v, want the pattern or null", hash)
	}
	list := props["list"].(map[string]any)
	if list["type"] != "array" || list["minItems"] == nil || list["uniqueItems"] != true {
		t.Errorf("list = %v, want a non-null array with at least one item, none twice", list)
	}
	if strict := props["strict"].(map[string]any); strict["type"] != "integer" || strict["minimum"] == nil {
		t.Errorf("strict = %v, want a non-null integer >= 0", strict)
	}
	if !reflect.DeepEqual(s["required"], []any{"strict"}) {
		t.Errorf("required = %v, want only strict (text is required:false)", s["required"])
	}
}
