package canonical

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestDecodeValues(t *testing.T) {
	tests := []struct {
		in   string
		want any
	}{
		{`null`, nil},
		{` true `, true},
		{"\t\r\nfalse", false},
		{`"a\u00e9\n\/\ud83d\ude00"`, "aé\n/😀"},
		{`12`, json.Number("12")},
		{`-0`, json.Number("-0")},
		{`1.0`, json.Number("1.0")},
		{`1e3`, json.Number("1e3")},
		{`[]`, []any{}},
		{`{}`, map[string]any{}},
		{`{"a":[1,{"b":null}],"c":"d"}`, map[string]any{"a": []any{json.Number("1"), map[string]any{"b": nil}}, "c": "d"}},
		{`["\u2028", "é"]`, []any{"\u2028", "é"}},
	}
	for _, tt := range tests {
		got, err := Decode([]byte(tt.in))
		if err != nil {
			t.Errorf("Decode(%s): %v", tt.in, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Decode(%s) = %#v, want %#v", tt.in, got, tt.want)
		}
	}
}

func TestDecodeIntegersAndFloatsStayDistinct(t *testing.T) {
	v, err := Decode([]byte(`[1, 1.0]`))
	if err != nil {
		t.Fatal(err)
	}
	enc, err := Encode(v)
	if err != nil {
		t.Fatal(err)
	}
	if string(enc) != `[1,1.0]` {
		t.Fatalf("re-encoded = %s, want [1,1.0]", enc)
	}
}

func TestDecodeRejects(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want error
	}{
		{"empty", ``, ErrInvalidJSON},
		{"only space", `  `, ErrInvalidJSON},
		{"trailing data", `{} {}`, ErrInvalidJSON},
		{"trailing comma array", `[1,]`, ErrInvalidJSON},
		{"trailing comma object", `{"a":1,}`, ErrInvalidJSON},
		{"single quotes", `'a'`, ErrInvalidJSON},
		{"unquoted key", `{a:1}`, ErrInvalidJSON},
		{"leading zero", `01`, ErrInvalidJSON},
		{"plus sign", `+1`, ErrInvalidJSON},
		{"bare dot", `1.`, ErrInvalidJSON},
		{"bare exponent", `1e`, ErrInvalidJSON},
		{"hex", `0x1`, ErrInvalidJSON},
		{"NaN literal", `NaN`, ErrInvalidJSON},
		{"overflowing float", `1e400`, ErrInvalidJSON},
		{"bad literal", `tru`, ErrInvalidJSON},
		{"raw control char", "\"a\x01b\"", ErrInvalidJSON},
		{"raw newline", "\"a\nb\"", ErrInvalidJSON},
		{"invalid UTF-8", "\"a\xffb\"", ErrInvalidJSON},
		{"invalid UTF-8 after escape", "\"\\n\xff\"", ErrInvalidJSON},
		{"encoded surrogate bytes", "\"\xed\xa0\x80\"", ErrInvalidJSON},
		{"lone high surrogate", `"\ud800"`, ErrInvalidJSON},
		{"lone low surrogate", `"\udc00"`, ErrInvalidJSON},
		{"high surrogate then letter", `"\ud800\u0041"`, ErrInvalidJSON},
		{"bad escape", `"\x41"`, ErrInvalidJSON},
		{"short unicode escape", `"\u12"`, ErrInvalidJSON},
		{"unterminated string", `"abc`, ErrInvalidJSON},
		{"unterminated array", `[1`, ErrInvalidJSON},
		{"unterminated object", `{"a":1`, ErrInvalidJSON},
		{"missing colon", `{"a" 1}`, ErrInvalidJSON},
		{"byte order mark", "\ufeff{}", ErrInvalidJSON},
		{"duplicate key", `{"a":1,"a":2}`, ErrDuplicateKey},
		{"duplicate key after unescape", `{"a":1,"\u0061":2}`, ErrDuplicateKey},
		{"nested duplicate key", `[{"x":{"version":1,"version":1}}]`, ErrDuplicateKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := Decode([]byte(tt.in))
			if !errors.Is(err, tt.want) {
				t.Fatalf("Decode = %#v, %v; want %v", v, err, tt.want)
			}
			var de *DecodeError
			if !errors.As(err, &de) || de.Reason == "" {
				t.Fatalf("error %v is not a *DecodeError with a reason", err)
			}
		})
	}
}

func TestDecodeDepth(t *testing.T) {
	ok33 := strings.Repeat("[", 33) + strings.Repeat("]", 33)
	if _, err := Decode([]byte(ok33)); err != nil {
		t.Fatalf("33 nested arrays: %v", err)
	}
	bad34 := strings.Repeat("[", 34) + strings.Repeat("]", 34)
	if _, err := Decode([]byte(bad34)); !errors.Is(err, ErrInvalidJSON) {
		t.Fatalf("34 nested arrays: err = %v, want ErrInvalidJSON", err)
	}
	scalar33 := strings.Repeat("[", 33) + "1" + strings.Repeat("]", 33)
	if _, err := Decode([]byte(scalar33)); !errors.Is(err, ErrInvalidJSON) {
		t.Fatalf("scalar at depth 33: err = %v, want ErrInvalidJSON", err)
	}
	deep := strings.Repeat(`{"k":`, 100000)
	if _, err := Decode([]byte(deep)); !errors.Is(err, ErrInvalidJSON) {
		t.Fatalf("very deep input: err = %v, want ErrInvalidJSON", err)
	}
}

func TestDecodeErrorMessage(t *testing.T) {
	_, err := Decode([]byte(`{"a":1,"a":2}`))
	if err == nil || !strings.Contains(err.Error(), `key "a" appears twice`) || !strings.Contains(err.Error(), "byte 7") {
		t.Fatalf("error message = %v", err)
	}
}
