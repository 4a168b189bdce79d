package canonical

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// referenceString is the obvious byte-at-a-time form of the OTP escaping
// table, against which the encoder is checked.
func referenceString(s string) (string, bool) {
	if !utf8.ValidString(s) {
		return "", false
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			b.WriteString(`\"`)
		case c == '\\':
			b.WriteString(`\\`)
		case c == '\b':
			b.WriteString(`\b`)
		case c == '\t':
			b.WriteString(`\t`)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\f':
			b.WriteString(`\f`)
		case c == '\r':
			b.WriteString(`\r`)
		case c < 0x20:
			fmt.Fprintf(&b, `\u%04X`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String(), true
}

func checkString(t *testing.T, s string) {
	t.Helper()
	want, ok := referenceString(s)
	got, err := Encode(s)
	if !ok {
		if !errors.Is(err, ErrNotCanonical) {
			t.Fatalf("Encode(%q) = %s, %v; want ErrNotCanonical", s, got, err)
		}
		return
	}
	if err != nil || string(got) != want {
		t.Fatalf("Encode(%q) = %s, %v; want %s", s, got, err, want)
	}
}

// Every byte value at every offset of a word, with plain bytes around it.
func TestEncodeStringEveryByteEveryOffset(t *testing.T) {
	for c := range 256 {
		for off := range 17 {
			s := strings.Repeat("a", off) + string([]byte{byte(c)}) + strings.Repeat("b", 17-off)
			checkString(t, s)
		}
	}
}

func TestEncodeStringRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "Z", " ", "\"", "\\", "\n", "\t", "\x00", "\x1f", "\x7f", "é", "€", "😀", "\u2028", "\xff", "\xed\xa0\x80"}
	for range 5000 {
		var b strings.Builder
		for range r.IntN(40) {
			if r.IntN(3) == 0 {
				b.WriteString(strings.Repeat("x", r.IntN(20)))
			}
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		checkString(t, b.String())
	}
}

// Strings inside a value, written into buffers from no spare room to
// plenty, so the encoder's own fast path, its growth and its hand-over to
// appendStringRest (non-ASCII text, escapes beyond the room kept for them)
// all run.
func TestEncodeStringInBuffers(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	alphabet := []string{"a", " ", "\"", "\\", "\n", "\x01", "é", "😀", "\xff"}
	strs := []string{"", "plain", strings.Repeat("\"", 300), strings.Repeat("\x01", 100) + "é", "é" + strings.Repeat("\\", 200)}
	for range 500 {
		var b strings.Builder
		for range r.IntN(60) {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		strs = append(strs, b.String())
	}
	for _, s := range strs {
		want, ok := referenceString(s)
		for _, spare := range []int{0, 7, len(want) + 60, len(want) + 200, 1 << 14} {
			got, err := AppendEncode(make([]byte, 0, spare), []any{"x", s, s})
			if !ok {
				if !errors.Is(err, ErrNotCanonical) {
					t.Fatalf("AppendEncode(%q) = %s, %v; want ErrNotCanonical", s, got, err)
				}
				continue
			}
			if exp := `["x",` + want + "," + want + "]"; err != nil || string(got) != exp {
				t.Fatalf("AppendEncode(%q), spare %d = %s, %v; want %s", s, spare, got, err, exp)
			}
		}
	}
}

// AppendStrings and AppendStringOrNull write what Encode writes for a list
// of strings and for a string or nil.
func TestAppendStringsAndStringOrNull(t *testing.T) {
	s := "tab\tquote\""
	for _, list := range [][]string{nil, {}, {"a"}, {"a", s, ""}} {
		want, _ := Encode(append([]any{}, anySlice(list)...))
		if got, err := AppendStrings(nil, list); err != nil || string(got) != string(want) {
			t.Errorf("AppendStrings(%q) = %s, %v; want %s", list, got, err, want)
		}
	}
	if _, err := AppendStrings(nil, []string{"ok", "\xff"}); !errors.Is(err, ErrNotCanonical) {
		t.Errorf("invalid UTF-8: %v, want ErrNotCanonical", err)
	}
	for _, v := range []*string{nil, &s} {
		var want []byte
		if v == nil {
			want, _ = Encode(nil)
		} else {
			want, _ = Encode(*v)
		}
		if got, err := AppendStringOrNull(nil, v); err != nil || string(got) != string(want) {
			t.Errorf("AppendStringOrNull = %s, %v; want %s", got, err, want)
		}
	}
}

func anySlice(list []string) []any {
	out := make([]any, len(list))
	for i, s := range list {
		out[i] = s
	}
	return out
}
