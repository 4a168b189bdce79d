package events

import (
	"maps"
	"reflect"
	"slices"

	"github.com/cairnhq/cairn/jsonschema"
	"github.com/cairnhq/cairn/semantic"
)

// SchemaBaseURL prefixes the $id of every published schema.
const SchemaBaseURL = "https://github.com/cairnhq/cairn/schemas/"

// Schemas returns the JSON Schema of every message, keyed by file name under
// schemas/. They are generated from the types of this package, so a change
// of a type changes its schema (a test fails until schemas/ is regenerated).
func Schemas() map[string]map[string]any {
	g := generator()
	v1 := map[string]any{"const": Version}
	kind := func(k string) map[string]any { return map[string]any{"v": v1, "kind": map[string]any{"const": k}} }
	schema := func(file, title string, v any, overrides map[string]any) (string, map[string]any) {
		return file, g.For(v, SchemaBaseURL+file, title, overrides)
	}
	out := map[string]map[string]any{}
	add := func(file string, s map[string]any) { out[file] = s }

	file, request := schema("request.json", SubjectRequested, Request{}, map[string]any{
		"v":                 v1,
		"policy":            nullable(g.Schema(reflect.TypeFor[Policy]())),
		"previous_semantic": nullable(g.Schema(reflect.TypeFor[Semantic]())),
		"accounting":        nullable(g.Schema(reflect.TypeFor[Accounting]())),
		"anti_thrash":       nullable(g.Schema(reflect.TypeFor[AntiThrash]())),
		"rehydration_state": map[string]any{"type": "object"},
	})
	describeRequest(request["properties"].(map[string]any))
	// The lane comes inline or from the Object Store, never both.
	request["oneOf"] = []any{
		map[string]any{"required": []any{"events"}, "not": map[string]any{"required": []any{"events_object"}}},
		map[string]any{"required": []any{"events_object"}, "not": map[string]any{"required": []any{"events"}}},
	}
	add(file, request)

	activated := kind(KindActivated)
	activated["checkpoint"] = checkpointSchema(g)
	activated["provider_usage"] = map[string]any{"type": "array", "items": map[string]any{"anyOf": []any{
		g.Schema(reflect.TypeFor[Usage]()),
		map[string]any{"type": "array", "items": g.Schema(reflect.TypeFor[Usage]())},
		g.Schema(reflect.TypeFor[UncertainAttempt]()),
	}}}
	add(schema("activated.json", SubjectActivated, Activated{}, activated))
	add(schema("skipped.json", SubjectSkipped, Skipped{}, kind(KindSkipped)))
	add(schema("failed.json", SubjectFailed, Failed{}, kind(KindFailed)))
	add(schema("memory-flushed.json", SubjectFlushed, MemoryFlushed{}, kind(KindMemoryFlush)))
	add(schema("memory-failed.json", SubjectMemoryFailed, MemoryFailed{}, kind(KindMemoryFailed)))

	file, query := schema("status-query.json", SubjectStatus+" ask", StatusQuery{}, nil)
	// The request is named once: by id (with its body's hash or not), or
	// by sequence.
	query["oneOf"] = []any{
		map[string]any{"required": []any{"request_id"}, "not": map[string]any{"required": []any{"stream_sequence"}}},
		map[string]any{"required": []any{"stream_sequence"}, "not": map[string]any{"anyOf": []any{
			map[string]any{"required": []any{"request_id"}}, map[string]any{"required": []any{"content_hash"}},
		}}},
	}
	add(file, query)
	add(schema("status-reply.json", SubjectStatus+" reply", StatusReply{}, nil))
	for file, s := range out {
		if p, ok := s["properties"].(map[string]any)["occurred_at"].(map[string]any); ok && file != "request.json" {
			maps.Copy(p, eventTime())
		}
		jsonschema.Share(s, sharedShapes)
	}
	return out
}

// sharedShapes names the object shapes a schema holds in several places
// (jsonschema.Share), by their property names: each is described once,
// under $defs.
var sharedShapes = map[string]string{
	"attempts,cached_tokens,input_tokens,model,output_tokens": "usage",
	"source_event_ids,text":                                   "sourced_item",
	"source_event_ids,text,verification_event_ids":            "progress_item",
}

// eventTimePattern is the form of every timestamp Cairn writes in an
// event (occurred_at, a checkpoint's created_at): RFC 3339 in UTC with
// whole seconds, 2026-09-02T12:00:00Z.
const eventTimePattern = "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$"

// eventTime is the schema of occurred_at: a date-time of eventTimePattern.
func eventTime() map[string]any {
	return map[string]any{"description": "when Cairn published the event: RFC 3339 in UTC with whole seconds, 2026-09-02T12:00:00Z",
		"pattern": eventTimePattern}
}

// generator knows the schemas that reflection cannot see: the semantic's
// bounds (package semantic's own schema) and a policy whose fields may all
// be omitted.
func generator() jsonschema.Generator {
	plain := jsonschema.Generator{}
	g := jsonschema.Generator{Types: map[reflect.Type]func() map[string]any{}}
	g.Types[reflect.TypeFor[Semantic]()] = func() map[string]any {
		s := semantic.JSONSchema(semantic.DefaultBounds)
		delete(s, "$schema")
		jsonschema.Describe(s, reflect.TypeFor[Semantic]())
		return s
	}
	g.Types[reflect.TypeFor[Policy]()] = func() map[string]any {
		s := plain.Schema(reflect.TypeFor[Policy]())
		s["required"] = []any{} // omitted fields take their defaults
		return s
	}
	return g
}

// checkpointSchema is the checkpoint's schema: reflected, with the shapes of
// its verbatim fields and the two keys its encoding derives from other
// fields (Checkpoint's doc), each required where the encoding puts it.
func checkpointSchema(g jsonschema.Generator) map[string]any {
	s := g.Schema(reflect.TypeFor[Checkpoint]())
	props := s["properties"].(map[string]any)
	props["id"] = map[string]any{"type": "string", "description": "the checkpoint id (the request_id), as checkpoint_id"}
	props["rehydration_state"] = map[string]any{"type": "object", "description": props["rehydration_state"].(map[string]any)["description"]}
	props["rehydration_state_hash"] = map[string]any{"type": "string", "description": "canonical hash of rehydration_state", "pattern": "^[0-9a-f]{64}$"}
	required := s["required"].([]any)
	at := slices.Index(required, any("rehydration_state")) + 1
	s["required"] = append([]any{"id"}, slices.Insert(required, at, any("rehydration_state_hash"))...)
	maps.Copy(props["provider_usage"].(map[string]any), map[string]any{"type": []any{"array", "null"}, "items": map[string]any{"anyOf": []any{
		g.Schema(reflect.TypeFor[Usage]()),
		map[string]any{"type": "array", "items": g.Schema(reflect.TypeFor[Usage]())},
	}}})
	return s
}

// describeRequest adds to the request's schema what the tags of shared
// types cannot say: the name rule of the identities events echo (an
// event's schema must not refuse a failed event that echoes a bad one),
// the bounds of values inside lists and maps, and the shape of tool calls.
func describeRequest(props map[string]any) {
	for _, k := range []string{"thread_id", "run_agent_id", "checkpoint_namespace"} {
		maps.Copy(props[k].(map[string]any), nameSchema())
	}
	event := props["events"].(map[string]any)["items"].(map[string]any)["properties"].(map[string]any)
	maps.Copy(event["artifact_ids"].(map[string]any)["items"].(map[string]any), map[string]any{"minLength": 1, "maxLength": 200})
	// Any JSON value is accepted in calls and in each call's arguments, so
	// the shape is described, not typed (a typed items or properties would
	// also need a type, which would refuse what Cairn accepts).
	event["tool"].(map[string]any)["properties"] = map[string]any{"calls": map[string]any{
		"description": "the calls of an assistant event: an array of {call_id, name, arguments}. arguments may be any JSON value: a string is sent to the model as it is (the JSON text of the arguments, as OpenAI writes them), any other value as its canonical JSON, null or absence as {}",
	}}
	profile := props["model_profile"].(map[string]any)
	delete(profile, "additionalProperties") // members compaction does not read are ignored
	accounting := props["accounting"].(map[string]any)["anyOf"].([]any)[0].(map[string]any)["properties"].(map[string]any)
	accounting["category_bytes"].(map[string]any)["additionalProperties"].(map[string]any)["minimum"] = 0
}

// nameSchema is NameRule: 1..200 bytes of UTF-8 without control
// characters. JSON Schema counts characters, so a name of more than 200
// bytes but at most 200 characters passes the schema and not Cairn.
func nameSchema() map[string]any {
	return map[string]any{"minLength": 1, "maxLength": MaxNameBytes, "pattern": `^[^\x00-\x1f\x7f-\x9f]*$`}
}

func nullable(s map[string]any) map[string]any {
	return map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}
}
