package events_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/cairnhq/cairn/events"
	"github.com/cairnhq/cairn/internal/engine"
)

// The conversions in schemas.go hold the payload types to Cairn's field
// names, order and Go types; this holds them to the same JSON names.
func TestPayloadTypesKeepCairnsJSONNames(t *testing.T) {
	for _, pair := range [][2]any{
		{events.Policy{}, engine.Policy{}},
		{events.Accounting{}, engine.Accounting{}},
		{events.AntiThrash{}, engine.State{}},
		{events.Usage{}, engine.Usage{}},
		{events.Range{}, engine.Range{}},
		{events.ManifestEntry{}, engine.ManifestEntry{}},
	} {
		ours, theirs := reflect.TypeOf(pair[0]), reflect.TypeOf(pair[1])
		if a, b := jsonNames(ours), jsonNames(theirs); !slices.Equal(a, b) {
			t.Errorf("%v has JSON names %v, %v has %v", ours, a, theirs, b)
		}
	}
}

// The checkpoint as stored is engine.Checkpoint's persistence map: the
// mirror must name every key of it and no other, and every field of
// engine.Checkpoint must appear, so that a field added on either side
// fails here.
func TestCheckpointHasTheStoredKeys(t *testing.T) {
	ours := jsonNames(reflect.TypeFor[events.Checkpoint]())
	stored := slices.Sorted(func(yield func(string) bool) {
		for k := range (&engine.Checkpoint{}).ToMap() {
			if !yield(k) {
				return
			}
		}
	})
	if sorted := slices.Sorted(slices.Values(ours)); !slices.Equal(sorted, stored) {
		t.Errorf("events.Checkpoint has %v\nthe stored checkpoint has %v", sorted, stored)
	}
	engineType := reflect.TypeFor[engine.Checkpoint]()
	for i := range engineType.NumField() {
		if name := snake(engineType.Field(i).Name); !slices.Contains(ours, name) {
			t.Errorf("engine.Checkpoint.%s (%s) has no field in events.Checkpoint", engineType.Field(i).Name, name)
		}
	}
}

// Every policy field documents its default, and the defaults are Cairn's.
func TestPolicyDefaultTagsAreCairnsDefaults(t *testing.T) {
	want := reflect.ValueOf(events.Policy(engine.DefaultPolicy()))
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
	if events.DefaultPolicy() != events.Policy(engine.DefaultPolicy()) {
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

// snake is a Go field name as a JSON key: CheckpointID -> checkpoint_id,
// RetainedEventIDs -> retained_event_ids.
func snake(name string) string {
	r := []rune(strings.ReplaceAll(name, "IDs", "Ids"))
	var b strings.Builder
	for i, c := range r {
		if i > 0 && unicode.IsUpper(c) && (unicode.IsLower(r[i-1]) || (i+1 < len(r) && unicode.IsLower(r[i+1]))) {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToLower(c))
	}
	return b.String()
}
