package rawjson

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

var stringCases = []string{
	"", "a", "plain ascii text", "\"", "\\", "<>&", "x<y>z&w", "\b\f\n\r\t", "\x00\x01\x1f\x7f",
	"é", "日本語", "\u2028\u2029", "\u2027\u2030", "\xff", "a\xffb", "\xe2\x80", "\xe2\x80\xa8x",
	"\xed\xa0\x80", "\xf0\x9f\x98\x80", strings.Repeat("0123456789", 10) + "\n",
}

func checkString(t *testing.T, s string) {
	t.Helper()
	want, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if got := AppendString([]byte("x"), s); !bytes.Equal(got, append([]byte("x"), want...)) {
		t.Fatalf("%q: got %s, want x%s", s, got, want)
	}
}

func TestAppendStringMatchesMarshal(t *testing.T) {
	for _, s := range stringCases {
		checkString(t, s)
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range stringCases {
		f.Add(s)
	}
	f.Fuzz(checkString)
}

func TestAppendTimeMatchesMarshal(t *testing.T) {
	for _, tm := range []time.Time{{}, time.Date(2026, 11, 29, 23, 0, 0, 123456789, time.UTC), time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600))} {
		want, _ := json.Marshal(tm)
		got, err := AppendTime(nil, tm)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%v: got %s %v, want %s", tm, got, err, want)
		}
	}
	if _, err := AppendTime(nil, time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)); err == nil {
		t.Error("year 10000 was accepted")
	}
}
