package jsonschema

import (
	"reflect"
	"testing"
)

type annotated struct {
	Role  string  `json:"role" doc:"who wrote it" enum:"user|tool"`
	Hash  *string `json:"hash,omitempty" doc:"a hash" pattern:"^[0-9a-f]{64}$"`
	Plain int     `json:"plain"`
}

func TestTagsAnnotateProperties(t *testing.T) {
	props := For(annotated{}, "id", "title", nil)["properties"].(map[string]any)
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
