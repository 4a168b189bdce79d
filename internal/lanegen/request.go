package lanegen

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"

	"github.com/cairnhq/cairn/canonical"
	"github.com/cairnhq/cairn/events"
	"github.com/cairnhq/cairn/semantic"
)

// promptReserveTokens mirrors the engine's fixed compactor prompt reserve
// (promptReserveTokens in internal/engine); a profile smaller than this plus the output allowance
// cannot compact at all.
const promptReserveTokens = 4096

// renderCanonicalV1 is the render Request names: events rendered as
// canonical JSON, the rendering RenderedBytes measures.
const renderCanonicalV1 = "canonical_v1"

// rehydrationState is the continuation data every generated request carries.
var rehydrationState = json.RawMessage(`{"todo":{"revision":1}}`)

// RequestOptions controls a generated Request v1 (subjects.md).
type RequestOptions struct {
	// Lane generates the events unless Events is set.
	Lane Options
	// Events, when non-nil, is used as the lane instead of generating one.
	Events []events.InputEvent
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
	// Policy members override those of the generated policy or are added
	// to it; the policy is JSON passed through to the engine, so they may be
	// of any JSON type.
	Policy map[string]any
	// ParentCheckpointID and PreviousSemantic describe the lane's active
	// checkpoint for a later compaction; empty/nil for a new lane.
	ParentCheckpointID string
	PreviousSemantic   *semantic.Semantic
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

// Request returns a complete Request v1 around the lane. The model profile
// is sized from the rendered lane (canonical_v1 of the events and the
// previous semantic, in bytes) so that the lane fills o.Fill of the input
// window, and the policy's absolute thresholds are scaled down for small
// lanes, so that a manual compaction of a lane of a few dozen events or
// more is effective. Optional members Request does not set are left out.
//
// In the manner of regexp.MustCompile it panics where o.Policy or
// o.PreviousSemantic cannot be encoded (a value outside the JSON domain),
// a programming error of the caller.
func Request(o RequestOptions) events.Request {
	lane := o.Events
	if lane == nil {
		lane = Lane(o.Lane)
	}
	ids := o.Lane.withDefaults()
	if len(lane) > 0 {
		ids.RunAgentID, ids.Namespace = lane[0].RunAgentID, lane[0].CheckpointNamespace
	}
	if o.RequestID == "" {
		o.RequestID = fmt.Sprintf("req-%d-%d", ids.Seed, len(lane))
	}
	if o.Trigger == "" {
		o.Trigger = events.TriggerManual
	}
	if o.Fill <= 0 || math.IsNaN(o.Fill) || math.IsInf(o.Fill, 0) {
		o.Fill = 0.9
	}

	rendered := RenderedBytes(lane, o.PreviousSemantic)
	limit := windowFor(rendered, o.Fill)
	return events.Request{
		V:         events.Version,
		RequestID: o.RequestID,
		Trigger:   o.Trigger,
		Correlation: events.Correlation{
			ThreadID: ids.ThreadID, RunAgentID: ids.RunAgentID, CheckpointNamespace: ids.Namespace,
		},
		RunID:                   "run-" + ids.ThreadID,
		RootTurnID:              fmt.Sprintf("turn-%d", len(lane)),
		ProviderConnectionID:    "conn-openai-compatible",
		DestinationIdentityHash: canonical.HashBytes([]byte("destination:" + ids.ThreadID)),
		ParentCheckpointID:      optional(o.ParentCheckpointID),
		ModelProfile:            profile(limit, o.Tokenizer),
		Render:                  renderCanonicalV1,
		Events:                  lane,
		ActiveInputEventIDs:     activeInput(lane),
		PreviousSemantic:        previousSemanticJSON(o.PreviousSemantic),
		RehydrationState:        rehydrationState,
		Policy:                  policy(rendered, limit, o),
		Focus:                   optional(o.Focus),
	}
}

// RequestJSON is Request encoded canonically (Encode).
func RequestJSON(o RequestOptions) []byte { return Encode(Request(o)) }

// Encode is r encoded canonically (compact, sorted keys): the members
// encoding/json writes from r's tags, so that a generated body is the same
// bytes on every run. It panics where r holds a value outside the JSON
// domain, which only a caller's edit of r can put there.
func Encode(r events.Request) []byte {
	v, err := plainJSON(r)
	var data []byte
	if err == nil {
		data, err = canonical.Encode(v)
	}
	if err != nil {
		panic(fmt.Sprintf("lanegen: request is not JSON: %v", err))
	}
	return data
}

// plainJSON is v as encoding/json writes it from its tags, decoded into
// the plain values the canonical encoder takes.
func plainJSON(v any) (any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return canonical.Decode(data)
}

// RenderedBytes is the byte length of the canonical_v1 rendering of
// previousSemantic plus lane: the canonical encoding of
// {"events": [view...], "semantic": previousSemantic-or-null}, where an
// event's view is every member but token_count and protected, none left
// out. It is the engine's "before" estimate for a request without
// rendered_request_bytes.
func RenderedBytes(lane []events.InputEvent, previousSemantic *semantic.Semantic) int64 {
	r := rendering{Events: make([]eventView, len(lane)), Semantic: canonical.Raw("null")}
	for i, e := range lane {
		r.Events[i] = viewOf(e)
	}
	if s := previousSemanticJSON(previousSemantic); s != nil {
		r.Semantic = canonical.Raw(s)
	}
	v, err := plainJSON(r)
	if err != nil {
		return 0
	}
	n, err := canonical.EncodedSize(v)
	if err != nil {
		return 0
	}
	return int64(n)
}

// rendering is what canonical_v1 renders.
type rendering struct {
	Events   []eventView   `json:"events"`
	Semantic canonical.Raw `json:"semantic"`
}

// eventView is an event as canonical_v1 renders it: its members but
// token_count and protected, each written even at its zero value.
type eventView struct {
	EventID             string         `json:"event_id"`
	RunAgentID          string         `json:"run_agent_id"`
	ChatSeq             int64          `json:"chat_seq"`
	LaneEventOrdinal    int64          `json:"lane_event_ordinal"`
	CheckpointNamespace string         `json:"checkpoint_namespace"`
	Role                string         `json:"role"`
	Provenance          any            `json:"provenance"`
	ProvenanceSHA256    string         `json:"provenance_sha256"`
	ContentHash         string         `json:"content_hash"`
	Content             *string        `json:"content"`
	Tool                map[string]any `json:"tool"`
	ArtifactIDs         []string       `json:"artifact_ids"` // never nil: [] when none
	Truncated           bool           `json:"truncated"`
}

func viewOf(e events.InputEvent) eventView {
	v := eventView{
		EventID: e.EventID, RunAgentID: e.RunAgentID, ChatSeq: e.ChatSeq, LaneEventOrdinal: e.LaneEventOrdinal,
		CheckpointNamespace: e.CheckpointNamespace, Role: e.Role, Provenance: e.Provenance,
		ProvenanceSHA256: e.ProvenanceSHA256, ContentHash: e.ContentHash, Content: e.Content, Tool: e.Tool,
		ArtifactIDs: e.ArtifactIDs, Truncated: e.Truncated,
	}
	if v.ArtifactIDs == nil {
		v.ArtifactIDs = []string{}
	}
	return v
}

// previousSemanticJSON is s as a request carries it: its canonical
// encoding, nil (left out) for none.
func previousSemanticJSON(s *semantic.Semantic) json.RawMessage {
	if s == nil {
		return nil
	}
	data, err := canonical.Encode(s)
	if err != nil {
		panic(fmt.Sprintf("lanegen: previous semantic is not JSON: %v", err))
	}
	return data
}

// windowFor is the max_input_tokens Request gives a lane of units (its bytes)
// at fill, a fraction of the window: never below what a compaction needs.
func windowFor(units int64, fill float64) int64 {
	return max(int64(math.Ceil(float64(units)/fill)), 2*promptReserveTokens+1024)
}

func profile(limit int64, tokenizer string) events.ModelProfile {
	maxOutput := int64(8192)
	return events.ModelProfile{
		ContextLimitKind: events.LimitSeparateInput,
		MaxInputTokens:   &limit,
		MaxOutputTokens:  &maxOutput,
		Tokenizer:        optional(tokenizer),
	}
}

// thresholds are the policy members Request sets; the others keep Cairn's
// defaults.
type thresholds struct {
	RecentTailMinTokens       int64 `json:"recent_tail_min_tokens"`
	SummaryOutputMinTokens    int64 `json:"summary_output_min_tokens"`
	MinimumTotalReclaimTokens int64 `json:"minimum_total_reclaim_tokens"`
	MinimumPruneReclaimTokens int64 `json:"minimum_prune_reclaim_tokens"`
}

// policy keeps Cairn's defaults for large lanes and scales the absolute
// minimums (tail, reclaim, output allowance) down for small ones, where the
// defaults (8 000-token tail, 8 192-token reclaim) exceed the whole lane;
// o.Policy's members are laid over them.
func policy(rendered, limit int64, o RequestOptions) json.RawMessage {
	reclaim := min(8192, max(1, rendered/5))
	prune := rendered + 1
	if o.AllowPrune {
		prune = reclaim
	}
	t := thresholds{
		RecentTailMinTokens:       min(8000, max(64, limit/10)),
		SummaryOutputMinTokens:    min(4096, max(256, limit/8)),
		MinimumTotalReclaimTokens: reclaim,
		MinimumPruneReclaimTokens: max(prune, 1),
	}
	plain, err := plainJSON(t)
	var data []byte
	if err == nil {
		members := plain.(map[string]any) // a struct encodes as an object
		maps.Copy(members, o.Policy)
		data, err = canonical.Encode(members)
	}
	if err != nil {
		panic(fmt.Sprintf("lanegen: policy is not JSON: %v", err))
	}
	return data
}

// activeInput lists the newest user event: the input the agent is answering.
func activeInput(lane []events.InputEvent) []string {
	for i := len(lane) - 1; i >= 0; i-- {
		if lane[i].Role == events.RoleUser {
			return []string{lane[i].EventID}
		}
	}
	return nil
}

// optional is s for an optional string member, nil (left out) for "".
func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
