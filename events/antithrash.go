package events

import (
	"cmp"
	"encoding/json"
	"reflect"
	"slices"

	"github.com/cairnhq/cairn/canonical"
	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/jsonwire"
)

// Accounting methods (Checkpoint.AccountingMethod, AntiThrash.AccountingMethod).
const (
	MethodConservativeUTF8     = "conservative_utf8"
	MethodLocalTokenizer       = "local_tokenizer_v1"
	MethodReportedUsageDeltaV2 = "reported_usage_delta_v2"
)

func isTrigger(s string) bool {
	return slices.Contains(Triggers(), s)
}

// methods lists the accounting methods, as a failure's details state them.
var methods = []string{MethodConservativeUTF8, MethodLocalTokenizer, MethodReportedUsageDeltaV2}

func isMethod(s string) bool {
	return s == MethodConservativeUTF8 || s == MethodLocalTokenizer || s == MethodReportedUsageDeltaV2
}

// AntiThrash is a lane's automatic-compaction state (Request.AntiThrash).
// Cairn keeps it in the lane head; `processor compact` reads it from a
// request. It is a value: every operation returns a new AntiThrash. The
// zero value is the state of a new lane.
type AntiThrash struct {
	SuccessfulAutoCompactions         int64   `json:"successful_auto_compactions" doc:"auto compactions since the last user turn" minimum:"0"`
	LastCompactionLaneEventOrdinal    *int64  `json:"last_compaction_lane_event_ordinal" doc:"the lane ordinal the last compaction reached, or null"`
	LastCompactionTokensAfter         *int64  `json:"last_compaction_tokens_after" doc:"tokens_after of the last compaction, or null"`
	NewTokensSinceCompaction          int64   `json:"new_tokens_since_compaction" doc:"tokens added since the last compaction" minimum:"0"`
	OverflowRetryUsed                 bool    `json:"overflow_retry_used" doc:"an overflow compaction already ran in this turn"`
	ConsecutiveIneffectiveCompactions int64   `json:"consecutive_ineffective_compactions" doc:"compactions in a row that reclaimed too little" minimum:"0"`
	CancellationPending               bool    `json:"cancellation_pending" doc:"a cancellation is pending: auto requests are skipped (cancellation_pending)"`
	AccountingMethod                  *string `json:"accounting_method" doc:"the units of the token numbers, or null" enum:"conservative_utf8|local_tokenizer_v1|reported_usage_delta_v2" invalid:"compaction state accounting method is invalid"`
	AccountingVersion                 *int64  `json:"accounting_version" doc:"the accounting version, > 0, or null"`
	AccountingProfileHash             *string `json:"accounting_profile_hash" doc:"the tokenizer profile hash, or null" pattern:"^[0-9a-f]{64}$"`
}

// AccountingIdentity names the units a lane's token numbers are in.
type AccountingIdentity struct {
	Method      string
	Version     int64
	ProfileHash *string
}

func stateError(message string) *errcode.Error { return errcode.New(errcode.InvalidState, message) }

// stateFieldError is an invalid_compaction_state naming the field and the
// rule it broke.
func stateFieldError(message, field, rule string) *errcode.Error {
	return errcode.Field(errcode.InvalidState, message, field, rule)
}

// stateField is the path of a state field in the request, where the state
// is anti_thrash.
func stateField(name string) string { return "anti_thrash." + name }

func (id AccountingIdentity) valid() bool {
	return isMethod(id.Method) && id.Version > 0 && (id.ProfileHash == nil || jsonwire.IsHash64(*id.ProfileHash))
}

// Validate checks field bounds and the accounting triple. Errors are
// invalid_compaction_state.
func (s AntiThrash) Validate() error {
	counts := []struct {
		name  string
		value *int64
	}{
		{"successful_auto_compactions", &s.SuccessfulAutoCompactions},
		{"new_tokens_since_compaction", &s.NewTokensSinceCompaction},
		{"consecutive_ineffective_compactions", &s.ConsecutiveIneffectiveCompactions},
		{"last_compaction_lane_event_ordinal", s.LastCompactionLaneEventOrdinal},
		{"last_compaction_tokens_after", s.LastCompactionTokensAfter},
	}
	for _, c := range counts {
		if c.value != nil && *c.value < 0 {
			return stateFieldError("compaction state is invalid", stateField(c.name), "range").With("value", *c.value)
		}
	}
	if s.AccountingMethod == nil && s.AccountingVersion == nil && s.AccountingProfileHash == nil {
		return nil
	}
	if s.AccountingMethod == nil || !isMethod(*s.AccountingMethod) {
		e := stateFieldError("compaction state accounting method is invalid", stateField("accounting_method"), "enum")
		if s.AccountingMethod == nil {
			e.Details["rule"] = "required"
		}
		return e.With("expected", jsonwire.StringsToAny(methods))
	}
	switch {
	case s.AccountingVersion == nil:
		return stateFieldError("compaction state is invalid", stateField("accounting_version"), "required")
	case *s.AccountingVersion <= 0:
		return stateFieldError("compaction state is invalid", stateField("accounting_version"), "range").
			With("value", *s.AccountingVersion)
	case s.AccountingProfileHash != nil && !jsonwire.IsHash64(*s.AccountingProfileHash):
		return stateFieldError("compaction state is invalid", stateField("accounting_profile_hash"), "pattern").
			With("value", jsonwire.Echo(*s.AccountingProfileHash)).With("expected", hashRule)
	}
	return nil
}

// AutoSuppression returns the first reason an automatic compaction must not
// run, or "" if none applies.
func (s AntiThrash) AutoSuppression(p Policy) string {
	switch {
	case s.CancellationPending:
		return SkipCancellationPending
	case s.SuccessfulAutoCompactions >= p.MaximumAutoCompactionsPerRootTurn:
		return SkipAutomaticLimit
	case s.LastCompactionLaneEventOrdinal != nil && s.NewTokensSinceCompaction < p.MinimumNewTokensBeforeRecompact:
		return SkipInsufficientNewTokens
	case s.ConsecutiveIneffectiveCompactions > 0 && s.NewTokensSinceCompaction == 0:
		return SkipRapidRefill
	}
	return ""
}

// ObserveNewTokens replaces (does not add to) the count of tokens the lane
// gained since its last compaction.
func (s AntiThrash) ObserveNewTokens(n int64) (AntiThrash, error) {
	if n < 0 {
		return s, stateFieldError("new-token count must be non-negative", "new_tokens_since_compaction", "range").With("value", n)
	}
	s.NewTokensSinceCompaction = n
	return s, nil
}

// RebaseAccounting moves the state to a new accounting identity. When the
// identity differs from the stored one, the unit-dependent fields are reset;
// counters that do not depend on units are kept.
func (s AntiThrash) RebaseAccounting(id AccountingIdentity) (AntiThrash, error) {
	if !id.valid() {
		// The method and version are the engine's own; the profile hash
		// is the request's.
		return s, stateFieldError("accounting identity is invalid", "accounting.profile_hash", "pattern").
			With("value", jsonwire.Echo(stringOrNil(id.ProfileHash))).With("expected", hashRule)
	}
	if s.sameIdentity(id) {
		return s, nil
	}
	s.LastCompactionLaneEventOrdinal = nil
	s.LastCompactionTokensAfter = nil
	s.NewTokensSinceCompaction = 0
	s.ConsecutiveIneffectiveCompactions = 0
	s.AccountingMethod = new(id.Method)
	s.AccountingVersion = new(id.Version)
	s.AccountingProfileHash = nil
	if id.ProfileHash != nil {
		s.AccountingProfileHash = new(*id.ProfileHash)
	}
	return s, nil
}

func (s AntiThrash) sameIdentity(id AccountingIdentity) bool {
	if s.AccountingMethod == nil || *s.AccountingMethod != id.Method ||
		s.AccountingVersion == nil || *s.AccountingVersion != id.Version {
		return false
	}
	if s.AccountingProfileHash == nil || id.ProfileHash == nil {
		return s.AccountingProfileHash == nil && id.ProfileHash == nil
	}
	return *s.AccountingProfileHash == *id.ProfileHash
}

// StartRootTurn returns the state for a new root turn: the counts that are
// per root turn (automatic compactions, the overflow retry) start again.
func (s AntiThrash) StartRootTurn() AntiThrash {
	s.SuccessfulAutoCompactions = 0
	s.OverflowRetryUsed = false
	return s
}

// RecordSuccess records a checkpoint that the caller durably activated. Call
// it only after activation.
func (s AntiThrash) RecordSuccess(trigger string, laneOrdinal, tokensAfter int64) (AntiThrash, error) {
	if !isTrigger(trigger) || laneOrdinal < 0 || tokensAfter < 0 {
		return s, stateError("successful compaction evidence is invalid")
	}
	if trigger == TriggerAuto {
		s.SuccessfulAutoCompactions++
	}
	s.LastCompactionLaneEventOrdinal = new(laneOrdinal)
	s.LastCompactionTokensAfter = new(tokensAfter)
	s.NewTokensSinceCompaction = 0
	s.OverflowRetryUsed = s.OverflowRetryUsed || trigger == TriggerOverflow
	s.ConsecutiveIneffectiveCompactions = 0
	return s, nil
}

// stateMembers are AntiThrash's members in the order DecodeState reads
// them, the first of the wrong type failing: the counters and flags, then
// the accounting identity.
var (
	stateFields  = jsonwire.Keys(reflect.TypeFor[AntiThrash]())
	stateMembers = jsonwire.Select(jsonwire.Fields(reflect.TypeFor[AntiThrash]()),
		"successful_auto_compactions", "new_tokens_since_compaction", "consecutive_ineffective_compactions",
		"last_compaction_lane_event_ordinal", "last_compaction_tokens_after", "overflow_retry_used",
		"cancellation_pending", "accounting_method", "accounting_version", "accounting_profile_hash")
)

// DecodeState builds an AntiThrash from its persisted JSON object (string method
// names; nulls for absent values) and validates it. Absent fields take their
// defaults. Every error is invalid_compaction_state.
func DecodeState(v any) (AntiThrash, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return AntiThrash{}, stateFieldError("compaction state must be a map", "anti_thrash", "type").With("expected", "object")
	}
	if unknown := jsonwire.UnknownKeys(m, stateFields); len(unknown) > 0 {
		return AntiThrash{}, stateFieldError("compaction state has unknown fields", "anti_thrash", "unknown").
			With("fields", jsonwire.StringsToAny(unknown))
	}
	var s AntiThrash
	err := jsonwire.Read(reflect.ValueOf(&s).Elem(), stateMembers, m, func(f jsonwire.Field, rule string) error {
		return stateFieldError(cmp.Or(f.Tag.Get("invalid"), "compaction state is invalid"), stateField(f.Name), rule)
	})
	if err != nil {
		return AntiThrash{}, err
	}
	return s, s.Validate()
}

// plainState is AntiThrash without its methods, for encoding/json to encode
// by the json tags.
type plainState AntiThrash

// MarshalJSON writes the persisted form (the json tags; nulls for unset
// values) canonically.
func (s AntiThrash) MarshalJSON() ([]byte, error) { return canonicalJSON(plainState(s)) }

// UnmarshalJSON reads the persisted form, rejecting duplicate and unknown keys.
func (s *AntiThrash) UnmarshalJSON(data []byte) error {
	v, err := canonical.Decode(data)
	if err != nil {
		return errcode.Wrap(errcode.InvalidState, "compaction state has duplicate fields or is not JSON", err)
	}
	decoded, err := DecodeState(v)
	if err != nil {
		return err
	}
	*s = decoded
	return nil
}

var (
	_ json.Marshaler   = AntiThrash{}
	_ json.Unmarshaler = (*AntiThrash)(nil)
)

// maxRehydrationBytes bounds the canonical encoding of a rehydration state.
const maxRehydrationBytes = 1 << 20

// RehydrationState is exact continuation data (todo revisions, workspace
// revisions) that the checkpoint carries verbatim (subjects.md).
type RehydrationState struct {
	Data map[string]any
	Hash string
}

// rehydrationError is an invalid_rehydration_state of the request's
// rehydration_state, with the rule it broke.
func rehydrationError(message, rule string) *errcode.Error {
	return errcode.Field(errcode.InvalidRehydrationState, message, "rehydration_state", rule)
}

// NewRehydrationState hashes raw data and validates it. Errors are
// invalid_rehydration_state.
func NewRehydrationState(data any) (RehydrationState, error) {
	m, ok := data.(map[string]any)
	if !ok {
		return RehydrationState{}, rehydrationError("rehydration state must be a map", "type").With("expected", "object")
	}
	hash, err := canonical.Hash(m)
	if err != nil {
		return RehydrationState{}, rehydrationError("rehydration state is invalid", "canonical")
	}
	r := RehydrationState{Data: m, Hash: hash}
	return r, r.Validate()
}

// Validate checks that Data is canonical, at most 1 MiB encoded, and hashes to Hash.
func (r RehydrationState) Validate() error {
	if r.Data == nil {
		return rehydrationError("rehydration state must be a map", "required")
	}
	encoded, err := canonical.Encode(r.Data)
	switch {
	case err != nil:
		return rehydrationError("rehydration state is invalid", "canonical")
	case len(encoded) > maxRehydrationBytes:
		return rehydrationError("rehydration state is invalid", "range").
			With("bytes", int64(len(encoded))).With("limit", int64(maxRehydrationBytes))
	case canonical.HashBytes(encoded) != r.Hash:
		return rehydrationError("rehydration state is invalid", "hash").With("expected", canonical.HashBytes(encoded))
	}
	return nil
}
