package events

import "github.com/cairnhq/cairn/internal/jsonschema"

// SchemaBaseURL prefixes the $id of every published schema.
const SchemaBaseURL = "https://github.com/cairnhq/cairn/schemas/"

// Schemas returns the JSON Schema of every message, keyed by file name under
// schemas/. They are generated from the types of this package, so a change
// of a type changes its schema (a test fails until schemas/ is regenerated).
func Schemas() map[string]map[string]any {
	v1 := map[string]any{"const": Version}
	kind := func(k string) map[string]any { return map[string]any{"v": v1, "kind": map[string]any{"const": k}} }
	schema := func(file, title string, v any, overrides map[string]any) (string, map[string]any) {
		return file, jsonschema.For(v, SchemaBaseURL+file, title, overrides)
	}
	out := map[string]map[string]any{}
	add := func(file string, s map[string]any) { out[file] = s }
	add(schema("request.json", SubjectRequested, Request{}, map[string]any{"v": v1}))
	add(schema("activated.json", SubjectActivated, Activated{}, kind(KindActivated)))
	add(schema("skipped.json", SubjectSkipped, Skipped{}, kind(KindSkipped)))
	add(schema("failed.json", SubjectFailed, Failed{}, kind(KindFailed)))
	add(schema("memory-flushed.json", SubjectFlushed, MemoryFlushed{}, kind(KindMemoryFlush)))
	add(schema("memory-failed.json", SubjectMemoryFailed, MemoryFailed{}, kind(KindMemoryFailed)))
	return out
}
