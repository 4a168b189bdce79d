package engine

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/cairnhq/cairn/events"
	"github.com/cairnhq/cairn/jsonwire"

	"github.com/cairnhq/cairn/canonical"
	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/semantic"
)

// RequestVersion is the only wire version of a Request.
const RequestVersion = 1

// MaxRequestBytes bounds the JSON a DecodeRequest call accepts.
const MaxRequestBytes = 256 << 20

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
	ModelProfile             events.ModelProfile
	RequestedMaxOutputTokens int64
	// RenderedRequestBytes is the byte length of the exact provider request
	// the caller would send; when nil the before budget renders
	// PreviousSemantic and Events with Render.
	RenderedRequestBytes *int64
	// Render names the renderer; "" means canonical_v1.
	Render string
	// Events is the lane, oldest first. Nil while a request decoded with
	// EventsObject waits for the caller to load the claim-checked events.
	Events                   []events.InputEvent
	EventsObject             string
	ActiveInputEventIDs      []string
	PreviousSemantic         *semantic.Semantic
	RehydrationState         events.RehydrationState
	Policy                   events.Policy
	Focus                    *string
	StructuralPressure       bool
	Accounting               events.Accounting
	NewTokensSinceCompaction *int64
	AntiThrash               events.AntiThrash
	DeadlineAt               *time.Time
	Scope                    *events.Scope
	Harvest                  *bool
}

// EffectiveScope is Scope, or the request's thread when none was given.
func (r *Request) EffectiveScope() events.Scope {
	if r.Scope != nil {
		return *r.Scope
	}
	return events.Scope{Kind: "thread", ID: r.ThreadID}
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

// requestStep is one stage of decoding and validation. decode reads the
// members that have decoders of their own; then members are read by their
// tags in events.Request (their JSON types); check validates the values.
// A step's failures come before those of the steps after it.
type requestStep struct {
	decode func(r *Request, m map[string]any) error
	// members are the events.Request members the step reads by their tags,
	// each into the Request field of the same name.
	members []string
	check   func(r *Request) error
	// needsEvents marks checks that wait for claim-checked events.
	needsEvents bool
	// rest reads every member no other step reads, into a scratch
	// events.Request: a member added to events.Request is type-checked with
	// no new step.
	rest bool
	read []jsonwire.Field
}

// requestSteps is the documented order of a request's checks (docs/request.md).
var requestSteps = resolveSteps([]requestStep{
	{members: []string{"request_id", "thread_id", "run_id", "root_turn_id", "run_agent_id",
		"provider_connection_id", "checkpoint_namespace", "parent_checkpoint_id"}, check: checkIdentities},
	{members: []string{"trigger"}, check: checkTrigger},
	{decode: decodeModelProfile, members: []string{"destination_identity_hash"}, check: checkDestination},
	{decode: decodePolicyField, check: checkPolicy},
	{check: checkEnabled},
	{members: []string{"focus"}, check: checkFocus},
	{decode: decodeRehydration, check: checkRehydration},
	{decode: decodePreviousSemantic, check: checkPreviousSemantic},
	{decode: decodeAntiThrash, members: []string{"new_tokens_since_compaction"}, check: checkState},
	{decode: decodeEventsField, check: checkEvents, needsEvents: true},
	{members: []string{"active_input_event_ids"}, check: checkActiveIDs, needsEvents: true},
	{members: []string{"render", "rendered_request_bytes"}, check: checkRender},
	{members: []string{"requested_max_output_tokens"}, check: checkOutputTokens},
	{members: []string{"structural_pressure", "harvest"}},
	{decode: decodeDeadline},
	{members: []string{"scope"}, check: checkScope},
	{decode: decodeAccounting},
	{rest: true},
})

var wireRequestFields = jsonwire.Fields(reflect.TypeFor[events.Request]())

// ownDecoded are the members read by a step's decode, not by their tags.
var ownDecoded = jsonwire.KeySet("v", "model_profile", "policy", "rehydration_state", "previous_semantic",
	"anti_thrash", "events", "events_object", "deadline_at", "accounting")

// resolveSteps fills in each step's read: its members as fields of
// Request (the tags of events.Request, the index of Request's field of the
// same name and type), or, for the rest step, every member that neither a
// step nor a decode names. A member without such a field is a mistake in
// the table, found when the package loads.
func resolveSteps(steps []requestStep) []requestStep {
	named := maps.Clone(ownDecoded)
	request := reflect.TypeFor[Request]()
	wire := reflect.TypeFor[events.Request]()
	for i := range steps {
		for _, f := range jsonwire.Select(wireRequestFields, steps[i].members...) {
			target, found := request.FieldByName(wire.FieldByIndex(f.Index).Name)
			if !found || target.Type != f.Type {
				panic("engine: request member " + f.Name + " has no Request field of its type")
			}
			f.Index = target.Index
			steps[i].read = append(steps[i].read, f)
			named[f.Name] = true
		}
	}
	for i := range steps {
		if steps[i].rest {
			steps[i].read = slices.DeleteFunc(slices.Clone(wireRequestFields), func(f jsonwire.Field) bool { return named[f.Name] })
		}
	}
	return steps
}

// readMembers reads the step's members from m by their tags.
func (step *requestStep) readMembers(r *Request, m map[string]any) error {
	if len(step.read) == 0 {
		return nil
	}
	dst := reflect.ValueOf(r).Elem()
	if step.rest {
		dst = reflect.New(reflect.TypeFor[events.Request]()).Elem()
	}
	return jsonwire.Read(dst, step.read, m, func(f jsonwire.Field, rule string) error {
		return memberError(f, "", rule)
	})
}

// memberError is the failure of member f (at path+f.Name) of the wrong
// JSON type, as its tags state it: the code (invalid_compaction_request
// unless tagged code), the message (tagged invalid), and details.reason or
// details.expected when tagged so. A member without an invalid tag says
// which Go type it must decode into.
func memberError(f jsonwire.Field, path, rule string) *errcode.Error {
	message := f.Tag.Get("invalid")
	if message == "" {
		return invalidField(path+f.Name, rule, f.Name+" must be a "+f.Type.String())
	}
	code := f.Tag.Get("code")
	if code == "" {
		code = errcode.InvalidRequest
	}
	e := errcode.Field(code, message, path+f.Name, rule)
	if reason := f.Tag.Get("reason"); reason != "" {
		e.With("reason", reason)
	}
	if expected := f.Tag.Get("expected"); expected != "" {
		e.With("expected", expected)
	}
	return e
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
	for i := range requestSteps {
		step := &requestSteps[i]
		if step.decode != nil {
			if err := step.decode(r, m); err != nil {
				return nil, err
			}
		}
		if err := step.readMembers(r, m); err != nil {
			return nil, err
		}
		if step.check != nil && !(step.needsEvents && r.Events == nil) {
			if err := step.check(r); err != nil {
				return nil, err
			}
		}
	}
	return r, nil
}

var requestFields = jsonwire.KeySet(jsonwire.Names(wireRequestFields, false)...)

// checkEnvelope checks the version, the key set and the event source.
func checkEnvelope(m map[string]any) error {
	if version, ok := canonical.Int(m["v"]); !ok || version != RequestVersion {
		return errcode.Field(errcode.UnsupportedVersion, "unsupported request version", "v", "enum").
			With("value", jsonwire.Echo(m["v"])).With("supported", []any{int64(RequestVersion)})
	}
	if unknown := jsonwire.UnknownKeys(m, requestFields); len(unknown) > 0 {
		e := fieldError("compaction request has unknown fields", TruncateUTF8(unknown[0], maxListedNameSize), "unknown")
		return withAll(e, listedNames("unknown_fields", unknown))
	}
	missing := jsonwire.Missing(wireRequestFields, m)
	_, hasEvents := m["events"]
	_, hasObject := m["events_object"]
	if !hasEvents && !hasObject {
		missing = append(missing, "events")
	}
	if len(missing) > 0 {
		return fieldError("required compaction request fields are missing", missing[0], "required").
			With("missing_fields", jsonwire.StringsToAny(missing))
	}
	if hasEvents && hasObject {
		return fieldError("compaction request is invalid", "events_object", "exclusive").
			With("reason", "events and events_object are mutually exclusive")
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
		if !events.ValidName(id.value) {
			return events.InvalidName(id.field, "compaction request identities are invalid")
		}
	}
	return nil
}

func checkTrigger(r *Request) error {
	if !slices.Contains(events.Triggers(), r.Trigger) {
		return fieldError("compaction trigger is invalid", "trigger", "enum").
			With("value", jsonwire.Echo(r.Trigger)).With("expected", jsonwire.StringsToAny(events.Triggers()))
	}
	return nil
}

// hashRule is what a hash field must look like, as details state it.
const hashRule = "64 lowercase hex digits"

func decodeModelProfile(r *Request, m map[string]any) error {
	r.ModelProfile = events.DecodeModelProfile(m["model_profile"])
	return nil
}

func checkDestination(r *Request) error {
	if !jsonwire.IsHash64(r.DestinationIdentityHash) {
		return fieldError("destination identity hash is invalid", "destination_identity_hash", "pattern").
			With("value", jsonwire.Echo(r.DestinationIdentityHash)).With("expected", hashRule)
	}
	return nil
}

// decodePolicyField reads the policy; an absent or null policy is every
// default.
func decodePolicyField(r *Request, m map[string]any) error {
	raw, ok := m["policy"]
	if !ok || raw == nil {
		r.Policy = events.DefaultPolicy()
		return nil
	}
	p, err := events.DecodePolicy(raw)
	r.Policy = p
	return err
}

func checkPolicy(r *Request) error { return r.Policy.Validate() }

func checkEnabled(r *Request) error {
	if r.Trigger == events.TriggerAuto && !r.Policy.Enabled {
		return fieldError("compaction request is invalid", "policy.enabled", "conflict").
			With("value", false).With("reason", "automatic compaction is disabled by the policy")
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
func TruncateUTF8(s string, limit int) string { return jsonwire.TruncateUTF8(s, limit) }

// invalidField is the generic "compaction request is invalid" failure of
// one field, with the reason in words.
func invalidField(field, rule, reason string) *errcode.Error {
	return fieldError("compaction request is invalid", field, rule).With("reason", reason)
}

func decodeRehydration(r *Request, m map[string]any) error {
	state, err := events.NewRehydrationState(m["rehydration_state"])
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

func decodeAntiThrash(r *Request, m map[string]any) error {
	if raw, ok := m["anti_thrash"]; ok && raw != nil {
		s, err := events.DecodeState(raw)
		if err != nil {
			return err
		}
		r.AntiThrash = s
	}
	return nil
}

func checkState(r *Request) error {
	if err := r.AntiThrash.Validate(); err != nil {
		return err
	}
	if r.NewTokensSinceCompaction != nil && *r.NewTokensSinceCompaction < 0 {
		return errcode.Field(errcode.InvalidState, "new-token count must be non-negative", "new_tokens_since_compaction", "range").
			With("value", *r.NewTokensSinceCompaction)
	}
	return nil
}

func decodeEventsField(r *Request, m map[string]any) error {
	if raw, ok := m["events_object"]; ok {
		name, isString := raw.(string)
		if !isString || !events.ValidName(name) {
			return events.InvalidName("events_object", "events_object must name an object")
		}
		r.EventsObject = name
		return nil
	}
	laneEvents, err := decodeEventList(m["events"])
	r.Events = laneEvents
	return err
}

// decodeEventList converts a decoded JSON array into events, checking shape
// and JSON types only; values are checked by checkEvents.
func decodeEventList(raw any) ([]events.InputEvent, error) {
	list, ok := raw.([]any)
	if !ok {
		return nil, typeError("compaction event sequence is empty or oversized", "events", "array")
	}
	if err := checkEventCount(len(list)); err != nil {
		return nil, err
	}
	laneEvents := make([]events.InputEvent, len(list))
	for i, v := range list {
		e, err := events.DecodeEventFields(v)
		if err != nil {
			return nil, atEvent(i, err)
		}
		laneEvents[i] = e
	}
	return laneEvents, nil
}

// checkEvents validates each event, then the lane rule, which also reads
// the request's own fields.
func checkEvents(r *Request) error {
	if err := checkEventCount(len(r.Events)); err != nil {
		return err
	}
	if err := validateEach(r.Events); err != nil {
		return err
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
func validateEach(laneEvents []events.InputEvent) error {
	for i := range laneEvents {
		if err := laneEvents[i].Validate(); err != nil {
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
		With("value", jsonwire.Echo(value)).With("expected", jsonwire.Echo(expected))
}

// eventPath is the path of an event's field in the request: events[i].field.
func eventPath(i int, field string) string {
	return "events[" + strconv.Itoa(i) + "]." + field
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
		With("value", jsonwire.Echo(id))
}

// countFound marks the ids of found that some event carries and returns
// how many it marked.
func countFound(found map[string]bool, laneEvents []events.InputEvent) int {
	n := 0
	for i := 0; i < len(laneEvents) && n < len(found); i++ {
		if marked, wanted := found[laneEvents[i].EventID]; wanted && !marked {
			found[laneEvents[i].EventID] = true
			n++
		}
	}
	return n
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

func checkOutputTokens(r *Request) error {
	if r.RequestedMaxOutputTokens < 0 {
		return invalidField("requested_max_output_tokens", "range", "requested_max_output_tokens must be a non-negative integer").
			With("value", r.RequestedMaxOutputTokens)
	}
	return nil
}

func checkScope(r *Request) error {
	if r.Scope != nil && (!events.ValidName(r.Scope.Kind) || !events.ValidName(r.Scope.ID)) {
		return events.InvalidName("scope", scopeReason)
	}
	return nil
}

func decodeDeadline(r *Request, m map[string]any) error {
	if raw, ok := m["deadline_at"]; ok && raw != nil {
		s, isString := raw.(string)
		t, err := time.Parse(time.RFC3339Nano, s)
		if !isString || err != nil {
			return invalidField("deadline_at", "format", "deadline_at must be an RFC 3339 time or null")
		}
		r.DeadlineAt = &t
	}
	return nil
}

// scopeReason is the reason of a scope that is not two names.
const scopeReason = "scope must be {\"kind\": string, \"id\": string}"

// accountingMembers are the members of accounting read by their tags;
// category_bytes is read after them by decodeCategories.
var (
	accountingFields  = jsonwire.Keys(reflect.TypeFor[events.Accounting]())
	accountingMembers = slices.DeleteFunc(jsonwire.Fields(reflect.TypeFor[events.Accounting]()),
		func(f jsonwire.Field) bool { return f.Name == "category_bytes" })
)

func decodeAccounting(r *Request, m map[string]any) error {
	raw, ok := m["accounting"]
	if !ok || raw == nil {
		return nil
	}
	a, isMap := raw.(map[string]any)
	if !isMap {
		return invalidField("accounting", "type", "accounting must be an object")
	}
	if unknown := jsonwire.UnknownKeys(a, accountingFields); len(unknown) > 0 {
		return withAll(invalidField("accounting", "unknown", "unknown accounting fields"), listedNames("fields", unknown))
	}
	err := jsonwire.Read(reflect.ValueOf(&r.Accounting).Elem(), accountingMembers, a, func(f jsonwire.Field, rule string) error {
		return memberError(f, "accounting.", rule)
	})
	if err != nil {
		return err
	}
	r.Accounting.CategoryBytes, err = decodeCategories(a["category_bytes"])
	return err
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
func DecodeEvents(data []byte) ([]events.InputEvent, error) {
	v, err := canonical.Decode(data)
	if err != nil {
		return nil, errcode.Wrap(errcode.InvalidRequest, "compaction events are not JSON", err)
	}
	laneEvents, err := decodeEventList(v)
	if err != nil {
		return nil, err
	}
	if err := validateEach(laneEvents); err != nil {
		return nil, err
	}
	return laneEvents, nil
}
