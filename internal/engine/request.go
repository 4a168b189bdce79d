package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cairnhq/cairn/canonical"
	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/semantic"
)

// RequestVersion is the only wire version of a Request.
const RequestVersion = 1

// MaxRequestBytes bounds the JSON a DecodeRequest call accepts.
const MaxRequestBytes = 256 << 20

// Accounting carries the caller's knowledge about how the provider counts the
// request (subjects.md, Token accounting). All of it applies to the initial
// budget only, except Method and ProfileHash, which every budget uses.
type Accounting struct {
	Method                string           `json:"method,omitempty" doc:"how tokens are asked to be counted: local_tokenizer_v1 or reported_usage_delta_v2 ask for those methods; any other string, null or absence means conservative_utf8" null:"true"`
	ProfileHash           *string          `json:"profile_hash,omitempty" doc:"hash of the tokenizer profile the counts stand on, or null" pattern:"^[0-9a-f]{64}$"`
	ReportedInputTokens   int64            `json:"reported_input_tokens,omitempty" doc:"input tokens the provider reported for the lane's last call" null:"true" minimum:"0"`
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
// publishes for it (events.Header embeds it), so that a consumer can route
// an event without the request. WireRequest embeds it too: a field added
// here is accepted in a request, type-checked and echoed with no other edit.
// request_id is not here: a failed event may name a substitute.
type Correlation struct {
	ThreadID            string `json:"thread_id" doc:"the conversation (a name)"`
	RunAgentID          string `json:"run_agent_id" doc:"the agent (a name); with checkpoint_namespace it names the lane"`
	CheckpointNamespace string `json:"checkpoint_namespace" doc:"the lane within the agent (a name)"`
}

// WireRequest is the body of conversation.compact.requested as a producer
// encodes it (events.Request is this type). Its json tags are the request's
// key set, and its fields not tagged omitempty the required ones; a field no
// decode step reads is checked against its Go type (decodeOtherFields).
// Optional fields are pointers or omitted when empty; Policy, Accounting,
// RehydrationState and PreviousSemantic are passed through as JSON.
type WireRequest struct {
	V         int    `json:"v" doc:"wire version, always 1"`
	RequestID string `json:"request_id" doc:"the request's id (a name: 1..200 bytes of UTF-8 without control characters); becomes the checkpoint id; reuse it only to resend the same body" minLength:"1" maxLength:"200" pattern:"^[^\\x00-\\x1f\\x7f-\\x9f]*$"`
	Trigger   string `json:"trigger" doc:"why the compaction is asked for" enum:"auto|manual|overflow|model_switch_preflight"`
	Correlation
	RunID                    string          `json:"run_id" doc:"the run within the conversation (a name)" minLength:"1" maxLength:"200" pattern:"^[^\\x00-\\x1f\\x7f-\\x9f]*$"`
	RootTurnID               string          `json:"root_turn_id" doc:"the user turn that started the run (a name)" minLength:"1" maxLength:"200" pattern:"^[^\\x00-\\x1f\\x7f-\\x9f]*$"`
	ProviderConnectionID     string          `json:"provider_connection_id" doc:"the model connection the lane is sent through (a name)" minLength:"1" maxLength:"200" pattern:"^[^\\x00-\\x1f\\x7f-\\x9f]*$"`
	DestinationIdentityHash  string          `json:"destination_identity_hash" doc:"hash identifying the destination model and account" pattern:"^[0-9a-f]{64}$"`
	ParentCheckpointID       *string         `json:"parent_checkpoint_id,omitempty" doc:"the lane's active checkpoint (a name); absent or null for a new lane. A request naming another fails with stale_head" minLength:"1" maxLength:"200" pattern:"^[^\\x00-\\x1f\\x7f-\\x9f]*$"`
	ModelProfile             ModelProfile    `json:"model_profile" doc:"the context window of the model the lane is sent to"`
	RequestedMaxOutputTokens int64           `json:"requested_max_output_tokens,omitempty" doc:"output tokens the next model call asks for" null:"true" minimum:"0"`
	RenderedRequestBytes     *int64          `json:"rendered_request_bytes,omitempty" doc:"byte length of the provider request the application would send" minimum:"0"`
	Render                   string          `json:"render,omitempty" doc:"how events are rendered for counting; absent or null means canonical_v1" null:"true" enum:"canonical_v1|openai_chat_v1"`
	Events                   []InputEvent    `json:"events,omitempty" doc:"the lane, oldest first (1..10000 events); or events_object" null:"false" minItems:"1" maxItems:"10000"`
	EventsObject             string          `json:"events_object,omitempty" doc:"name of an object in the cairn_lanes Object Store holding the events array (a name)" minLength:"1" maxLength:"200" pattern:"^[^\\x00-\\x1f\\x7f-\\x9f]*$"`
	ActiveInputEventIDs      []string        `json:"active_input_event_ids,omitempty" doc:"ids of the events of the current input, each an event_id of the lane, none twice; kept verbatim" uniqueItems:"true"`
	PreviousSemantic         json.RawMessage `json:"previous_semantic,omitempty" doc:"the active checkpoint's semantic summary, or null"`
	RehydrationState         json.RawMessage `json:"rehydration_state" doc:"exact continuation data, copied verbatim into the checkpoint"`
	Policy                   json.RawMessage `json:"policy,omitempty" doc:"compaction policy; may be omitted, and omitted fields take their defaults"`
	Focus                    *string         `json:"focus,omitempty" doc:"what the summary should emphasise (at most 2000 bytes)" maxLength:"2000"`
	StructuralPressure       bool            `json:"structural_pressure,omitempty" doc:"an auto request with structural pressure is never skipped by the token trigger" null:"true"`
	Accounting               json.RawMessage `json:"accounting,omitempty" doc:"the producer's token accounting (method, profile_hash, reported_input_tokens, ...)"`
	// AntiThrash is the lane's automatic-compaction state. The service keeps
	// it in the lane head and ignores this field; `processor compact` reads it.
	AntiThrash               json.RawMessage `json:"anti_thrash,omitempty"`
	NewTokensSinceCompaction *int64          `json:"new_tokens_since_compaction,omitempty" doc:"tokens added since the last compaction; feeds the anti-thrash state" minimum:"0"`
	DeadlineAt               *time.Time      `json:"deadline_at,omitempty" doc:"Cairn stops waiting for the model at this time (deadline_exceeded); RFC 3339 with an upper-case T and a Z or ±hh:mm offset" pattern:"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})$"`
	Scope                    *Scope          `json:"scope,omitempty" doc:"where harvested facts go; default {kind: thread, id: thread_id}"`
	Harvest                  *bool           `json:"harvest,omitempty" doc:"harvest facts from what a compaction cut (default true)"`
}

// Request is one compaction request, Request v1 of subjects.md and
// docs/request.md. Build it with DecodeRequest, or in code and then Validate.
type Request struct {
	V                        int
	RequestID                string
	Trigger                  string
	ThreadID                 string
	RunID                    string
	RootTurnID               string
	RunAgentID               string
	ProviderConnectionID     string
	CheckpointNamespace      string
	DestinationIdentityHash  string
	ParentCheckpointID       *string
	ModelProfile             ModelProfile
	RequestedMaxOutputTokens int64
	// RenderedRequestBytes is the byte length of the exact provider request
	// the caller would send; when nil the before budget renders
	// PreviousSemantic and Events with Render.
	RenderedRequestBytes *int64
	// Render names the renderer; "" means canonical_v1.
	Render string
	// Events is the lane, oldest first. Nil while a request decoded with
	// EventsObject waits for the caller to load the claim-checked events.
	Events                   []InputEvent
	EventsObject             string
	ActiveInputEventIDs      []string
	PreviousSemantic         *semantic.Semantic
	RehydrationState         RehydrationState
	Policy                   Policy
	Focus                    *string
	StructuralPressure       bool
	Accounting               Accounting
	NewTokensSinceCompaction *int64
	AntiThrash               State
	DeadlineAt               *time.Time
	Scope                    *Scope
	Harvest                  *bool

	// validatedEvents is DecodeRequestValue's record of the events it
	// validated; nil for a request built in code.
	validatedEvents *eventsRecord
}

// EffectiveScope is Scope, or the request's thread when none was given.
func (r *Request) EffectiveScope() Scope {
	if r.Scope != nil {
		return *r.Scope
	}
	return Scope{Kind: "thread", ID: r.ThreadID}
}

// HarvestEnabled reports whether facts should be harvested (default true).
func (r *Request) HarvestEnabled() bool { return r.Harvest == nil || *r.Harvest }

// fieldError is an invalid_compaction_request naming the field and the
// rule it broke (errcode.Field).
func fieldError(message, field, rule string) *errcode.Error {
	return errcode.Field(errcode.InvalidRequest, message, field, rule)
}

// typeError is fieldError for a value of the wrong JSON type.
func typeError(message, field, expected string) *errcode.Error {
	return fieldError(message, field, "type").With("expected", expected)
}

// notAMap is the failure of a request that is not a JSON object; "$" is
// the path of the whole request.
func notAMap() *errcode.Error {
	return typeError("compaction request must be a map", "$", "object")
}

// Validate checks the whole request in the order of requestSteps;
// the first failure wins. Nested values return their own codes.
func (r *Request) Validate() error {
	if r == nil {
		return notAMap()
	}
	for _, step := range requestSteps {
		if step.check == nil {
			continue
		}
		if err := step.check(r); err != nil {
			return err
		}
	}
	return nil
}

// requestStep is one stage of validation: decode reads its fields from the
// wire object (type errors), check validates their values.
type requestStep struct {
	decode func(r *Request, m map[string]any) error
	check  func(r *Request) error
	// needsEvents marks checks that wait for claim-checked events.
	needsEvents bool
}

var requestSteps = []requestStep{
	{decodeIdentities, checkIdentities, false},
	{decodeTrigger, checkTrigger, false},
	{decodeDestination, checkDestination, false},
	{decodePolicyField, checkPolicy, false},
	{nil, checkEnabled, false},
	{decodeFocus, checkFocus, false},
	{decodeRehydration, checkRehydration, false},
	{decodePreviousSemantic, checkPreviousSemantic, false},
	{decodeState, checkState, false},
	{decodeEventsField, checkEvents, true},
	{decodeActiveIDs, checkActiveIDs, true},
	{decodeRender, checkRender, false},
	{decodeOutputTokens, checkOutputTokens, false},
	{decodeFlags, checkFlags, false},
	{decodeAccounting, nil, false},
	{decodeOtherFields, nil, false},
}

// wireField is one JSON member of a struct.
type wireField struct {
	name     string
	required bool // not omitempty
	typ      reflect.Type
	index    []int // for reflect.Value.FieldByIndex
}

// wireFields lists t's JSON members in encoding order, flattening embedded
// structs as encoding/json does.
func wireFields(t reflect.Type) []wireField {
	var out []wireField
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct:
			for _, inner := range wireFields(f.Type) {
				inner.index = append([]int{i}, inner.index...)
				out = append(out, inner)
			}
		case f.IsExported() && name != "-":
			out = append(out, wireField{name, !strings.Contains(opts, "omitempty"), f.Type, []int{i}})
		}
	}
	return out
}

var (
	wireRequestFields     = wireFields(reflect.TypeFor[WireRequest]())
	requestFields         = jsonKeys(reflect.TypeFor[WireRequest]())
	requiredRequestFields = fieldNames(wireRequestFields, true)
)

// fieldNames is the names of fields, only the required ones if
// requiredOnly.
func fieldNames(fields []wireField, requiredOnly bool) []string {
	var out []string
	for _, f := range fields {
		if f.required || !requiredOnly {
			out = append(out, f.name)
		}
	}
	return out
}

// jsonKeys is the set of t's JSON member names: the keys an object
// decoded into t may have.
func jsonKeys(t reflect.Type) map[string]bool { return keySet(fieldNames(wireFields(t), false)...) }

// decodedFields are the members a step of requestSteps reads and checks
// itself; decodeOtherFields checks the rest by their Go type.
var decodedFields = keySet("v", "request_id", "trigger", "thread_id", "run_id", "root_turn_id",
	"run_agent_id", "provider_connection_id", "checkpoint_namespace", "destination_identity_hash",
	"parent_checkpoint_id", "model_profile", "requested_max_output_tokens", "rendered_request_bytes",
	"render", "events", "events_object", "active_input_event_ids", "previous_semantic",
	"rehydration_state", "policy", "focus", "structural_pressure", "accounting",
	"new_tokens_since_compaction", "anti_thrash", "deadline_at", "scope", "harvest")

// decodeOtherFields type-checks the members of WireRequest that no other
// step reads (a field that is only echoed, say).
func decodeOtherFields(_ *Request, m map[string]any) error {
	return checkTypes(wireRequestFields, m)
}

// checkTypes checks that each member of m named in fields and not in
// decodedFields decodes into the field's Go type.
func checkTypes(fields []wireField, m map[string]any) error {
	for _, f := range fields {
		raw, ok := m[f.name]
		if !ok || raw == nil || decodedFields[f.name] {
			continue
		}
		b, err := json.Marshal(raw)
		if err == nil {
			err = json.Unmarshal(b, reflect.New(f.typ).Interface())
		}
		if err != nil {
			return invalidField(f.name, "type", f.name+" must be a "+f.typ.String())
		}
	}
	return nil
}

// DecodeRequest decodes and validates untrusted Request v1 JSON. Duplicate
// keys, unknown top-level fields and every contract violation are rejected;
// every error is an *errcode.Error. A request with events_object has nil
// Events and is validated up to the events; the caller loads the events,
// sets them and calls Validate.
func DecodeRequest(data []byte) (*Request, error) {
	if len(data) > MaxRequestBytes {
		return nil, errcode.WithDetails(errcode.PayloadTooLarge, "compaction request is too large",
			map[string]any{"field": "$", "rule": "range", "bytes": int64(len(data)), "limit": int64(MaxRequestBytes)})
	}
	v, err := canonical.Decode(data)
	if err != nil {
		if errors.Is(err, canonical.ErrDuplicateKey) {
			return nil, jsonError("compaction request has duplicate fields", "unique", err)
		}
		return nil, jsonError("compaction request is not JSON", "json", err)
	}
	return DecodeRequestValue(v)
}

// jsonError is the failure of a request body that is not one JSON object
// with unique keys; the cause says where.
func jsonError(message, rule string, err error) *errcode.Error {
	e := fieldError(message, "$", rule)
	var at *canonical.DecodeError
	if errors.As(err, &at) {
		e.With("offset", int64(at.Offset))
	}
	e.Err = err
	return e
}

// DecodeRequestValue is DecodeRequest for a request canonical.Decode has
// already decoded (from at most MaxRequestBytes), for a caller that needed
// the decoded value itself. It takes ownership of v.
func DecodeRequestValue(v any) (*Request, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, notAMap()
	}
	if err := checkEnvelope(m); err != nil {
		return nil, err
	}
	r := &Request{V: RequestVersion}
	for _, step := range requestSteps {
		if step.decode != nil {
			if err := step.decode(r, m); err != nil {
				return nil, err
			}
		}
		if step.check != nil && !(step.needsEvents && r.Events == nil) {
			if err := step.check(r); err != nil {
				return nil, err
			}
		}
	}
	if r.Events != nil {
		// Every check passed, checkEvents on exactly these events.
		r.validatedEvents = recordEvents(r.Events)
	}
	return r, nil
}

// checkEnvelope checks the version, the key set and the event source.
func checkEnvelope(m map[string]any) error {
	if version, ok := canonical.Int(m["v"]); !ok || version != RequestVersion {
		return errcode.Field(errcode.UnsupportedVersion, "unsupported request version", "v", "enum").
			With("value", echoValue(m["v"])).With("supported", []any{int64(RequestVersion)})
	}
	if unknown := unknownKeys(m, requestFields); len(unknown) > 0 {
		e := fieldError("compaction request has unknown fields", TruncateUTF8(unknown[0], maxListedNameSize), "unknown")
		return withAll(e, listedNames("unknown_fields", unknown))
	}
	var missing []string
	for _, f := range requiredRequestFields {
		if _, ok := m[f]; !ok {
			missing = append(missing, f)
		}
	}
	_, hasEvents := m["events"]
	_, hasObject := m["events_object"]
	if !hasEvents && !hasObject {
		missing = append(missing, "events")
	}
	if len(missing) > 0 {
		return fieldError("required compaction request fields are missing", missing[0], "required").
			With("missing_fields", stringsToAny(missing))
	}
	if hasEvents && hasObject {
		return fieldError("compaction request is invalid", "events_object", "exclusive").
			With("reason", "events and events_object are mutually exclusive")
	}
	return nil
}

func decodeIdentities(r *Request, m map[string]any) error {
	targets := []struct {
		key string
		dst *string
	}{
		{"request_id", &r.RequestID}, {"thread_id", &r.ThreadID}, {"run_id", &r.RunID},
		{"root_turn_id", &r.RootTurnID}, {"run_agent_id", &r.RunAgentID},
		{"provider_connection_id", &r.ProviderConnectionID}, {"checkpoint_namespace", &r.CheckpointNamespace},
	}
	for _, t := range targets {
		s, ok := m[t.key].(string)
		if !ok {
			return typeError("compaction request identities are invalid", t.key, "string")
		}
		*t.dst = s
	}
	if !readStringPtr(m, "parent_checkpoint_id", &r.ParentCheckpointID) {
		return typeError("compaction request identities are invalid", "parent_checkpoint_id", "string or null")
	}
	return nil
}

func checkIdentities(r *Request) error {
	ids := []struct{ field, value string }{
		{"request_id", r.RequestID}, {"thread_id", r.ThreadID}, {"run_id", r.RunID},
		{"root_turn_id", r.RootTurnID}, {"run_agent_id", r.RunAgentID},
		{"provider_connection_id", r.ProviderConnectionID}, {"checkpoint_namespace", r.CheckpointNamespace},
	}
	if r.ParentCheckpointID != nil {
		ids = append(ids, struct{ field, value string }{"parent_checkpoint_id", *r.ParentCheckpointID})
	}
	for _, id := range ids {
		if !ValidName(id.value) {
			return InvalidName(id.field, "compaction request identities are invalid")
		}
	}
	return nil
}

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

func decodeTrigger(r *Request, m map[string]any) error {
	s, ok := m["trigger"].(string)
	if !ok {
		return typeError("compaction trigger is invalid", "trigger", "string")
	}
	r.Trigger = s
	return nil
}

func checkTrigger(r *Request) error {
	if !isTrigger(r.Trigger) {
		return fieldError("compaction trigger is invalid", "trigger", "enum").
			With("value", echoValue(r.Trigger)).With("expected", stringsToAny(triggers))
	}
	return nil
}

// hashRule is what a hash field must look like, as details state it.
const hashRule = "64 lowercase hex digits"

func decodeDestination(r *Request, m map[string]any) error {
	s, ok := m["destination_identity_hash"].(string)
	if !ok {
		return typeError("destination identity hash is invalid", "destination_identity_hash", "string")
	}
	r.DestinationIdentityHash = s
	r.ModelProfile = DecodeModelProfile(m["model_profile"])
	return nil
}

func checkDestination(r *Request) error {
	if !isHash64(r.DestinationIdentityHash) {
		return fieldError("destination identity hash is invalid", "destination_identity_hash", "pattern").
			With("value", echoValue(r.DestinationIdentityHash)).With("expected", hashRule)
	}
	return nil
}

// decodePolicyField reads the policy; an absent or null policy is every
// default.
func decodePolicyField(r *Request, m map[string]any) error {
	raw, ok := m["policy"]
	if !ok || raw == nil {
		r.Policy = DefaultPolicy()
		return nil
	}
	p, err := DecodePolicy(raw)
	r.Policy = p
	return err
}

func checkPolicy(r *Request) error { return r.Policy.Validate() }

func checkEnabled(r *Request) error {
	if r.Trigger == TriggerAuto && !r.Policy.Enabled {
		return fieldError("compaction request is invalid", "policy.enabled", "conflict").
			With("value", false).With("reason", "automatic compaction is disabled by the policy")
	}
	return nil
}

func decodeFocus(r *Request, m map[string]any) error {
	if !readStringPtr(m, "focus", &r.Focus) {
		return invalidField("focus", "type", "focus must be a string or null")
	}
	return nil
}

func checkFocus(r *Request) error {
	if r.Focus != nil && (len(*r.Focus) > maxFocusBytes || !utf8.ValidString(*r.Focus)) {
		return invalidField("focus", "range", "focus must be valid UTF-8 of at most 2000 bytes").
			With("bytes", int64(len(*r.Focus))).With("limit", int64(maxFocusBytes))
	}
	return nil
}

// Bounds of a list of field names echoed into a failure's details: the
// names are the client's, and the failure must fit in a failed event.
const (
	maxListedNames    = 16
	maxListedNameSize = 64
)

// listedNames is the details entry key: names, at most maxListedNames of
// them, each cut to maxListedNameSize bytes with a "…" marker; when some
// are left out, key+"_count" says how many there were.
func listedNames(key string, names []string) map[string]any {
	shown := names[:min(len(names), maxListedNames)]
	out := make([]any, len(shown))
	for i, n := range shown {
		out[i] = TruncateUTF8(n, maxListedNameSize)
	}
	d := map[string]any{key: out}
	if len(names) > len(shown) {
		d[key+"_count"] = int64(len(names))
	}
	return d
}

// withAll adds every entry of d to e's details.
func withAll(e *errcode.Error, d map[string]any) *errcode.Error {
	for k, v := range d {
		e.With(k, v)
	}
	return e
}

// TruncateUTF8 returns s when it has at most limit bytes, else its longest
// prefix of whole characters that leaves room for the "…" marker, and the
// marker.
func TruncateUTF8(s string, limit int) string {
	const marker = "…"
	if len(s) <= limit {
		return s
	}
	cut := max(limit-len(marker), 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + marker
}

// invalidField is the generic "compaction request is invalid" failure of
// one field, with the reason in words.
func invalidField(field, rule, reason string) *errcode.Error {
	return fieldError("compaction request is invalid", field, rule).With("reason", reason)
}

func decodeRehydration(r *Request, m map[string]any) error {
	state, err := NewRehydrationState(m["rehydration_state"])
	r.RehydrationState = state
	return err
}

func checkRehydration(r *Request) error { return r.RehydrationState.Validate() }

func decodePreviousSemantic(r *Request, m map[string]any) error {
	raw := m["previous_semantic"]
	if raw == nil {
		return nil
	}
	s, err := semantic.Parse(raw)
	if err != nil {
		return previousSemanticError(err)
	}
	r.PreviousSemantic = s
	return nil
}

func checkPreviousSemantic(r *Request) error {
	if r.PreviousSemantic == nil {
		return nil
	}
	if err := r.PreviousSemantic.Validate(); err != nil {
		return previousSemanticError(err)
	}
	return nil
}

// previousSemanticError is the semantic error of previous_semantic with the
// subject a request's errors name: details.field is the path of the bad
// value in the request (previous_semantic.objective[0].text) and
// details.rule says it broke the semantic schema.
func previousSemanticError(err error) error {
	e := errcode.As(asSemanticError(err))
	field := "previous_semantic"
	if path, _ := e.Details["path"].(string); path != "" {
		field += "." + path
	}
	e.With("field", field)
	if _, ok := e.Details["rule"]; !ok {
		e.With("rule", "schema")
	}
	return e
}

// asSemanticError keeps a typed semantic error and types any other one.
func asSemanticError(err error) error {
	if e := errcode.As(err); e != nil {
		return e
	}
	return errcode.Wrap(errcode.InvalidSemantic, "semantic output is invalid", err)
}

func decodeState(r *Request, m map[string]any) error {
	if raw, ok := m["anti_thrash"]; ok && raw != nil {
		s, err := DecodeState(raw)
		if err != nil {
			return err
		}
		r.AntiThrash = s
	}
	if !readIntPtr(m, "new_tokens_since_compaction", &r.NewTokensSinceCompaction) {
		return stateFieldError("new-token count must be non-negative", "new_tokens_since_compaction", "type")
	}
	return nil
}

func checkState(r *Request) error {
	if err := r.AntiThrash.Validate(); err != nil {
		return err
	}
	if r.NewTokensSinceCompaction != nil && *r.NewTokensSinceCompaction < 0 {
		return stateFieldError("new-token count must be non-negative", "new_tokens_since_compaction", "range").
			With("value", *r.NewTokensSinceCompaction)
	}
	return nil
}

func decodeEventsField(r *Request, m map[string]any) error {
	if raw, ok := m["events_object"]; ok {
		name, isString := raw.(string)
		if !isString || !ValidName(name) {
			return InvalidName("events_object", "events_object must name an object")
		}
		r.EventsObject = name
		return nil
	}
	events, err := decodeEventList(m["events"])
	r.Events = events
	return err
}

// decodeEventList converts a decoded JSON array into events, checking shape
// and JSON types only; values are checked by checkEvents.
func decodeEventList(raw any) ([]InputEvent, error) {
	list, ok := raw.([]any)
	if !ok {
		return nil, typeError("compaction event sequence is empty or oversized", "events", "array")
	}
	if err := checkEventCount(len(list)); err != nil {
		return nil, err
	}
	events := make([]InputEvent, len(list))
	for i, v := range list {
		e, err := decodeEventShape(v)
		if err != nil {
			return nil, atEvent(i, err)
		}
		events[i] = e
	}
	return events, nil
}

// checkEvents skips validating each event when the events still hold the
// values they passed with at decoding (eventsRecord); the lane rule, which
// also reads the request's own fields, is checked every time.
func checkEvents(r *Request) error {
	if err := checkEventCount(len(r.Events)); err != nil {
		return err
	}
	if !r.validatedEvents.matches(r.Events) {
		if err := validateEach(r.Events); err != nil {
			return err
		}
	}
	return r.checkLane()
}

// checkEventCount checks that a lane has 1..maxEventsPerRequest events.
func checkEventCount(n int) error {
	if n == 0 || n > maxEventsPerRequest {
		return fieldError("compaction event sequence is empty or oversized", "events", "range").
			With("count", int64(n)).With("min", int64(1)).With("max", int64(maxEventsPerRequest))
	}
	return nil
}

// validateEach validates the events in order; the first failure wins.
func validateEach(events []InputEvent) error {
	for i := range events {
		if err := events[i].Validate(); err != nil {
			return atEvent(i, err)
		}
	}
	return nil
}

// atEvent adds where in the request an event error is: details.index, and
// details.path (`events[17].content_hash`) beside the event's own field, so
// that a producer finds the event without searching for its id.
func atEvent(i int, err error) error {
	var e *errcode.Error
	if !errors.As(err, &e) || e.Code != errcode.InvalidEvent {
		return err
	}
	e.With("index", i)
	if field, ok := e.Details["field"].(string); ok && field != "" {
		e.With("path", fmt.Sprintf("events[%d].%s", i, field))
	} else {
		e.With("path", fmt.Sprintf("events[%d]", i))
	}
	return e
}

// checkLane is the lane rule: one agent, one namespace, strictly increasing
// ordinals, unique ids, and (Cairn) non-decreasing chat_seq.
func (r *Request) checkLane() error {
	ids := make(map[string]struct{}, len(r.Events))
	for i := range r.Events {
		e := &r.Events[i] // not a copy: checkLane runs on every Validate
		if e.RunAgentID != r.RunAgentID {
			return laneError(i, "run_agent_id", "lane", e.RunAgentID, r.RunAgentID)
		}
		if e.CheckpointNamespace != r.CheckpointNamespace {
			return laneError(i, "checkpoint_namespace", "lane", e.CheckpointNamespace, r.CheckpointNamespace)
		}
		if i > 0 {
			prev := &r.Events[i-1]
			if e.LaneEventOrdinal <= prev.LaneEventOrdinal {
				return laneError(i, "lane_event_ordinal", "order", e.LaneEventOrdinal, "> "+strconv.FormatInt(prev.LaneEventOrdinal, 10))
			}
			if e.ChatSeq < prev.ChatSeq {
				return laneError(i, "chat_seq", "order", e.ChatSeq, ">= "+strconv.FormatInt(prev.ChatSeq, 10))
			}
		}
		if _, dup := ids[e.EventID]; dup {
			return laneError(i, "event_id", "unique", e.EventID, "an id no earlier event has")
		}
		ids[e.EventID] = struct{}{}
	}
	return nil
}

// laneError is the lane rule's failure at event i: its field, the value it
// holds and what the lane expected there.
func laneError(i int, field, rule string, value, expected any) *errcode.Error {
	return fieldError("compaction events are not one ordered lane", eventPath(i, field), rule).
		With("value", echoValue(value)).With("expected", echoValue(expected))
}

// eventPath is the path of an event's field in the request: events[i].field.
func eventPath(i int, field string) string {
	return "events[" + strconv.Itoa(i) + "]." + field
}

func decodeActiveIDs(r *Request, m map[string]any) error {
	raw, ok := m["active_input_event_ids"]
	if !ok || raw == nil {
		return nil
	}
	ids, isList := asStringList(raw)
	if !isList {
		return typeError(activeIDsMessage, "active_input_event_ids", "array of strings")
	}
	r.ActiveInputEventIDs = ids
	return nil
}

const activeIDsMessage = "active input event IDs are invalid"

// checkActiveIDs indexes the active ids, usually one or a few, rather than
// every event: one pass over the events then finds them all, and a second
// pass over the ids names the first one no event carries.
func checkActiveIDs(r *Request) error {
	active := r.ActiveInputEventIDs
	if len(active) > len(r.Events) {
		return fieldError(activeIDsMessage, "active_input_event_ids", "range").
			With("count", int64(len(active))).With("max", int64(len(r.Events)))
	}
	if len(active) == 0 {
		return nil
	}
	found := make(map[string]bool, len(active))
	for i, id := range active {
		if _, dup := found[id]; dup {
			return activeIDError(i, "unique", id)
		}
		found[id] = false
	}
	if countFound(found, r.Events) < len(active) {
		for i, id := range active {
			if !found[id] {
				return activeIDError(i, "reference", id)
			}
		}
	}
	return nil
}

// activeIDError names the active id at index i: repeated (unique) or not
// the id of any event of the lane (reference).
func activeIDError(i int, rule, id string) *errcode.Error {
	return fieldError(activeIDsMessage, "active_input_event_ids["+strconv.Itoa(i)+"]", rule).
		With("value", echoValue(id))
}

// countFound marks the ids of found that some event carries and returns
// how many it marked.
func countFound(found map[string]bool, events []InputEvent) int {
	n := 0
	for i := 0; i < len(events) && n < len(found); i++ {
		if marked, wanted := found[events[i].EventID]; wanted && !marked {
			found[events[i].EventID] = true
			n++
		}
	}
	return n
}

func decodeRender(r *Request, m map[string]any) error {
	if raw, ok := m["render"]; ok && raw != nil {
		name, isString := raw.(string)
		if !isString {
			return invalidField("render", "type", "render must name a renderer")
		}
		r.Render = name
	}
	if raw, ok := m["rendered_request_bytes"]; ok && raw != nil {
		n, isInt := canonical.Int(raw)
		if !isInt {
			return invalidField("rendered_request_bytes", "type", "rendered_request_bytes must be a non-negative integer")
		}
		r.RenderedRequestBytes = &n
	}
	return nil
}

func checkRender(r *Request) error {
	if _, err := RendererFor(r.Render); err != nil {
		return err
	}
	if r.RenderedRequestBytes != nil && *r.RenderedRequestBytes < 0 {
		return invalidField("rendered_request_bytes", "range", "rendered_request_bytes must be a non-negative integer").
			With("value", *r.RenderedRequestBytes)
	}
	return nil
}

func decodeOutputTokens(r *Request, m map[string]any) error {
	if raw, ok := m["requested_max_output_tokens"]; ok && raw != nil {
		n, isInt := canonical.Int(raw)
		if !isInt {
			return invalidField("requested_max_output_tokens", "type", "requested_max_output_tokens must be a non-negative integer")
		}
		r.RequestedMaxOutputTokens = n
	}
	return nil
}

func checkOutputTokens(r *Request) error {
	if r.RequestedMaxOutputTokens < 0 {
		return invalidField("requested_max_output_tokens", "range", "requested_max_output_tokens must be a non-negative integer").
			With("value", r.RequestedMaxOutputTokens)
	}
	return nil
}

// decodeFlags reads structural_pressure and the wire-only fields that need
// no cross-checks (deadline_at, scope, harvest).
func decodeFlags(r *Request, m map[string]any) error {
	if raw, ok := m["structural_pressure"]; ok && raw != nil {
		b, isBool := raw.(bool)
		if !isBool {
			return invalidField("structural_pressure", "type", "structural_pressure must be a boolean")
		}
		r.StructuralPressure = b
	}
	if raw, ok := m["harvest"]; ok && raw != nil {
		b, isBool := raw.(bool)
		if !isBool {
			return invalidField("harvest", "type", "harvest must be a boolean")
		}
		r.Harvest = &b
	}
	if raw, ok := m["deadline_at"]; ok && raw != nil {
		s, isString := raw.(string)
		t, err := time.Parse(time.RFC3339Nano, s)
		if !isString || err != nil {
			return invalidField("deadline_at", "format", "deadline_at must be an RFC 3339 time or null")
		}
		r.DeadlineAt = &t
	}
	if raw, ok := m["scope"]; ok && raw != nil {
		scope, err := decodeScope(raw)
		if err != nil {
			return err
		}
		r.Scope = scope
	}
	return nil
}

func checkFlags(r *Request) error {
	if r.Scope != nil && (!ValidName(r.Scope.Kind) || !ValidName(r.Scope.ID)) {
		return InvalidName("scope", "scope must be {\"kind\": string, \"id\": string}")
	}
	return nil
}

const scopeReason = "scope must be {\"kind\": string, \"id\": string}"

func decodeScope(raw any) (*Scope, error) {
	m, ok := raw.(map[string]any)
	if !ok || len(unknownKeys(m, keySet("kind", "id"))) > 0 {
		return nil, invalidField("scope", "type", scopeReason)
	}
	kind, ok1 := m["kind"].(string)
	id, ok2 := m["id"].(string)
	if !ok1 || !ok2 {
		return nil, invalidField("scope", "type", scopeReason)
	}
	return &Scope{Kind: kind, ID: id}, nil
}

var accountingFields = jsonKeys(reflect.TypeFor[Accounting]())

func decodeAccounting(r *Request, m map[string]any) error {
	raw, ok := m["accounting"]
	if !ok || raw == nil {
		return nil
	}
	a, isMap := raw.(map[string]any)
	if !isMap {
		return invalidField("accounting", "type", "accounting must be an object")
	}
	if unknown := unknownKeys(a, accountingFields); len(unknown) > 0 {
		return withAll(invalidField("accounting", "unknown", "unknown accounting fields"), listedNames("fields", unknown))
	}
	var method *string
	if !readStringPtr(a, "method", &method) {
		return invalidField("accounting.method", "type", "accounting method must be a string")
	}
	if method != nil {
		r.Accounting.Method = *method
	}
	if !readStringPtr(a, "profile_hash", &r.Accounting.ProfileHash) {
		return stateFieldError("accounting identity is invalid", "accounting.profile_hash", "type")
	}
	if !readInt(a, "reported_input_tokens", &r.Accounting.ReportedInputTokens) && a["reported_input_tokens"] != nil {
		return budgetError(reportedUsageMessage, "accounting.reported_input_tokens", "type")
	}
	categories, err := decodeCategories(a["category_bytes"])
	if err != nil {
		return err
	}
	r.Accounting.CategoryBytes = categories
	r.Accounting.ReportedUsageBaseline = a["reported_usage_baseline"]
	r.Accounting.ComponentDescriptors = a["component_descriptors"]
	return nil
}

func decodeCategories(raw any) (map[string]int64, error) {
	if raw == nil {
		return nil, nil
	}
	m, ok := raw.(map[string]any)
	if !ok {
		return nil, budgetError("categories must be a map", categoryField, "type")
	}
	out := make(map[string]int64, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) { // the first bad key in byte order, so the error is stable
		n, isInt := canonical.Int(m[k])
		switch {
		case !isInt:
			return nil, categoryError(k, "type", m[k])
		case n < 0:
			return nil, categoryError(k, "range", m[k])
		}
		out[k] = n
	}
	return out, nil
}

// DecodeEvents decodes the claim-checked events of a request (a JSON array
// of InputEvents, 1..10 000) and validates each event. Lane rules are checked
// by Request.Validate once the events are set. Errors are *errcode.Error.
func DecodeEvents(data []byte) ([]InputEvent, error) {
	v, err := canonical.Decode(data)
	if err != nil {
		return nil, errcode.Wrap(errcode.InvalidRequest, "compaction events are not JSON", err)
	}
	events, err := decodeEventList(v)
	if err != nil {
		return nil, err
	}
	if err := validateEach(events); err != nil {
		return nil, err
	}
	return events, nil
}
