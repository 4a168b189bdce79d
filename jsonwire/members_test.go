package jsonwire

import (
	"reflect"
	"slices"
	"testing"

	"github.com/cairnhq/cairn/canonical"
)

type inner struct {
	Kind string `json:"kind"`
	ID   string `json:"id"`
}

type sample struct {
	Name   string            `json:"name"`
	Count  int64             `json:"count,omitempty" null:"true"`
	Flag   bool              `json:"flag,omitempty"`
	Hash   string            `json:"hash,omitempty" null:"true" pattern:"^[0-9a-f]{64}$"`
	Label  string            `json:"label,omitempty" null:"true"`
	Note   *string           `json:"note" required:"false"`
	IDs    []string          `json:"ids,omitempty"`
	Sizes  map[string]int64  `json:"sizes,omitempty"`
	Extra  map[string]any    `json:"extra,omitempty"`
	Any    any               `json:"any,omitempty"`
	Scope  *inner            `json:"scope,omitempty"`
	Counts []int64           `json:"counts,omitempty"`
	Tags   map[string]string `json:"tags,omitempty"`
}

func TestFieldsFollowTheTags(t *testing.T) {
	fields := Fields(reflect.TypeFor[sample]())
	if got := Names(fields, true); !slices.Equal(got, []string{"name"}) {
		t.Fatalf("required %v", got)
	}
	if len(fields) != 13 || fields[1].Name != "count" || !fields[1].OmitEmpty {
		t.Fatalf("fields %+v", fields)
	}
	if missing := Missing(fields, map[string]any{"count": int64(1)}); !slices.Equal(missing, []string{"name"}) {
		t.Fatalf("missing %v", missing)
	}
}

// Each member is read as its Go type says, and the first one of the wrong
// JSON type names its field and rule.
func TestReadMember(t *testing.T) {
	for _, tc := range []struct {
		name  string
		value any
		rule  string
	}{
		{"name", "n", ""},
		{"name", nil, "type"},
		{"name", int64(1), "type"},
		{"count", canonicalNumber(t, "12"), ""},
		{"count", canonicalNumber(t, "1.5"), "type"},
		{"count", nil, ""},
		{"flag", "yes", "type"},
		{"flag", nil, "type"},
		{"hash", "", "pattern"},
		{"hash", nil, ""},
		{"label", "", ""},
		{"note", nil, ""},
		{"note", "x", ""},
		{"note", false, "type"},
		{"ids", []any{"a"}, ""},
		{"ids", []any{"a", int64(1)}, "type"},
		{"sizes", map[string]any{"a": int64(1)}, ""},
		{"sizes", map[string]any{"a": "1"}, "type"},
		{"extra", map[string]any{"a": "1"}, ""},
		{"extra", []any{}, "type"},
		{"any", []any{"x"}, ""},
		{"scope", map[string]any{"kind": "k", "id": "i"}, ""},
		{"scope", map[string]any{"kind": "k"}, "type"},
		{"scope", map[string]any{"kind": "k", "id": "i", "more": "m"}, "type"},
		{"scope", map[string]any{"kind": "k", "id": int64(1)}, "type"},
		{"scope", "k", "type"},
		{"counts", []any{int64(1), int64(2)}, ""},
		{"counts", []any{"1"}, "type"},
		{"tags", map[string]any{"a": "b"}, ""},
		{"tags", map[string]any{"a": true}, "type"},
	} {
		var got sample
		var failed Field
		rule := ""
		err := Read(reflect.ValueOf(&got).Elem(), Fields(reflect.TypeFor[sample]()), map[string]any{tc.name: tc.value},
			func(f Field, r string) error {
				failed, rule = f, r
				return errFailed
			})
		if rule != tc.rule || (rule != "" && (err != errFailed || failed.Name != tc.name)) {
			t.Errorf("%s = %#v: rule %q at %q, want %q", tc.name, tc.value, rule, failed.Name, tc.rule)
		}
	}
}

func TestReadStoresTheValues(t *testing.T) {
	var got sample
	m := map[string]any{"name": "n", "count": int64(3), "flag": true, "note": "x", "ids": []any{"a", "b"},
		"sizes": map[string]any{"s": int64(2)}, "scope": map[string]any{"kind": "k", "id": "i"}, "counts": []any{int64(4)}}
	if err := Read(reflect.ValueOf(&got).Elem(), Fields(reflect.TypeFor[sample]()), m, nil); err != nil {
		t.Fatal(err)
	}
	want := sample{Name: "n", Count: 3, Flag: true, Note: new("x"), IDs: []string{"a", "b"}, Sizes: map[string]int64{"s": 2},
		Scope: &inner{Kind: "k", ID: "i"}, Counts: []int64{4}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("read %+v\nwant %+v", got, want)
	}
}

var errFailed = failedError{}

type failedError struct{}

func (failedError) Error() string { return "failed" }

func canonicalNumber(t *testing.T, s string) any {
	v, err := canonical.Decode([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return v
}
