package semantic

// SchemaDraft is the meta-schema JSONSchema declares.
const SchemaDraft = "https://json-schema.org/draft/2020-12/schema"

// JSONSchema returns the draft 2020-12 schema of a Semantic derived from
// b: every object closed with all its keys required in canonical order, list
// sizes from b, text 1..b.TextBytes characters, citations 1..IDMaxBytes
// characters, nullable values as oneOf with {type: null}.
// The schema counts characters where the validator counts bytes and cannot
// express excerpt/omission exclusivity; Parse and Validate stay
// authoritative. Each call returns a fresh map the caller may modify.
func JSONSchema(b Bounds) map[string]any {
	g := schemaGen{bounds: b}
	root := g.root()
	root["$schema"] = SchemaDraft
	return root
}

// StrictSchema returns a variant of JSONSchema that OpenAI's strict
// structured outputs accept (response_format json_schema with strict true):
// no oneOf, uniqueItems, minLength or maxLength, and no $schema; nullable
// values use a type list (["string","null"]) or anyOf with {type: null}. It
// keeps what strict mode supports (enum, pattern, minItems, maxItems,
// minimum), so the model gets as much of the shape as it can enforce.
func StrictSchema(b Bounds) map[string]any {
	g := schemaGen{bounds: b, strict: true}
	return g.root()
}

// schemaGen builds both schema variants from one description.
type schemaGen struct {
	bounds Bounds
	strict bool
}

func (g schemaGen) root() map[string]any {
	b := g.bounds
	var version map[string]any
	if g.strict {
		version = map[string]any{"type": "integer", "enum": []any{Version}}
	} else {
		version = map[string]any{"const": Version}
	}
	return g.object([]prop{
		{"version", version},
		{"objective", g.array(g.sourced(), b.Objective)},
		{"user_requests", g.array(g.userRequest(), b.UserRequests)},
		{"constraints", g.array(g.sourced(), b.Constraints)},
		{"decisions", g.array(g.decision(), b.Decisions)},
		{"progress", g.object([]prop{
			{"completed", g.array(g.progressItem(), b.ProgressCompleted)},
			{"active", g.array(g.progressItem(), b.ProgressActive)},
			{"blocked", g.array(g.progressItem(), b.ProgressBlocked)},
			{"pending", g.array(g.progressItem(), b.ProgressPending)},
		})},
		{"critical_context", g.array(g.sourced(), b.CriticalContext)},
		{"errors", g.array(g.errorEntry(), b.Errors)},
		{"artifact_refs", g.array(g.artifactRef(), b.ArtifactRefs)},
		{"coverage", g.object([]prop{
			{"first_chat_seq", map[string]any{"type": "integer", "minimum": 1}},
			{"last_chat_seq", map[string]any{"type": "integer", "minimum": 1}},
		})},
	})
}

// prop is one property of a closed object, kept in canonical order.
type prop struct {
	name   string
	schema map[string]any
}

func (g schemaGen) object(props []prop) map[string]any {
	properties := make(map[string]any, len(props))
	required := make([]any, len(props))
	for i, p := range props {
		properties[p.name] = p.schema
		required[i] = p.name
	}
	return map[string]any{
		"type":                 "object",
		"additionalProperties": false,
		"required":             required,
		"properties":           properties,
	}
}

func (g schemaGen) array(items map[string]any, maxItems int) map[string]any {
	return map[string]any{"type": "array", "maxItems": maxItems, "items": items}
}

func (g schemaGen) stringOf(minLength, maxLength int) map[string]any {
	if g.strict {
		return map[string]any{"type": "string"}
	}
	return map[string]any{"type": "string", "minLength": minLength, "maxLength": maxLength}
}

func (g schemaGen) text() map[string]any { return g.stringOf(1, g.bounds.TextBytes) }

func (g schemaGen) id() map[string]any { return g.stringOf(1, IDMaxBytes) }

func (g schemaGen) nullableText() map[string]any {
	if g.strict {
		return map[string]any{"type": []any{"string", "null"}}
	}
	return map[string]any{"oneOf": []any{g.text(), map[string]any{"type": "null"}}}
}

func (g schemaGen) ids(minItems int) map[string]any {
	s := map[string]any{"type": "array", "minItems": minItems, "maxItems": g.bounds.SourceEventIDs, "items": g.id()}
	if !g.strict {
		s["uniqueItems"] = true
	}
	return s
}

func (g schemaGen) enum(values []string) map[string]any {
	list := make([]any, len(values))
	for i, v := range values {
		list[i] = v
	}
	return map[string]any{"type": "string", "enum": list}
}

func (g schemaGen) sourced() map[string]any {
	return g.object([]prop{{"text", g.text()}, {"source_event_ids", g.ids(1)}})
}

func (g schemaGen) userRequest() map[string]any {
	omission := g.object([]prop{
		{"class", g.stringOf(1, ClassMaxBytes)},
		{"source_span_hash", map[string]any{"type": "string", "pattern": "^[0-9a-f]{64}$"}},
	})
	nullableOmission := map[string]any{"oneOf": []any{omission, map[string]any{"type": "null"}}}
	if g.strict {
		nullableOmission = map[string]any{"anyOf": []any{omission, map[string]any{"type": "null"}}}
	}
	return g.object([]prop{
		{"source_event_id", g.id()},
		{"exact_excerpt", g.nullableText()},
		{"secret_omission", nullableOmission},
		{"status", g.enum(requestStatuses)},
	})
}

func (g schemaGen) decision() map[string]any {
	return g.object([]prop{{"text", g.text()}, {"rationale", g.nullableText()}, {"source_event_ids", g.ids(1)}})
}

func (g schemaGen) progressItem() map[string]any {
	return g.object([]prop{{"text", g.text()}, {"source_event_ids", g.ids(1)}, {"verification_event_ids", g.ids(0)}})
}

func (g schemaGen) errorEntry() map[string]any {
	return g.object([]prop{{"message", g.text()}, {"status", g.enum(errorStatuses)}, {"source_event_ids", g.ids(1)}})
}

func (g schemaGen) artifactRef() map[string]any {
	return g.object([]prop{{"artifact_id", g.id()}, {"purpose", g.text()}, {"source_event_ids", g.ids(1)}})
}
