package engine

import (
	"reflect"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/events"
)

// Every field a view's key stands for tells two views apart, and equal
// fields make equal keys whatever memory their strings sit in.
func TestViewKeyTellsEveryFieldApart(t *testing.T) {
	o200k, _ := counterFor("o200k_base")
	cl100k, _ := counterFor("cl100k_base")
	base := event(t, 1, events.RoleUser, "hello")
	base.ProvenanceSHA256 = strings.Repeat("ab", 32)
	base.RunAgentID, base.CheckpointNamespace = "agent", "ns"
	base.LaneEventOrdinal = 7
	want := keyOf(o200k, &base)
	same := base
	same.EventID = strings.Clone(base.EventID)
	if keyOf(o200k, &same) != want {
		t.Fatal("equal events have different keys")
	}
	if keyOf(cl100k, &base) == want {
		t.Error("two counters share a key")
	}
	edits := map[string]func(*events.InputEvent){
		"event_id":             func(e *events.InputEvent) { e.EventID += "x" },
		"content_hash":         func(e *events.InputEvent) { e.ContentHash = strings.Repeat("0", 64) },
		"provenance_sha256":    func(e *events.InputEvent) { e.ProvenanceSHA256 = "" },
		"role":                 func(e *events.InputEvent) { e.Role = events.RoleAssistant },
		"run_agent_id":         func(e *events.InputEvent) { e.RunAgentID = "other" },
		"checkpoint_namespace": func(e *events.InputEvent) { e.CheckpointNamespace = "" },
		"chat_seq":             func(e *events.InputEvent) { e.ChatSeq++ },
		"lane_event_ordinal":   func(e *events.InputEvent) { e.LaneEventOrdinal++ },
		// Length prefixes keep a byte moving from one field to the next
		// from making the same key.
		"a byte moved between fields": func(e *events.InputEvent) { e.RunAgentID, e.CheckpointNamespace = "agen", "tns" },
	}
	for name, edit := range edits {
		e := base
		edit(&e)
		if keyOf(o200k, &e) == want {
			t.Errorf("changing %s keeps the key", name)
		}
	}
}

// A key holds no pointer, so that a full cache is no work for the garbage
// collector and keeps no request's strings alive.
func TestViewKeyHoldsNoPointer(t *testing.T) {
	if at := pointerIn(reflect.TypeFor[viewKey](), "viewKey"); at != "" {
		t.Fatalf("%s is a pointer", at)
	}
}

// pointerIn returns the path of a pointer (or of a string, slice, map,
// interface, channel or func) within a value of type t, "" when none.
func pointerIn(t reflect.Type, path string) string {
	switch t.Kind() {
	case reflect.Array:
		if t.Len() == 0 {
			return ""
		}
		return pointerIn(t.Elem(), path+"[0]")
	case reflect.Struct:
		for i := range t.NumField() {
			if at := pointerIn(t.Field(i).Type, path+"."+t.Field(i).Name); at != "" {
				return at
			}
		}
		return ""
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return ""
	}
	return path
}
