package engine

import (
	"slices"

	"github.com/cairnhq/cairn/events"
	"github.com/cairnhq/cairn/jsonwire"

	"github.com/cairnhq/cairn/canonical"
	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/semantic"
)

// Renderer names.
const (
	RenderCanonicalV1  = "canonical_v1"
	RenderOpenAIChatV1 = "openai_chat_v1"
)

// Renderer produces the exact provider-request bytes an application would
// send for a checkpoint semantic (nil for none) plus the retained events
// (docs/request.md, "The budget"). The engine measures every later budget
// through it.
// Implementations must be deterministic and must not modify their inputs.
type Renderer interface {
	Render(sem *semantic.Semantic, laneEvents []events.InputEvent) (Rendered, error)
}

// Rendered is a renderer's output: the request bytes and, optionally, how
// many of them belong to each category (for budget allocation).
type Rendered struct {
	Bytes      []byte
	Categories map[string]int64

	// views are the spans of event views in Bytes when the engine rendered
	// canonical_v1 itself; the token count reuses their counts.
	views []viewSpan
}

// renderers maps names to built-in renderers; adding one is one entry.
var renderers = map[string]Renderer{
	RenderCanonicalV1:  canonicalRenderer{},
	RenderOpenAIChatV1: openAIChatRenderer{},
}

// RendererFor returns the renderer with the given name ("" means
// canonical_v1); an unknown name is invalid_compaction_request.
func RendererFor(name string) (Renderer, error) {
	if name == "" {
		name = RenderCanonicalV1
	}
	r, ok := renderers[name]
	if !ok {
		names := make([]string, 0, len(renderers))
		for n := range renderers {
			names = append(names, n)
		}
		slices.Sort(names)
		return nil, invalidField("render", "enum", "unknown renderer").
			With("render", name).With("value", jsonwire.Echo(name)).With("expected", jsonwire.StringsToAny(names))
	}
	return r, nil
}

// renderFailure is the compaction_render_error of a rendering whose
// input is outside canonical JSON.
func renderFailure(err error) *errcode.Error {
	e := errcode.Field(errcode.RenderError, "context rendering failed", "render", "canonical")
	e.Err = err
	return e
}

// semanticValue is the plain map of s, or nil.
func semanticValue(s *semantic.Semantic) any {
	if s == nil {
		return nil
	}
	return s.Map()
}

// canonicalRenderer renders canonical JSON of
// {"events": [13-key views...], "semantic": map-or-null}: the contract's
// reference renderer.
type canonicalRenderer struct{}

var _ Renderer = canonicalRenderer{}

func (canonicalRenderer) Render(sem *semantic.Semantic, laneEvents []events.InputEvent) (Rendered, error) {
	enc, err := sem.AppendCanonical(nil)
	if err != nil {
		return Rendered{}, renderFailure(err)
	}
	b, err := appendCanonicalRendering(make([]byte, 0, renderedSizeHint(laneEvents)), enc, len(laneEvents),
		func(dst []byte, i int) ([]byte, error) { return appendView(dst, &laneEvents[i]) })
	if err != nil {
		return Rendered{}, err
	}
	return Rendered{Bytes: b}, nil
}

// appendCanonicalRendering appends canonicalRenderer's rendering of a
// semantic and n events to dst: sem is the semantic's canonical encoding
// ("null" for none), appendEvent appends the view of event i.
func appendCanonicalRendering(dst []byte, sem []byte, n int,
	appendEvent func(dst []byte, i int) ([]byte, error)) ([]byte, error) {
	b := append(dst, `{"events":[`...)
	var err error
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = appendEvent(b, i); err != nil {
			return b, renderFailure(err)
		}
	}
	b = append(append(b, `],"semantic":`...), sem...)
	return append(b, '}'), nil
}

// renderedSizeHint guesses the canonical rendering's size from the events'
// contents, which are most of it, so that the buffer is allocated once
// instead of doubled through every size on the way (for a 40 KB rendering,
// 80 KB of copies). The semantic and unusually large tool or provenance
// values may still make it grow once.
func renderedSizeHint(laneEvents []events.InputEvent) int {
	const perEvent = 512 // the view's keys, ids, hashes and provenance
	n := 4096            // the semantic
	for i := range laneEvents {
		n += perEvent + len(laneEvents[i].EventID)
		if c := laneEvents[i].Content; c != nil {
			n += len(*c) + len(*c)/16 // a little escaping
		}
	}
	return n
}

// openAIChatRenderer renders an OpenAI chat "messages" array: the checkpoint
// as one system message, then each event as a chat message (tool results
// with their tool_call_id, assistant tool calls as tool_calls). Categories:
// "checkpoint" is the system message, "history" everything else.
type openAIChatRenderer struct{}

var _ Renderer = openAIChatRenderer{}

// checkpointPreamble introduces the semantic in the system message.
const checkpointPreamble = "Conversation checkpoint (Cairn semantic v1). Earlier turns were summarized; treat this as authoritative context:\n"

func (openAIChatRenderer) Render(sem *semantic.Semantic, laneEvents []events.InputEvent) (Rendered, error) {
	messages := make([]any, 0, len(laneEvents)+1)
	var checkpointBytes int64
	if sem != nil {
		body, err := sem.AppendCanonical(nil)
		if err != nil {
			return Rendered{}, renderFailure(err)
		}
		system := map[string]any{"role": "system", "content": checkpointPreamble + string(body)}
		n, err := canonical.EncodedSize(system)
		if err != nil {
			return Rendered{}, renderFailure(err)
		}
		checkpointBytes = int64(n)
		messages = append(messages, system)
	}
	for i := range laneEvents {
		messages = append(messages, chatMessage(&laneEvents[i]))
	}
	b, err := canonical.Encode(messages)
	if err != nil {
		return Rendered{}, renderFailure(err)
	}
	categories := map[string]int64{"checkpoint": checkpointBytes, "history": int64(len(b)) - checkpointBytes}
	return Rendered{Bytes: b, Categories: categories}, nil
}

func chatMessage(e *events.InputEvent) map[string]any {
	switch e.Role {
	case events.RoleTool:
		return map[string]any{"role": "tool", "tool_call_id": toolString(e.Tool, "call_id"), "content": toolContent(e)}
	case events.RoleAssistant:
		m := map[string]any{"role": "assistant", "content": stringOrNil(e.Content)}
		if calls := toolCalls(e.Tool); len(calls) > 0 {
			m["tool_calls"] = calls
		}
		return m
	default:
		return map[string]any{"role": "user", "content": contentOrEmpty(e.Content)}
	}
}

func contentOrEmpty(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func toolString(tool map[string]any, key string) string {
	s, _ := tool[key].(string)
	return s
}

// toolContent is a tool result's text: its content, or for a projected
// result the excerpt and the artifacts that hold the original.
func toolContent(e *events.InputEvent) string {
	if e.Content != nil {
		return *e.Content
	}
	excerpt := toolString(e.Tool, "result_excerpt")
	if len(e.ArtifactIDs) == 0 {
		return excerpt
	}
	refs, _ := canonical.Encode(e.ArtifactIDs)
	return excerpt + "\n[full output in artifacts " + string(refs) + "]"
}

// toolCalls converts tool.calls (objects with call_id, name, arguments) to
// OpenAI tool_calls.
func toolCalls(tool map[string]any) []any {
	raw, ok := tool["calls"]
	if !ok {
		return nil
	}
	list, isList := raw.([]any)
	if !isList {
		list = []any{raw}
	}
	var calls []any
	for _, c := range list {
		call, isMap := c.(map[string]any)
		if !isMap {
			continue
		}
		args, isString := call["arguments"].(string)
		if !isString {
			encoded, err := canonical.Encode(call["arguments"])
			if err != nil || call["arguments"] == nil {
				encoded = []byte("{}")
			}
			args = string(encoded)
		}
		calls = append(calls, map[string]any{
			"id":       toolString(call, "call_id"),
			"type":     "function",
			"function": map[string]any{"name": toolString(call, "name"), "arguments": args},
		})
	}
	return calls
}
