package events

import (
	"encoding/json"
	"time"
	"unicode/utf8"

	"github.com/cairnhq/cairn/errcode"
)

// Accounting carries the caller's knowledge about how the provider counts the
// request (subjects.md, Token accounting). All of it applies to the initial
// budget only, except Method and ProfileHash, which every budget uses.
type Accounting struct {
	Method                string           `json:"method,omitempty" doc:"how tokens are asked to be counted: local_tokenizer_v1 or reported_usage_delta_v2 ask for those methods; any other string, null or absence means conservative_utf8" null:"true" invalid:"compaction request is invalid" reason:"accounting method must be a string"`
	ProfileHash           *string          `json:"profile_hash,omitempty" doc:"hash of the tokenizer profile the counts stand on, or null" pattern:"^[0-9a-f]{64}$" code:"invalid_compaction_state" invalid:"accounting identity is invalid"`
	ReportedInputTokens   int64            `json:"reported_input_tokens,omitempty" doc:"input tokens the provider reported for the lane's last call" null:"true" minimum:"0" code:"invalid_context_budget" invalid:"reported usage must be a non-negative integer"`
	CategoryBytes         map[string]int64 `json:"category_bytes,omitempty" doc:"bytes of the request outside the lane's events, by category (system prompt, tools, ...); each >= 0"`
	ReportedUsageBaseline any              `json:"reported_usage_baseline,omitempty" doc:"the reported usage the delta of reported_usage_delta_v2 starts from; passed through"`
	ComponentDescriptors  any              `json:"component_descriptors,omitempty" doc:"descriptions of the request's other components; passed through"`
}

// Scope is where facts harvested from a compaction are stored.
type Scope struct {
	Kind string `json:"kind" doc:"the kind of scope, e.g. thread, project or user (a name)" minLength:"1" maxLength:"200" pattern:"^[^\\x00-\\x1f\\x7f-\\x9f]*$"`
	ID   string `json:"id" doc:"the scope's id (a name)" minLength:"1" maxLength:"200" pattern:"^[^\\x00-\\x1f\\x7f-\\x9f]*$"`
}

// Correlation is what Cairn echoes from a request into every event it
// publishes for it (Header embeds it), so that a consumer can route
// an event without the request. Request embeds it too: a field added
// here is accepted in a request, type-checked and echoed with no other edit.
// request_id is not here: a failed event may name a substitute.
type Correlation struct {
	ThreadID            string `json:"thread_id" doc:"the conversation (a name)" invalid:"compaction request identities are invalid" expected:"string"`
	RunAgentID          string `json:"run_agent_id" doc:"the agent (a name); with checkpoint_namespace it names the lane" invalid:"compaction request identities are invalid" expected:"string"`
	CheckpointNamespace string `json:"checkpoint_namespace" doc:"the lane within the agent (a name)" invalid:"compaction request identities are invalid" expected:"string"`
}

// Request is the body of conversation.compact.requested (Request v1) as a
// producer encodes it. Its json tags are the request's key set, its fields
// not tagged omitempty the required ones, its Go types the members' JSON
// types, and the tags invalid (the message), reason or expected (a detail)
// and code (when not invalid_compaction_request) the failure of a member of
// the wrong type. Cairn decodes a request by these tags, so a field added
// here is accepted and type-checked with no further edit.
// Optional fields are pointers or omitted when empty; Policy, Accounting,
// RehydrationState and PreviousSemantic are passed through as JSON.
type Request struct {
	V         int    `json:"v" doc:"wire version, always 1"`
	RequestID string `json:"request_id" doc:"the request's id (a name: 1..200 bytes of UTF-8 without control characters); becomes the checkpoint id; reuse it only to resend the same body" minLength:"1" maxLength:"200" pattern:"^[^\\x00-\\x1f\\x7f-\\x9f]*$" invalid:"compaction request identities are invalid" expected:"string"`
	Trigger   string `json:"trigger" doc:"why the compaction is asked for" enum:"auto|manual|overflow|model_switch_preflight" invalid:"compaction trigger is invalid" expected:"string"`
	Correlation
	RunID                    string          `json:"run_id" doc:"the run within the conversation (a name)" minLength:"1" maxLength:"200" pattern:"^[^\\x00-\\x1f\\x7f-\\x9f]*$" invalid:"compaction request identities are invalid" expected:"string"`
	RootTurnID               string          `json:"root_turn_id" doc:"the user turn that started the run (a name)" minLength:"1" maxLength:"200" pattern:"^[^\\x00-\\x1f\\x7f-\\x9f]*$" invalid:"compaction request identities are invalid" expected:"string"`
	ProviderConnectionID     string          `json:"provider_connection_id" doc:"the model connection the lane is sent through (a name)" minLength:"1" maxLength:"200" pattern:"^[^\\x00-\\x1f\\x7f-\\x9f]*$" invalid:"compaction request identities are invalid" expected:"string"`
	DestinationIdentityHash  string          `json:"destination_identity_hash" doc:"hash identifying the destination model and account" pattern:"^[0-9a-f]{64}$" invalid:"destination identity hash is invalid" expected:"string"`
	ParentCheckpointID       *string         `json:"parent_checkpoint_id,omitempty" doc:"the lane's active checkpoint (a name); absent or null for a new lane. A request naming another fails with stale_head" minLength:"1" maxLength:"200" pattern:"^[^\\x00-\\x1f\\x7f-\\x9f]*$" invalid:"compaction request identities are invalid" expected:"string or null"`
	ModelProfile             ModelProfile    `json:"model_profile" doc:"the context window of the model the lane is sent to"`
	RequestedMaxOutputTokens int64           `json:"requested_max_output_tokens,omitempty" doc:"output tokens the next model call asks for" null:"true" minimum:"0" invalid:"compaction request is invalid" reason:"requested_max_output_tokens must be a non-negative integer"`
	RenderedRequestBytes     *int64          `json:"rendered_request_bytes,omitempty" doc:"byte length of the provider request the application would send" minimum:"0" invalid:"compaction request is invalid" reason:"rendered_request_bytes must be a non-negative integer"`
	Render                   string          `json:"render,omitempty" doc:"how events are rendered for counting; absent or null means canonical_v1" null:"true" enum:"canonical_v1|openai_chat_v1" invalid:"compaction request is invalid" reason:"render must name a renderer"`
	Events                   []InputEvent    `json:"events,omitempty" doc:"the lane, oldest first (1..10000 events); or events_object" null:"false" minItems:"1" maxItems:"10000"`
	EventsObject             string          `json:"events_object,omitempty" doc:"name of an object in the cairn_lanes Object Store holding the events array (a name)" minLength:"1" maxLength:"200" pattern:"^[^\\x00-\\x1f\\x7f-\\x9f]*$"`
	ActiveInputEventIDs      []string        `json:"active_input_event_ids,omitempty" doc:"ids of the events of the current input, each an event_id of the lane, none twice; kept verbatim" uniqueItems:"true" invalid:"active input event IDs are invalid" expected:"array of strings"`
	PreviousSemantic         json.RawMessage `json:"previous_semantic,omitempty" doc:"the active checkpoint's semantic summary, or null"`
	RehydrationState         json.RawMessage `json:"rehydration_state" doc:"exact continuation data, copied verbatim into the checkpoint"`
	Policy                   json.RawMessage `json:"policy,omitempty" doc:"compaction policy; may be omitted, and omitted fields take their defaults"`
	Focus                    *string         `json:"focus,omitempty" doc:"what the summary should emphasise (at most 2000 bytes)" maxLength:"2000" invalid:"compaction request is invalid" reason:"focus must be a string or null"`
	StructuralPressure       bool            `json:"structural_pressure,omitempty" doc:"an auto request with structural pressure is never skipped by the token trigger" null:"true" invalid:"compaction request is invalid" reason:"structural_pressure must be a boolean"`
	Accounting               json.RawMessage `json:"accounting,omitempty" doc:"the producer's token accounting (method, profile_hash, reported_input_tokens, ...)"`
	// AntiThrash is the lane's automatic-compaction state. The service keeps
	// it in the lane head and ignores this field; `processor compact` reads it.
	AntiThrash               json.RawMessage `json:"anti_thrash,omitempty"`
	NewTokensSinceCompaction *int64          `json:"new_tokens_since_compaction,omitempty" doc:"tokens added since the last compaction; feeds the anti-thrash state" minimum:"0" code:"invalid_compaction_state" invalid:"new-token count must be non-negative"`
	DeadlineAt               *time.Time      `json:"deadline_at,omitempty" doc:"Cairn stops waiting for the model at this time (deadline_exceeded); RFC 3339 with an upper-case T and a Z or ±hh:mm offset" pattern:"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})$"`
	Scope                    *Scope          `json:"scope,omitempty" doc:"where harvested facts go; default {kind: thread, id: thread_id}" invalid:"compaction request is invalid" reason:"scope must be {\"kind\": string, \"id\": string}"`
	Harvest                  *bool           `json:"harvest,omitempty" doc:"harvest facts from what a compaction cut (default true)" invalid:"compaction request is invalid" reason:"harvest must be a boolean"`
}

// Request is one compaction request, Request v1 of subjects.md and

// MaxNameBytes bounds every identifier and name of a request (ids, the
// lane, events_object, the harvest scope). Cairn puts them in KV keys,
// object names, subjects and the Nats-Msg-Id of its events, where the
// server's 4 KiB control line and 64 KiB header limits apply.
const MaxNameBytes = 200

// NameRule is the rule ValidName checks, as a failure's details state it.
const NameRule = "1..200 bytes of UTF-8 without control characters"

// ValidName reports whether s obeys NameRule: 1..MaxNameBytes bytes of
// valid UTF-8 with no C0 or C1 control character (no NUL, no line break:
// a name is echoed into message headers and logs).
func ValidName(s string) bool {
	if len(s) == 0 || len(s) > MaxNameBytes || !utf8.ValidString(s) {
		return false
	}
	for _, c := range s {
		if c < 0x20 || (c >= 0x7f && c < 0xa0) {
			return false
		}
	}
	return true
}

// InvalidName is the invalid_compaction_request failure of a name or id
// field that breaks NameRule: its details name the field and the rule.
func InvalidName(field, message string) *errcode.Error {
	return errcode.WithDetails(errcode.InvalidRequest, message, map[string]any{"field": field, "rule": "name", "expected": NameRule})
}

// maxListedNameSize bounds a client's field name echoed into a failure's
// details: the failure must fit in a failed event.
const maxListedNameSize = 64

// hashRule is what a hash field must look like, as details state it.
const hashRule = "64 lowercase hex digits"
