package rawjson

import (
	"strings"
	"testing"
)

// plainReference is plain as first written: one byte at a time.
func plainReference(raw []byte) bool {
	if c := raw[0]; c != '{' && c != '[' && c != '"' && c != 't' && c != 'f' && c != 'n' && c != '-' && (c < '0' || c > '9') {
		return false
	}
	inString := false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if special[c] == 0 {
			continue
		}
		switch {
		case c == '<' || c == '>' || c == '&':
			return false
		case c == 0xE2:
			if i+2 < len(raw) && raw[i+1] == 0x80 && raw[i+2]&^1 == 0xA8 {
				return false
			}
		case inString:
			if c == '\\' {
				i++
			} else if c == '"' {
				inString = false
			}
		case c == '"':
			inString = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			return false
		}
	}
	return !inString
}

// plainInputs puts every byte plain looks at at every offset of a string
// longer than a word, inside and outside strings.
func plainInputs() []string {
	var ins []string
	for _, c := range []string{"<", ">", "&", "\u2028", "\u2029", "\u2027", "\\", "\\\\", "\\\"", " ", "\t", "\n", "\r", "\"", "é", "\xe2", "\xe2\x80"} {
		for at := 0; at <= 17; at++ {
			s := strings.Repeat("a", at) + c + strings.Repeat("b", 17-at)
			ins = append(ins, "\""+s+"\"", "[\""+s+"\"]", "{\"k\":\""+s+"\",\"n\":1}", s)
		}
	}
	return append(ins, "\"unterminated", "{\"a\":\"x\\\"}", "[1, 2]", "\"\"")
}

func TestPlainMatchesReference(t *testing.T) {
	for _, in := range plainInputs() {
		if got, want := plain([]byte(in)), plainReference([]byte(in)); got != want {
			t.Errorf("plain(%q) = %v, reference %v", in, got, want)
		}
	}
}

func FuzzPlainMatchesReference(f *testing.F) {
	for _, in := range plainInputs() {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 {
			return
		}
		if got, want := plain(b), plainReference(b); got != want {
			t.Fatalf("plain(%q) = %v, reference %v", b, got, want)
		}
	})
}

// BenchmarkPlain and BenchmarkPlainReference scan an event payload of
// prose and code; compare them in one run.
func BenchmarkPlain(b *testing.B)          { benchmarkPlain(b, plain) }
func BenchmarkPlainReference(b *testing.B) { benchmarkPlain(b, plainReference) }

func benchmarkPlain(b *testing.B, f func([]byte) bool) {
	line := "Step 7: the cut point moves back when the retained tool result's call_id matches an assistant call, so the tail keeps the pair together.\\n    if events[i].Role == \\\"tool\\\" {\\n        continue\\n    }\\n"
	raw := []byte("{\"content\":\"" + strings.Repeat(line, 100) + "\",\"n\":1}")
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if !f(raw) {
			b.Fatal("not plain")
		}
	}
}
