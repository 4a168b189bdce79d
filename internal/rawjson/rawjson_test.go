package rawjson

import (
	"bytes"
	"encoding/json"
	"testing"
)

var rawCases = []string{
	`{}`, `[]`, `null`, `true`, `false`, `0`, `-1.5e3`, `"x"`,
	`{"a":"b c","d":[1,2,{"e":null}]}`,
	`{"a": 1}`, "[1,\n2]", "\t{}", `{"a":"x<y"}`, `{"a":"x\u003cy"}`, `"a&b"`, `{"k":">"}`,
	"{\"a\":\"\u2028\"}", "{\"a\":\"\u2029\"}", "{\"a\":\"\u2027 \u2030 — é\"}",
	`{"a":"q\"uote \\ back"}`, `{"a":"\\"}`, `"\\\""`, `{"a":"\u0001"}`,
}

func TestAppendRawMatchesMarshal(t *testing.T) {
	for _, c := range rawCases {
		want, err := json.Marshal(json.RawMessage(c))
		if err != nil {
			t.Fatalf("%q: %v", c, err)
		}
		got, err := AppendRaw([]byte("x"), []byte(c))
		if err != nil {
			t.Fatalf("%q: %v", c, err)
		}
		if !bytes.Equal(got, append([]byte("x"), want...)) {
			t.Errorf("%q: got %s, want x%s", c, got, want)
		}
	}
	if got, _ := AppendRaw(nil, nil); string(got) != "null" {
		t.Errorf("empty raw: got %s", got)
	}
	if _, err := AppendRaw(nil, []byte(`{"a" :}`)); err == nil {
		t.Error("invalid JSON needing compaction was accepted")
	}
}

// FuzzAppendRaw: for every valid JSON value AppendRaw writes what
// json.Marshal writes for it as a json.RawMessage.
func FuzzAppendRaw(f *testing.F) {
	for _, c := range rawCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return
		}
		want, err := json.Marshal(json.RawMessage(raw))
		if err != nil {
			t.Fatal(err)
		}
		got, err := AppendRaw(nil, raw)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%q: got %s %v, want %s", raw, got, err, want)
		}
	})
}
