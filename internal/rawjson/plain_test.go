package rawjson

import (
	"encoding/json"
	"strings"
	"testing"
)

// plainInputs puts every byte plain looks at at several offsets, inside and
// outside strings.
func plainInputs() []string {
	var ins []string
	for _, c := range []string{"<", ">", "&", "\u2028", "\u2029", "\u2027", "\\\\", "\\\"", " ", "\t", "\n", "\r", "é", "\xe2\x80"} {
		for at := 0; at <= 9; at++ {
			s := strings.Repeat("a", at) + c + strings.Repeat("b", 9-at)
			ins = append(ins, "\""+s+"\"", "[\""+s+"\"]", "{\"k\":\""+s+"\",\"n\":1}")
		}
	}
	return append(ins, "[1, 2]", "\"\"", "{\"a\":[true,false,null,-1.5e3]}", "{ \"a\":1}")
}

// plain must say true exactly when json.Marshal would return a valid raw
// value unchanged: that is the property AppendRaw's fast path relies on.
func checkPlain(t *testing.T, raw []byte) {
	t.Helper()
	if !json.Valid(raw) {
		return // invalid JSON goes to json.Marshal whatever plain says
	}
	out, err := json.Marshal(json.RawMessage(raw))
	if err != nil {
		t.Fatalf("json.Marshal(%q): %v", raw, err)
	}
	if got, want := plain(raw), string(out) == string(raw); got != want {
		t.Fatalf("plain(%q) = %v; json.Marshal leaves it unchanged: %v", raw, got, want)
	}
}

func TestPlainAgreesWithMarshal(t *testing.T) {
	for _, in := range plainInputs() {
		checkPlain(t, []byte(in))
	}
}

func FuzzPlainAgreesWithMarshal(f *testing.F) {
	for _, in := range plainInputs() {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 0 {
			checkPlain(t, b)
		}
	})
}
