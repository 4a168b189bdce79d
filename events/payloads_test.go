package events_test

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/events"
)

// The conversions in schemas.go hold the payload types to Cairn's field
// names, order and Go types; this holds them to the same JSON names.
func TestPayloadTypesKeepCairnsJSONNames(t *testing.T) {
	for _, pair := range [][2]any{
		{events.Policy{}, events.Policy{}},
		{events.Accounting{}, events.Accounting{}},
		{events.AntiThrash{}, events.AntiThrash{}},
		{events.Usage{}, events.Usage{}},
		{events.Range{}, events.Range{}},
		{events.ManifestEntry{}, events.ManifestEntry{}},
	} {
		ours, theirs := reflect.TypeOf(pair[0]), reflect.TypeOf(pair[1])
		if a, b := jsonNames(ours), jsonNames(theirs); !slices.Equal(a, b) {
			t.Errorf("%v has JSON names %v, %v has %v", ours, a, theirs, b)
		}
	}
}

// The checkpoint's schema adds the keys no field holds by hand: it must
// name every key of the stored checkpoint, require each, and name no other.
func TestCheckpointSchemaNamesTheStoredKeys(t *testing.T) {
	schema := events.Schemas()["activated.json"]["properties"].(map[string]any)["checkpoint"].(map[string]any)
	stored := slices.Sorted(maps.Keys((&events.Checkpoint{}).Map()))
	props := slices.Sorted(maps.Keys(schema["properties"].(map[string]any)))
	var required []string
	for _, k := range schema["required"].([]any) {
		required = append(required, k.(string))
	}
	if !slices.Equal(props, stored) || !slices.Equal(slices.Sorted(slices.Values(required)), stored) {
		t.Errorf("schema properties %v\nrequired %v\nthe stored checkpoint has %v", props, required, stored)
	}
}

// Every policy field documents its default, and the defaults are Cairn's.
func TestPolicyDefaultTagsAreCairnsDefaults(t *testing.T) {
	want := reflect.ValueOf(events.Policy(events.DefaultPolicy()))
	typ := want.Type()
	for i := range typ.NumField() {
		f := typ.Field(i)
		raw, ok := f.Tag.Lookup("default")
		if !ok {
			t.Errorf("policy field %s has no default tag", f.Name)
			continue
		}
		got := reflect.New(f.Type)
		if err := json.Unmarshal([]byte(raw), got.Interface()); err != nil {
			t.Errorf("policy field %s: default %q: %v", f.Name, raw, err)
			continue
		}
		if !reflect.DeepEqual(got.Elem().Interface(), want.Field(i).Interface()) {
			t.Errorf("policy field %s: default tag %s, Cairn's default %v", f.Name, raw, want.Field(i))
		}
	}
	if events.DefaultPolicy() != events.Policy(events.DefaultPolicy()) {
		t.Error("DefaultPolicy differs from Cairn's")
	}
}

func jsonNames(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		out = append(out, name)
	}
	return out
}
