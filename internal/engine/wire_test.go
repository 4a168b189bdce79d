package engine

import (
	"bytes"
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/events"
	"github.com/cairnhq/cairn/jsonwire"

	"github.com/cairnhq/cairn/errcode"
)

// The key set and the required fields come from WireRequest's tags; these
// are the lists Request v1 had when they were written by hand (subjects.md),
// the required ones in the struct's order.
func TestRequestFieldsFollowWireRequest(t *testing.T) {
	want := []string{"v", "request_id", "trigger", "thread_id", "run_id", "root_turn_id",
		"run_agent_id", "provider_connection_id", "checkpoint_namespace", "destination_identity_hash",
		"parent_checkpoint_id", "model_profile", "requested_max_output_tokens", "rendered_request_bytes",
		"render", "events", "events_object", "active_input_event_ids", "previous_semantic",
		"rehydration_state", "policy", "focus", "structural_pressure", "accounting",
		"new_tokens_since_compaction", "anti_thrash", "deadline_at", "scope", "harvest"}
	if !reflect.DeepEqual(requestFields, jsonwire.KeySet(want...)) {
		t.Fatalf("requestFields = %v, want %v", requestFields, want)
	}
	required := []string{"v", "request_id", "trigger", "thread_id", "run_agent_id", "checkpoint_namespace",
		"run_id", "root_turn_id", "provider_connection_id", "destination_identity_hash", "model_profile", "rehydration_state"}
	if got := jsonwire.Names(wireRequestFields, true); !slices.Equal(got, required) {
		t.Fatalf("required fields = %v, want %v", got, required)
	}
}

// Every member of Request v1 is read once: by a step's tags or by a decode
// of its own.
func TestEachRequestMemberIsReadOnce(t *testing.T) {
	read := map[string]int{}
	for _, step := range requestSteps {
		for _, f := range step.read {
			read[f.Name]++
		}
	}
	for name := range ownDecoded {
		if !requestFields[name] {
			t.Errorf("ownDecoded names %q, which Request v1 does not have", name)
		}
		read[name]++
	}
	for name := range requestFields {
		if read[name] != 1 {
			t.Errorf("%s is read %d times", name, read[name])
		}
	}
}

// A member no decode step reads is checked against its Go type, so that a
// field added to Correlation or WireRequest is type-checked with no step.
func TestCheckTypesOfOtherFields(t *testing.T) {
	type wire struct {
		events.Correlation
		Labels map[string]string `json:"labels,omitempty"`
	}
	fields := jsonwire.Fields(reflect.TypeFor[wire]())
	if got := fields[len(fields)-1]; got.Name != "labels" || got.Required {
		t.Fatalf("last field = %+v, want labels, optional", got)
	}
	rest := fields[len(fields)-1:]
	for _, tc := range []struct {
		name  string
		value any
		ok    bool
	}{
		{"object of strings", map[string]any{"team": "search"}, true},
		{"empty object", map[string]any{}, true},
		{"null", nil, true},
		{"a string", "team", false},
		{"a number inside", map[string]any{"team": int64(1)}, false},
	} {
		err := jsonwire.Read(reflect.New(reflect.TypeFor[wire]()).Elem(), rest, map[string]any{"thread_id": int64(1), "labels": tc.value},
			func(f jsonwire.Field, rule string) error { return memberError(f, "", rule) })
		if tc.ok && err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
		if !tc.ok {
			e, _ := err.(*errcode.Error)
			if e == nil || e.Code != errcode.InvalidRequest || e.Details["field"] != "labels" || e.Details["rule"] != "type" {
				t.Errorf("%s: err = %v, want invalid_compaction_request {field: labels, rule: type}", tc.name, err)
			}
		}
	}
}

// The checkpoint's JSON is its stored form both ways: encoding/json writes
// the persistence map's canonical bytes, and decoding those bytes gives a
// checkpoint with the same bytes and checkpoint_hash, compacted or pruned.
func TestCheckpointJSONIsTheStoredForm(t *testing.T) {
	pruning := fixtureRequest(t)
	pruning.Policy.MinimumPruneReclaimTokens = 100
	for _, res := range []*Result{mustCompact(t, fixtureRequest(t), validSummarizer()), mustCompact(t, pruning, validSummarizer())} {
		stored, hash, err := res.Checkpoint.EncodeAndHash()
		if err != nil {
			t.Fatal(err)
		}
		encoded, err := json.Marshal(res.Checkpoint)
		if err != nil || !bytes.Equal(encoded, stored) {
			t.Fatalf("%s: json.Marshal = %s, %v\nstored %s", res.Status, encoded, err, stored)
		}
		var decoded events.Checkpoint
		if err := json.Unmarshal(stored, &decoded); err != nil {
			t.Fatalf("%s: %v", res.Status, err)
		}
		again, againHash, err := decoded.EncodeAndHash()
		if err != nil || !bytes.Equal(again, stored) || againHash != hash {
			t.Fatalf("%s: decoded and encoded again = %s (%s), %v\nstored %s (%s)", res.Status, again, againHash, err, stored, hash)
		}
	}
}

// Every field of Checkpoint is tagged with a key of the persistence map, and
// the map has only two keys more, which schemas.go adds to the schema: a
// field added without its tag, or a key without its field, fails here.
func TestCheckpointTagsNameTheStoredKeys(t *testing.T) {
	tagged := map[string]bool{"id": true, "rehydration_state_hash": true}
	typ := reflect.TypeFor[events.Checkpoint]()
	for i := range typ.NumField() {
		if !typ.Field(i).IsExported() {
			continue // not on the wire (encoding/json skips it too)
		}
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		if name == "" || typ.Field(i).Tag.Get("doc") == "" {
			t.Errorf("Checkpoint.%s has no JSON name or no doc tag", typ.Field(i).Name)
		}
		tagged[name] = true
	}
	stored := map[string]bool{}
	for k := range (&events.Checkpoint{}).Map() {
		stored[k] = true
	}
	if !reflect.DeepEqual(tagged, stored) {
		t.Fatalf("tags and derived keys %v\nstored keys %v", slices.Sorted(maps.Keys(tagged)), slices.Sorted(maps.Keys(stored)))
	}
}

// The engine keeps the encoding it made of a checkpoint's semantic, so that
// storing the checkpoint does not encode it again; a checkpoint given
// another semantic afterwards stores that one.
func TestCheckpointStoresTheSemanticItHolds(t *testing.T) {
	cp := mustCompact(t, fixtureRequest(t), validSummarizer()).Checkpoint
	other := cp.Semantic.Clone()
	other.Coverage.LastChatSeq++
	cp.Semantic = other
	stored, _, err := cp.EncodeAndHash()
	if err != nil {
		t.Fatal(err)
	}
	want, err := other.AppendCanonical([]byte(`"semantic":`))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(stored, want) {
		t.Fatalf("stored %s\nwithout %s", stored, want)
	}
}
