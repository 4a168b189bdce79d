package canonical

import (
	"bytes"
	"maps"
	"testing"
)

func TestEncodeHashWithoutMatchesEncodeAndHash(t *testing.T) {
	nested := map[string]any{"z": []any{1, "two", map[string]any{"b": nil, "a": true}}}
	for _, m := range []map[string]any{
		{},
		{"created_at": "2026-11-29T23:00:00Z"},
		{"created_at": "t", "b": 1},
		{"a": 1, "created_at": "t"},
		{"a": 1, "created_at": "t", "d": nested, "é": "x"},
		{"a": 1, "b": nested},
		{"created": 1, "created_at_x": 2, "creat": 3},
	} {
		full, hash, err := EncodeHashWithout(m, "created_at")
		if err != nil {
			t.Fatal(err)
		}
		wantFull, err := Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		without := maps.Clone(m)
		delete(without, "created_at")
		wantHash, err := Hash(without)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(full, wantFull) || hash != wantHash {
			t.Errorf("%v:\n got %s %s\nwant %s %s", m, full, hash, wantFull, wantHash)
		}
	}
	if _, _, err := EncodeHashWithout(map[string]any{"a": func() {}}, "a"); err == nil {
		t.Error("a value outside the canonical domain was encoded")
	}
}
