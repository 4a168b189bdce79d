package offline

import (
	"encoding/json"
	"testing"
)

// argumentsByMap is what arguments reads, by decoding the whole text.
func argumentsByMap(text string) callArgs {
	var m map[string]any
	if len(text) > maxArgumentBytes || json.Unmarshal([]byte(text), &m) != nil {
		return callArgs{}
	}
	return argumentsOf(m)
}

var argumentTexts = []string{
	``, `null`, `7`, `"path"`, `[]`, `[{"path":"a.go"}]`, `{}`, ` { } `, `{`, `{"path":}`, `{"path":"a.go",}`,
	`{"path":"internal/db/query.go"}`,
	`{"command":"go test ./internal/db/..."}`,
	`{"cmd":"ls","command":""}`,
	`{"command":"","cmd":"make"}`,
	`{"path":"a.go","path":"b.go"}`,
	`{"path":"a.go","path":1}`,
	`{"path":"a.go","path":null}`,
	`{"file":"f.go","path":""}`,
	`{"url":"https://example.com/x","path":"p.go"}`,
	`{"query":"q","pattern":"p"}`,
	`{"pattern":"p","query":""}`,
	`{"patch":"@@ -74,7 +96,9 @@ func retry","path":"internal/db/query.go"}`,
	`{"path":"a\"b.go"}`,
	`{"path":"a\\b.go"}`,
	`{"path":"\u0061.go"}`,
	`{"pat\u0068":"a.go"}`,
	`{"other":"\"path\":\"x\"","path":"y.go"}`,
	`{"nested":{"path":"inner.go","deep":[1,2,{"command":"rm"}]},"path":"outer.go"}`,
	`{"n":1e999,"path":"a.go"}`,
	`{"n":[1,2,-1e400],"path":"a.go"}`,
	`{"n":-0.5e-3,"t":true,"f":false,"z":null,"path":"a.go"}`,
	`{"n":12345678901234567890123,"path":"a.go"}`,
	"{\"path\":\"a\xffb.go\"}",
	"{\"\xff\":\"x\",\"path\":\"a.go\"}",
	"{\"path\":\"\xe4\xb8\xad.go\"}",
	"\t{\n\"command\" :\r\"go vet\" , \"path\" : [ ] }\n",
	`{"command":"go test","command":{"x":"y"}}`,
	`{"path":"a.go"} {"path":"b.go"}`,
	`{"Path":"a.go"}`,
}

// The scanner reads what decoding the whole text into a map gives.
func TestArgumentsMatchDecoding(t *testing.T) {
	for _, text := range argumentTexts {
		if got, want := arguments(text), argumentsByMap(text); got != want {
			t.Errorf("arguments(%q) = %+v, want %+v", text, got, want)
		}
	}
}

// The scanner's fast path answers only when it reads the same as decoding.
func TestScanArgumentsMatchesDecoding(t *testing.T) {
	fast := 0
	for _, text := range argumentTexts {
		if got, ok := scanArguments(text); ok {
			fast++
			if want := argumentsByMap(text); got != want {
				t.Errorf("scanArguments(%q) = %+v, want %+v", text, got, want)
			}
		}
	}
	if fast < len(argumentTexts)/2 {
		t.Errorf("the scanner read %d of %d texts itself, want most", fast, len(argumentTexts))
	}
}

func FuzzArguments(f *testing.F) {
	for _, text := range argumentTexts {
		f.Add(text)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if got, want := arguments(text), argumentsByMap(text); got != want {
			t.Errorf("arguments(%q) = %+v, want %+v", text, got, want)
		}
	})
}
