package canonical

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
)

// Reference vectors, also in testdata/vectors.json (docs/canonical-json.md).
func TestEncodeVectors(t *testing.T) {
	tests := []struct {
		name  string
		value any
		bytes string
		hash  string
	}{
		{"origin direct_user", map[string]any{"origin": "direct_user"}, `{"origin":"direct_user"}`,
			"b1e4ff039f83558a6feec68fee9cd5148af0eb44508c4ab90aa8cf0730453f94"},
		{"origin derived", map[string]string{"origin": "derived"}, `{"origin":"derived"}`,
			"56cdef43d9cf44e1077a1b2c1a913acabcab96279ecb775e7e28dbcfb6c2939b"},
		{"content hash payload", map[string]any{"content": "implement the requested behavior", "tool": nil, "artifact_ids": []string{}, "truncated": false},
			`{"artifact_ids":[],"content":"implement the requested behavior","tool":null,"truncated":false}`,
			"2bdd27bf9b99a8505106b92dfe213d30ef3db8e37a12fe4eb65bfa21970e4698"},
		{"rehydration", map[string]any{"todo": map[string]int64{"revision": 1}}, `{"todo":{"revision":1}}`,
			"b9aa23955014a342b89349f43e530874c9f489dd72ce1e7e488d0b47a8a5cd2a"},
		{"empty object", map[string]any{}, `{}`,
			"44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"},
		{"empty array", []any{}, `[]`,
			"4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945"},
		{"empty string", "", `""`,
			"12ae32cb1ec02d01eda3581b127c1fee3b0dc53572ed6baf239721a03d82e126"},
		{"sorting and escapes", map[string]any{"b": 1, "a": []any{true, nil, "x\u0001y\n\"\\"}, "é": "ü", "A": -5},
			`{"A":-5,"a":[true,null,"x\u0001y\n\"\\"],"b":1,"é":"ü"}`,
			"fb41815b7ad9e2c103be5bbc7cf7d4754993fc3f7f5f46b17972cfe7fcb79e66"},
		{"tool payload", map[string]any{"content": nil, "tool": map[string]any{"call_id": "call-1", "name": "test", "status": "success"}, "artifact_ids": []any{"a1"}, "truncated": true},
			`{"artifact_ids":["a1"],"content":null,"tool":{"call_id":"call-1","name":"test","status":"success"},"truncated":true}`,
			"a16da712fba5305ccf5d94e1bc7140e48d8b4aba7126ba7c0a5cf0a127e3c99b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Encode(tt.value)
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			if string(got) != tt.bytes {
				t.Fatalf("Encode = %s, want %s", got, tt.bytes)
			}
			h, err := Hash(tt.value)
			if err != nil {
				t.Fatalf("Hash: %v", err)
			}
			if h != tt.hash {
				t.Fatalf("Hash = %s, want %s", h, tt.hash)
			}
			if hb := HashBytes(got); hb != tt.hash {
				t.Fatalf("HashBytes = %s, want %s", hb, tt.hash)
			}
			n, err := EncodedSize(tt.value)
			if err != nil || n != len(tt.bytes) {
				t.Fatalf("EncodedSize = %d, %v; want %d", n, err, len(tt.bytes))
			}
		})
	}
}

func TestFloatFormat(t *testing.T) {
	tests := []struct {
		f    float64
		want string
	}{
		{1.0, "1.0"},
		{100.0, "100.0"},
		{10.0, "10.0"},
		{1000.0, "1.0e3"},
		{123000.0, "1.23e5"},
		// The minus sign of a negative exponent counts in the cost of the
		// scientific form (docs/canonical-json.md): 0.001 is the last decimal.
		{0.001, "0.001"},
		{0.001234, "0.001234"},
		{0.0001234, "1.234e-4"},
		{1.0e-4, "1.0e-4"},
		{1.0e15, "1.0e15"},
		{1.0e16, "1.0e16"},
		{1.0e20, "1.0e20"},
		{1.2345678901234568e20, "1.2345678901234568e20"},
		{0.1, "0.1"},
		{0.5, "0.5"},
		{1.5, "1.5"},
		{-1.5, "-1.5"},
		{12345.678, "12345.678"},
		{123456789.0, "123456789.0"},
		{9007199254740991.0, "9007199254740991.0"},
		{9007199254740992.0, "9.007199254740992e15"},
		{math.Copysign(0, -1), "-0.0"},
		{0.0, "0.0"},
		{5e-324, "5.0e-324"},
		{math.MaxFloat64, "1.7976931348623157e308"},
	}
	for _, tt := range tests {
		if got := string(AppendFloat(nil, tt.f)); got != tt.want {
			t.Errorf("AppendFloat(%v) = %s, want %s", tt.f, got, tt.want)
		}
		enc, err := Encode(tt.f)
		if err != nil || string(enc) != tt.want {
			t.Errorf("Encode(%v) = %s, %v; want %s", tt.f, enc, err, tt.want)
		}
	}
}

func TestEncodeNumbers(t *testing.T) {
	tests := []struct {
		v    any
		want string
	}{
		{json.Number("0"), "0"},
		{json.Number("-0"), "0"},
		{json.Number("-12"), "-12"},
		{json.Number("123456789012345678901234567890"), "123456789012345678901234567890"},
		{json.Number("1.0"), "1.0"},
		{json.Number("1e3"), "1.0e3"},
		{json.Number("1E2"), "100.0"},
		{json.Number("-0.0"), "-0.0"},
		{json.Number("2.50"), "2.5"},
		{json.Number("1e-400"), "0.0"},
		{int8(-8), "-8"}, {int16(16), "16"}, {int32(-32), "-32"}, {int64(math.MinInt64), "-9223372036854775808"},
		{uint(7), "7"}, {uint8(8), "8"}, {uint16(16), "16"}, {uint32(32), "32"}, {uint64(math.MaxUint64), "18446744073709551615"},
		{float32(0.5), "0.5"},
		{[]int64{1, -2}, "[1,-2]"},
	}
	for _, tt := range tests {
		got, err := Encode(tt.v)
		if err != nil || string(got) != tt.want {
			t.Errorf("Encode(%#v) = %s, %v; want %s", tt.v, got, err, tt.want)
		}
	}
}

func TestEncodeStrings(t *testing.T) {
	tests := []struct{ in, want string }{
		{"\u001f", `"\u001F"`},
		{"\u000b", `"\u000B"`},
		{"\x00", `"\u0000"`},
		{"\b\t\n\f\r", `"\b\t\n\f\r"`},
		{"a/b", `"a/b"`},
		{"\u2028\u2029", "\"\u2028\u2029\""},
		{"\x7f", "\"\x7f\""},
		{"<>&", `"<>&"`},
		{`"\`, `"\"\\"`},
		{"日本語", `"日本語"`},
	}
	for _, tt := range tests {
		got, err := Encode(tt.in)
		if err != nil || string(got) != tt.want {
			t.Errorf("Encode(%q) = %s, %v; want %s", tt.in, got, err, tt.want)
		}
	}
}

type plain struct{ name string }

func (p plain) CanonicalValue() any { return map[string]any{"name": p.name} }

type loop struct{}

func (l loop) CanonicalValue() any { return l }

type panicky struct{ m map[string]any }

func (p *panicky) CanonicalValue() any { return p.m["x"] }

type nilable struct{}

func (n *nilable) CanonicalValue() any {
	if n == nil {
		return nil
	}
	return "set"
}

func TestEncodeTypedValues(t *testing.T) {
	var nilStrings []string
	var nilMap map[string]any
	var nilMaps []map[string]any
	var nilPtr *nilable
	tests := []struct {
		v    any
		want string
	}{
		{nilStrings, "[]"},
		{nilMap, "{}"},
		{nilMaps, "[]"},
		{map[string]int{"b": 2, "a": 1}, `{"a":1,"b":2}`},
		{[]map[string]any{{"k": "v"}}, `[{"k":"v"}]`},
		{plain{"x"}, `{"name":"x"}`},
		{[]any{plain{"y"}}, `[{"name":"y"}]`},
		{nilPtr, "null"},
		{&nilable{}, `"set"`},
	}
	for _, tt := range tests {
		got, err := Encode(tt.v)
		if err != nil || string(got) != tt.want {
			t.Errorf("Encode(%#v) = %s, %v; want %s", tt.v, got, err, tt.want)
		}
	}
}

func TestEncodeRejects(t *testing.T) {
	tests := []struct {
		name string
		v    any
	}{
		{"invalid UTF-8 string", "a\xffb"},
		{"invalid UTF-8 key", map[string]any{"\xc3": 1}},
		{"invalid UTF-8 in string list", []string{"ok", "\xed\xa0\x80"}},
		{"NaN", math.NaN()},
		{"+Inf", math.Inf(1)},
		{"-Inf float32", float32(math.Inf(-1))},
		{"malformed number", json.Number("01")},
		{"empty number", json.Number("")},
		{"number overflow", json.Number("1e400")},
		{"struct", struct{}{}},
		{"pointer", new(int)},
		{"map with int keys", map[int]any{1: 1}},
		{"self-returning valuer", loop{}},
		{"valuer that panics on a nil receiver", (*panicky)(nil)},
		{"nested unsupported", map[string]any{"a": []any{1, complex(1, 2)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Encode(tt.v); !errors.Is(err, ErrNotCanonical) {
				t.Fatalf("Encode error = %v, want ErrNotCanonical", err)
			}
			if _, err := Hash(tt.v); !errors.Is(err, ErrNotCanonical) {
				t.Fatalf("Hash error = %v, want ErrNotCanonical", err)
			}
			if _, err := EncodedSize(tt.v); !errors.Is(err, ErrNotCanonical) {
				t.Fatalf("EncodedSize error = %v, want ErrNotCanonical", err)
			}
		})
	}
}

// nest wraps leaf in n arrays.
func nest(n int, leaf any) any {
	v := leaf
	for range n {
		v = []any{v}
	}
	return v
}

// nestMaps wraps leaf in n objects.
func nestMaps(n int, leaf any) any {
	v := leaf
	for range n {
		v = map[string]any{"k": v}
	}
	return v
}

func TestEncodeDepth(t *testing.T) {
	tests := []struct {
		name string
		v    any
		ok   bool
	}{
		{"33 empty nested arrays", nest(32, []any{}), true},
		{"34 empty nested arrays", nest(33, []any{}), false},
		{"scalar at depth 32", nest(32, 1), true},
		{"scalar at depth 33", nest(33, 1), false},
		{"33 nested objects", nestMaps(32, map[string]any{}), true},
		{"34 nested objects", nestMaps(33, map[string]any{}), false},
		{"string list at depth 32", nest(31, []string{"x"}), true},
		{"string list at depth 33", nest(32, []string{"x"}), false},
		{"empty string list at depth 32", nest(32, []string{}), true},
		{"int map at depth 33", nest(32, map[string]int64{"a": 1}), false},
		// The deep object is written with the keys kept from the first.
		{"kept-key string at depth 32", []any{map[string]any{"k": "x"}, nest(29, []any{map[string]any{"k": "y"}})}, true},
		{"kept-key string at depth 33", []any{map[string]any{"k": "x"}, nest(30, []any{map[string]any{"k": "y"}})}, false},
		{"kept-key int at depth 33", []any{map[string]any{"k": 1}, nest(30, []any{map[string]any{"k": 2}})}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Encode(tt.v)
			if tt.ok && err != nil {
				t.Fatalf("Encode: %v", err)
			}
			if !tt.ok && !errors.Is(err, ErrNotCanonical) {
				t.Fatalf("Encode error = %v, want ErrNotCanonical", err)
			}
		})
	}
}

func TestAppendEncode(t *testing.T) {
	dst := []byte("prefix:")
	out, err := AppendEncode(dst, map[string]any{"a": 1})
	if err != nil || string(out) != `prefix:{"a":1}` {
		t.Fatalf("AppendEncode = %s, %v", out, err)
	}
	out, err = AppendEncode([]byte("keep"), math.NaN())
	if err == nil || string(out) != "keep" {
		t.Fatalf("AppendEncode on error = %s, %v; want dst unchanged and an error", out, err)
	}
}

func TestEncodeLargeStringRuns(t *testing.T) {
	s := strings.Repeat("a\"b", 1000)
	got, err := Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	want := `"` + strings.Repeat(`a\"b`, 1000) + `"`
	if string(got) != want {
		t.Fatal("escaped runs differ")
	}
}

// Hash shares pooled encoders between goroutines; run with -race.
func TestHashConcurrent(t *testing.T) {
	values := []any{
		map[string]any{"a": []any{1, "x\n", map[string]any{"b": nil}}},
		[]string{"p", "q"},
		strings.Repeat("long \"escaped\" text\t", 500),
		map[string]int64{"n": 7},
	}
	want := make([]string, len(values))
	for i, v := range values {
		want[i], _ = Hash(v)
	}
	errs := make(chan error, 8)
	for g := range 8 {
		go func() {
			for n := range 200 {
				i := (g + n) % len(values)
				if got, err := Hash(values[i]); err != nil || got != want[i] {
					errs <- fmt.Errorf("value %d: Hash = %s, %v; want %s", i, got, err, want[i])
					return
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// A Raw value is its encoding: an object holding it encodes and hashes as
// the object holding the value itself, and encoding/json writes it as the
// JSON it is.
func TestRawIsTheValueItEncodes(t *testing.T) {
	value := map[string]any{"b": []any{"x<y", int64(2)}, "a": nil}
	enc, err := Encode(value)
	if err != nil {
		t.Fatal(err)
	}
	want, err := Encode(map[string]any{"k": value, "n": int64(1)})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Encode(map[string]any{"k": Raw(enc), "n": int64(1)})
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("Encode = %s (%v), want %s", got, err, want)
	}
	if h, _ := Hash(map[string]any{"k": Raw(enc), "n": int64(1)}); h != HashBytes(want) {
		t.Fatalf("Hash = %s, want %s", h, HashBytes(want))
	}
	marshaled, err := json.Marshal(map[string]any{"k": Raw(enc)})
	if err != nil || string(marshaled) != `{"k":{"a":null,"b":["x\u003cy",2]}}` {
		t.Fatalf("json.Marshal = %s (%v)", marshaled, err)
	}
}

// Int and Float read the numbers Decode gives, and the Go numbers a value
// built in code holds: integers only without fraction or exponent, floats
// only finite.
func TestIntAndFloatOfDecodedNumbers(t *testing.T) {
	for _, tc := range []struct {
		v       any
		n       int64
		isInt   bool
		f       float64
		isFloat bool
	}{
		{json.Number("42"), 42, true, 42, true},
		{json.Number("-7"), -7, true, -7, true},
		{json.Number("1.0"), 0, false, 1, true},
		{json.Number("1e3"), 0, false, 1000, true},
		{json.Number("1e999"), 0, false, 0, false},
		{json.Number("9223372036854775808"), 0, false, 9223372036854775808, true},
		{int(3), 3, true, 3, true},
		{int32(-3), -3, true, -3, true},
		{uint64(math.MaxInt64) + 1, 0, false, 0, false},
		{uint32(5), 5, true, 5, true},
		{1.5, 0, false, 1.5, true},
		{math.Inf(1), 0, false, 0, false},
		{float32(2), 0, false, 2, true},
		{"1", 0, false, 0, false},
		{nil, 0, false, 0, false},
	} {
		if n, ok := Int(tc.v); ok != tc.isInt || (ok && n != tc.n) {
			t.Errorf("Int(%#v) = %d, %v; want %d, %v", tc.v, n, ok, tc.n, tc.isInt)
		}
		if f, ok := Float(tc.v); ok != tc.isFloat || (ok && f != tc.f) {
			t.Errorf("Float(%#v) = %v, %v; want %v, %v", tc.v, f, ok, tc.f, tc.isFloat)
		}
	}
}
