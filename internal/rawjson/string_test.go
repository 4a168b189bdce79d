package rawjson

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

var stringCases = []string{
	"", "a", "plain ascii text of more than eight bytes", "\"", "\\", "<>&", "x<y>z&w",
	"\b\f\n\r\t", "\x00\x01\x1f\x7f", "tab\there\nnewline", "é", "日本語のテキスト", "\u2028\u2029",
	"\u2027\u2030", "\xff", "a\xffb", "\xe2\x80", "\xe2\x80\xa8x", "\xed\xa0\x80", "\xf0\x9f\x98\x80",
	strings.Repeat("0123456789", 10) + "\n" + strings.Repeat("z", 13), "12345678\"", "1234567\"8",
	"\x1f\x20\x21", "~\x7f\x80",
}

func marshalString(t testing.TB, s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// encodeNoHTML is what an Encoder with SetEscapeHTML(false) writes for s.
func encodeNoHTML(t testing.TB, s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// checkBoth compares both forms with encoding/json.
func checkBoth(t testing.TB, s string) {
	if got, want := string(AppendString([]byte("x"), s)), "x"+marshalString(t, s); got != want {
		t.Fatalf("%q: got %s, want %s", s, got, want)
	}
	if got, want := string(AppendStringNoHTML([]byte("x"), s)), "x"+encodeNoHTML(t, s); got != want {
		t.Fatalf("no HTML escaping, %q: got %s, want %s", s, got, want)
	}
}

func TestAppendStringCasesMatchMarshal(t *testing.T) {
	for _, s := range stringCases {
		checkBoth(t, s)
	}
}

// TestAppendStringRandom compares with json.Marshal on strings drawn from
// the bytes that matter, at every alignment to the eight-byte words.
func TestAppendStringRandom(t *testing.T) {
	alphabet := []string{"a", "Z", " ", "\"", "\\", "<", ">", "&", "\n", "\x00", "\x1f", "\x7f", "é", "\u2028", "\u2029", "\xe2", "\x80", "\xff", "日"}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		var b strings.Builder
		for range r.IntN(40) {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		checkBoth(t, b.String())
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range stringCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkBoth(t, s) })
}

func BenchmarkAppendString(b *testing.B) {
	s := strings.Repeat("[user] detail 7 of the investigation into the flaky integration test.\n", 300)
	b.SetBytes(int64(len(s)))
	b.Run("rawjson", func(b *testing.B) {
		var dst []byte
		for b.Loop() {
			dst = AppendString(dst[:0], s)
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			_, _ = json.Marshal(s)
		}
	})
}
