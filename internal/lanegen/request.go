package lanegen

import (
	"fmt"
	"maps"
	"math"

	"github.com/cairnhq/cairn/canonical"
)

// promptReserveTokens mirrors the engine's fixed compactor prompt reserve
// (promptReserveTokens in internal/engine); a profile smaller than this plus the output allowance
// cannot compact at all.
const promptReserveTokens = 4096

// RequestOptions controls a generated Request v1 (subjects.md).
type RequestOptions struct {
	// Lane generates the events unless Events is set.
	Lane Options
	// Events, when non-nil, is used as the lane instead of generating one.
	Events []map[string]any
	// RequestID defaults to "req-<seed>-<events>".
	RequestID string
	// Trigger defaults to "manual".
	Trigger string
	// Fill is the fraction of the model's input window the lane occupies
	// before compaction (default 0.9). Values above 1 model an overflow and
	// shrink the window below the lane, which forces several summary chunks.
	Fill float64
	// AllowPrune keeps the default prune threshold. Without it the minimum
	// prune reclaim exceeds the lane's size, so the engine always summarizes.
	AllowPrune bool
	// Policy fields override the generated policy.
	Policy map[string]any
	// ParentCheckpointID and PreviousSemantic describe the lane's active
	// checkpoint for a later compaction; empty/nil for a new lane.
	ParentCheckpointID string
	PreviousSemantic   map[string]any
	// Focus is the optional compaction focus ("" for none).
	Focus string
	// Tokenizer, when set, is the profile's model_profile.tokenizer, so the
	// engine counts the lane in its tokens. The window and the policy's
	// thresholds stay those of the lane in bytes: the engine then makes the
	// plan it makes in bytes (the fixed prompt reserve and output allowance
	// weigh the same against the window), with the lane filling about a
	// third of the window instead of o.Fill.
	Tokenizer string
}

// Request returns a complete wire-form Request v1 around the lane. The model
// profile is sized from the rendered lane (canonical_v1 of the events and the
// previous semantic, in bytes) so that the lane fills
// o.Fill of the input window, and the policy's absolute thresholds are scaled
// down for small lanes, so that a manual compaction of a lane of a few dozen
// events or more is effective.
func Request(o RequestOptions) map[string]any {
	events := o.Events
	if events == nil {
		events = Lane(o.Lane)
	}
	lane := o.Lane.withDefaults()
	if len(events) > 0 {
		lane.RunAgentID, _ = events[0]["run_agent_id"].(string)
		lane.Namespace, _ = events[0]["checkpoint_namespace"].(string)
	}
	if o.RequestID == "" {
		o.RequestID = fmt.Sprintf("req-%d-%d", lane.Seed, len(events))
	}
	if o.Trigger == "" {
		o.Trigger = "manual"
	}
	if o.Fill <= 0 || math.IsNaN(o.Fill) || math.IsInf(o.Fill, 0) {
		o.Fill = 0.9
	}

	rendered := RenderedBytes(events, o.PreviousSemantic)
	limit := windowFor(rendered, o.Fill)
	req := map[string]any{
		"v":                           1,
		"request_id":                  o.RequestID,
		"trigger":                     o.Trigger,
		"thread_id":                   lane.ThreadID,
		"run_id":                      "run-" + lane.ThreadID,
		"root_turn_id":                fmt.Sprintf("turn-%d", len(events)),
		"run_agent_id":                lane.RunAgentID,
		"provider_connection_id":      "conn-openai-compatible",
		"checkpoint_namespace":        lane.Namespace,
		"destination_identity_hash":   canonical.HashBytes([]byte("destination:" + lane.ThreadID)),
		"parent_checkpoint_id":        nilIfEmpty(o.ParentCheckpointID),
		"model_profile":               profile(limit, o.Tokenizer),
		"requested_max_output_tokens": 0,
		"render":                      "canonical_v1",
		"events":                      toAnyList(events),
		"active_input_event_ids":      activeInput(events),
		"previous_semantic":           nilIfNilMap(o.PreviousSemantic),
		"rehydration_state":           map[string]any{"todo": map[string]any{"revision": 1}},
		"policy":                      policy(rendered, limit, o),
		"focus":                       nilIfEmpty(o.Focus),
		"structural_pressure":         false,
		"accounting":                  map[string]any{},
	}
	return req
}

// RequestJSON is Request encoded canonically (compact, sorted keys). In the
// manner of regexp.MustCompile it panics where the encoding fails, which
// only caller-supplied Events, Policy or PreviousSemantic holding values
// outside the JSON domain, a programming error, can cause.
func RequestJSON(o RequestOptions) []byte {
	data, err := canonical.Encode(Request(o))
	if err != nil {
		panic(fmt.Sprintf("lanegen: request is not JSON: %v", err))
	}
	return data
}

// RenderedBytes is the byte length of the canonical_v1 rendering of
// previousSemantic plus events: the canonical encoding of
// {"events": [to_map...], "semantic": previousSemantic-or-null}, where to_map
// drops token_count and protected. It is the engine's "before" estimate for
// a request without rendered_request_bytes.
func RenderedBytes(events []map[string]any, previousSemantic map[string]any) int64 {
	n, err := canonical.EncodedSize(renderedView(events, previousSemantic))
	if err != nil {
		return 0
	}
	return int64(n)
}

// renderedView is what canonical_v1 renders: the events without
// token_count and protected, and the previous semantic.
func renderedView(events []map[string]any, previousSemantic map[string]any) map[string]any {
	views := make([]any, len(events))
	for i, e := range events {
		v := maps.Clone(e)
		delete(v, "token_count")
		delete(v, "protected")
		views[i] = v
	}
	return map[string]any{"events": views, "semantic": nilIfNilMap(previousSemantic)}
}

// windowFor is the max_input_tokens Request gives a lane of units (its bytes)
// at fill, a fraction of the window: never below what a compaction needs.
func windowFor(units int64, fill float64) int64 {
	return max(int64(math.Ceil(float64(units)/fill)), 2*promptReserveTokens+1024)
}

func profile(limit int64, tokenizer string) map[string]any {
	p := map[string]any{
		"context_limit_kind":       "separate_input",
		"max_input_tokens":         limit,
		"max_output_tokens":        8192,
		"provider_reserved_tokens": 0,
	}
	if tokenizer != "" {
		p["tokenizer"] = tokenizer
	}
	return p
}

// policy keeps Cairn's defaults for large lanes and scales the absolute
// minimums (tail, reclaim, output allowance) down for small ones, where the
// defaults (8 000-token tail, 8 192-token reclaim) exceed the whole lane.
func policy(rendered, limit int64, o RequestOptions) map[string]any {
	reclaim := min(8192, max(1, rendered/5))
	prune := rendered + 1
	if o.AllowPrune {
		prune = reclaim
	}
	p := map[string]any{
		"recent_tail_min_tokens":       min(8000, max(64, limit/10)),
		"summary_output_min_tokens":    min(4096, max(256, limit/8)),
		"minimum_total_reclaim_tokens": reclaim,
		"minimum_prune_reclaim_tokens": max(prune, 1),
	}
	maps.Copy(p, o.Policy)
	return p
}

// activeInput lists the newest user event: the input the agent is answering.
func activeInput(events []map[string]any) []any {
	for i := len(events) - 1; i >= 0; i-- {
		if events[i]["role"] == "user" {
			return []any{events[i]["event_id"]}
		}
	}
	return []any{}
}

func toAnyList(events []map[string]any) []any {
	out := make([]any, len(events))
	for i, e := range events {
		out[i] = e
	}
	return out
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func nilIfNilMap(m map[string]any) any {
	if m == nil {
		return nil
	}
	return m
}
