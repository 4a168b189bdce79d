package canonical

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// FuzzDecode checks that Decode never panics and that whatever it accepts is
// canonical and re-encodes to a fixed point.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"b":1,"a":[true,null,"x\u0001y\n\"\\"],"é":"ü","A":-5}`,
		`[1,1.0,-0,-0.0,1e3,0.001,1.0e-4,123456789012345678901234567890]`,
		`{"a":1,"a":2}`, `"\ud83d\ude00"`, `"\ud800"`, `[[[[[]]]]]`, ` {"x" : [ ] } `,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := Decode(data)
		if err != nil {
			if !errors.Is(err, ErrInvalidJSON) && !errors.Is(err, ErrDuplicateKey) {
				t.Fatalf("unclassified error %v", err)
			}
			return
		}
		enc, err := Encode(v)
		if err != nil {
			t.Fatalf("Decode accepted %q but Encode failed: %v", data, err)
		}
		v2, err := Decode(enc)
		if err != nil {
			t.Fatalf("Decode of the encoding %s failed: %v", enc, err)
		}
		enc2, err := Encode(v2)
		if err != nil || !bytes.Equal(enc, enc2) {
			t.Fatalf("re-encoding differs: %s vs %s (%v)", enc, enc2, err)
		}
		if !json.Valid(enc) {
			t.Fatalf("encoding %s is not valid JSON", enc)
		}
	})
}

// FuzzEncodeRoundTrip builds values from fuzzed scalars and checks that the
// encoding decodes back to the same encoding.
func FuzzEncodeRoundTrip(f *testing.F) {
	f.Add("key", "value\u2028/\x7f", int64(-5), 1.5, true)
	f.Add("", "\x00\x1f", int64(0), 1e21, false)
	f.Add("é", "\xff", int64(1<<62), 0.1, true)
	f.Fuzz(func(t *testing.T, k, s string, n int64, fl float64, b bool) {
		v := map[string]any{
			k:     []any{s, n, fl, b, nil},
			"map": map[string]string{s: k},
			"ids": []string{k, s},
		}
		enc, err := Encode(v)
		if err != nil {
			if !errors.Is(err, ErrNotCanonical) {
				t.Fatalf("unclassified error %v", err)
			}
			return
		}
		dec, err := Decode(enc)
		if err != nil {
			t.Fatalf("Decode(%s): %v", enc, err)
		}
		enc2, err := Encode(dec)
		if err != nil || !bytes.Equal(enc, enc2) {
			t.Fatalf("round trip differs: %s vs %s (%v)", enc, enc2, err)
		}
	})
}

// FuzzEncodeString checks the string escaper against the byte-at-a-time
// reference, whole and as an object key (which takes the kept-key path the
// second time).
func FuzzEncodeString(f *testing.F) {
	f.Add("plain")
	f.Add("a\"b\\c\nd\x00e\x1f\x7f")
	f.Add(strings.Repeat("func cut(events []Event) int {\n\t\"x\"\n}\n", 5))
	f.Add("é€😀\u2028\xff")
	f.Fuzz(func(t *testing.T, s string) {
		checkString(t, s)
		if s == "k" {
			return // the objects below would have one member
		}
		want, ok := referenceString(s)
		v := []any{map[string]any{s: 1, "k": 2}, map[string]any{s: 3, "k": 4}}
		got, err := Encode(v)
		if !ok {
			if !errors.Is(err, ErrNotCanonical) {
				t.Fatalf("Encode with key %q = %s, %v; want ErrNotCanonical", s, got, err)
			}
			return
		}
		a, b := want+":1", `"k":2`
		c, d := want+":3", `"k":4`
		if s > "k" {
			a, b = b, a
			c, d = d, c
		}
		if exp := "[{" + a + "," + b + "},{" + c + "," + d + "}]"; err != nil || string(got) != exp {
			t.Fatalf("Encode with key %q = %s, %v; want %s", s, got, err, exp)
		}
	})
}
