package events

import (
	"encoding/json"
	"reflect"
	"slices"

	"github.com/cairnhq/cairn/canonical"
	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/jsonwire"
)

// Policy modes.
const (
	ModePortable = "portable"
	ModeNative   = "native"
)

// Policy holds the knobs of one compaction (subjects.md). Ratios are
// fractions of the model's effective input limit; token fields are in the
// budget's units. DefaultPolicy gives the contract's defaults.
type Policy struct {
	// Version of the policy schema; must be 1.
	Version int `json:"version" doc:"the policy schema version, 1" const:"1" default:"1"`
	// Enabled must be true for trigger "auto".
	Enabled bool `json:"enabled" doc:"must be true for trigger auto" default:"true"`
	// Mode is "portable" (Cairn's own summary) or "native" (unsupported).
	Mode string `json:"mode" doc:"portable: Cairn writes the summary; native is not supported (native_compaction_unsupported)" enum:"portable|native" default:"\"portable\""`
	// Model names the summarizing model; informational, 1..200 bytes.
	Model string `json:"model" doc:"names the summarizing model; informational (1..200 bytes)" default:"\"current_task_model\""`
	// TriggerRatio: an auto request compacts at limit × ratio; 0 < r < 1.
	TriggerRatio float64 `json:"trigger_ratio" doc:"an auto request compacts once the lane reaches limit × trigger_ratio" exclusiveMinimum:"0" exclusiveMaximum:"1" default:"0.85"`
	// PruneReleaseRatio: projection alone is enough below limit × ratio; < TriggerRatio.
	PruneReleaseRatio float64 `json:"prune_release_ratio" doc:"projecting tool output alone is enough below limit × prune_release_ratio; < trigger_ratio" exclusiveMinimum:"0" exclusiveMaximum:"1" default:"0.75"`
	// PostCompactionTargetRatio: a summary must bring the request below limit × ratio; ≤ PruneReleaseRatio.
	PostCompactionTargetRatio float64 `json:"post_compaction_target_ratio" doc:"a summary must bring the lane below limit × post_compaction_target_ratio; <= prune_release_ratio" exclusiveMinimum:"0" exclusiveMaximum:"1" default:"0.7"`
	// RecentTailRatio sizes the verbatim tail, clamped to [RecentTailMinTokens, RecentTailMaxTokens].
	RecentTailRatio     float64 `json:"recent_tail_ratio" doc:"sizes the verbatim tail as limit × recent_tail_ratio, clamped to [recent_tail_min_tokens, recent_tail_max_tokens]" exclusiveMinimum:"0" exclusiveMaximum:"1" default:"0.1"`
	RecentTailMinTokens int64   `json:"recent_tail_min_tokens" doc:"the least tokens the verbatim tail keeps" minimum:"1" default:"8000"`
	RecentTailMaxTokens int64   `json:"recent_tail_max_tokens" doc:"the most tokens the verbatim tail keeps; >= recent_tail_min_tokens" minimum:"1" default:"32000"`
	// SummaryOutputRatio sizes the summary's output allowance, clamped to [min, max].
	SummaryOutputRatio     float64 `json:"summary_output_ratio" doc:"sizes the summary's output allowance as limit × summary_output_ratio, clamped to [summary_output_min_tokens, summary_output_max_tokens]" exclusiveMinimum:"0" exclusiveMaximum:"1" default:"0.02"`
	SummaryOutputMinTokens int64   `json:"summary_output_min_tokens" doc:"the least output tokens a summary call may use" minimum:"1" default:"4096"`
	SummaryOutputMaxTokens int64   `json:"summary_output_max_tokens" doc:"the most output tokens a summary call may use; >= summary_output_min_tokens" minimum:"1" default:"16384"`
	// SemanticMaxBytes caps the canonical JSON size of a summary.
	SemanticMaxBytes int64 `json:"semantic_max_bytes" doc:"caps the canonical JSON size of a summary" minimum:"1" default:"131072"`
	// MinimumPruneReclaimTokens is the least a projection-only result must reclaim.
	MinimumPruneReclaimTokens int64 `json:"minimum_prune_reclaim_tokens" doc:"the least a projection-only result must reclaim" minimum:"1" default:"8192"`
	// MinimumTotalReclaimTokens and MinimumTotalReclaimRatio are what a summary must reclaim.
	MinimumTotalReclaimTokens int64   `json:"minimum_total_reclaim_tokens" doc:"with minimum_total_reclaim_ratio, what a summary must reclaim" minimum:"1" default:"8192"`
	MinimumTotalReclaimRatio  float64 `json:"minimum_total_reclaim_ratio" doc:"with minimum_total_reclaim_tokens, what a summary must reclaim, as a share of tokens_before" exclusiveMinimum:"0" exclusiveMaximum:"1" default:"0.15"`
	// MaximumAutoCompactionsPerRootTurn bounds auto compactions between user turns.
	MaximumAutoCompactionsPerRootTurn int64 `json:"maximum_auto_compactions_per_root_turn" doc:"bounds auto compactions between user turns (skipped: automatic_limit)" minimum:"1" default:"3"`
	// MinimumNewTokensBeforeRecompact suppresses auto compaction of a lane that barely grew.
	MinimumNewTokensBeforeRecompact int64 `json:"minimum_new_tokens_before_recompact" doc:"an auto compaction of a lane that grew less than this is skipped (insufficient_new_tokens)" minimum:"1" default:"8192"`
	// MaximumSchemaRepairs is the repair budget shared by all chunks of one compaction.
	MaximumSchemaRepairs int64 `json:"maximum_schema_repairs" doc:"the repair budget shared by all summary calls of one compaction" minimum:"1" default:"1"`
	// MaximumOverflowRetries is carried for the caller; the engine does not read it.
	MaximumOverflowRetries int64 `json:"maximum_overflow_retries" doc:"carried for the caller; Cairn does not read it" minimum:"1" default:"1"`
	// MaximumHierarchicalSummaryCalls bounds the number of chunks (summary calls without repairs).
	MaximumHierarchicalSummaryCalls int64 `json:"maximum_hierarchical_summary_calls" doc:"bounds the number of chunks summarized (summary calls without repairs)" minimum:"1" default:"3"`
	// ProviderTimeoutMS is advisory data for the Summarizer; the engine does not read it.
	ProviderTimeoutMS int64 `json:"provider_timeout_ms" doc:"advisory time limit of one summary call, in milliseconds" minimum:"1" default:"300000"`
}

// DefaultPolicy returns the contract's default policy.
func DefaultPolicy() Policy {
	return Policy{
		Version:                           1,
		Enabled:                           true,
		Mode:                              ModePortable,
		Model:                             "current_task_model",
		TriggerRatio:                      0.85,
		PruneReleaseRatio:                 0.75,
		PostCompactionTargetRatio:         0.70,
		RecentTailRatio:                   0.10,
		RecentTailMinTokens:               8_000,
		RecentTailMaxTokens:               32_000,
		SummaryOutputRatio:                0.02,
		SummaryOutputMinTokens:            4_096,
		SummaryOutputMaxTokens:            16_384,
		SemanticMaxBytes:                  131_072,
		MinimumPruneReclaimTokens:         8_192,
		MinimumTotalReclaimTokens:         8_192,
		MinimumTotalReclaimRatio:          0.15,
		MaximumAutoCompactionsPerRootTurn: 3,
		MinimumNewTokensBeforeRecompact:   8_192,
		MaximumSchemaRepairs:              1,
		MaximumOverflowRetries:            1,
		MaximumHierarchicalSummaryCalls:   3,
		ProviderTimeoutMS:                 300_000,
	}
}

// policyFieldError is an invalid_compaction_policy naming the field (as its
// path in the request, "policy.<name>"), the rule it broke (a token of
// errcode.Rules), what the field must hold, in words, and the value.
func policyFieldError(message, name, rule, expected string, value any) *errcode.Error {
	return errcode.WithDetails(errcode.InvalidPolicy, message, map[string]any{
		"field": "policy." + name, "rule": rule, "expected": expected, "value": jsonwire.Echo(value),
	})
}

const (
	ratioBounds    = "a number with 0 < value < 1"
	positiveBounds = "an integer > 0"
	modeValues     = `"portable" or "native"`
	modelBounds    = "a string of 1..200 bytes"
)

// Validate checks the policy in the contract's order (version, enabled, mode,
// model, ratios, ranges, counts). Errors are invalid_compaction_policy.
func (p Policy) Validate() error {
	switch {
	case p.Version != 1:
		return policyFieldError("compaction policy is invalid", "version", "enum", "1", p.Version)
	case p.Mode != ModePortable && p.Mode != ModeNative:
		return policyFieldError("invalid mode", "mode", "enum", modeValues, p.Mode)
	case !isID(p.Model):
		return policyFieldError("invalid model", "model", "range", modelBounds, p.Model)
	}
	if err := p.checkRatios(); err != nil {
		return err
	}
	switch {
	case p.RecentTailMaxTokens < p.RecentTailMinTokens:
		return policyFieldError("compaction ranges are invalid", "recent_tail_max_tokens", "order",
			"recent_tail_max_tokens >= recent_tail_min_tokens", p.RecentTailMaxTokens)
	case p.SummaryOutputMaxTokens < p.SummaryOutputMinTokens:
		return policyFieldError("compaction ranges are invalid", "summary_output_max_tokens", "order",
			"summary_output_max_tokens >= summary_output_min_tokens", p.SummaryOutputMaxTokens)
	}
	for _, n := range p.counts() {
		if *n.value <= 0 {
			return policyFieldError("compaction limits must be positive integers", n.name, "range", positiveBounds, *n.value)
		}
	}
	return nil
}

// checkRatios checks each ratio's range, then their order.
func (p Policy) checkRatios() error {
	const message = "compaction ratios are invalid"
	for _, r := range p.ratios() {
		if !(*r.value > 0 && *r.value < 1) {
			return policyFieldError(message, r.name, "range", ratioBounds, *r.value)
		}
	}
	switch {
	case p.PruneReleaseRatio >= p.TriggerRatio:
		return policyFieldError(message, "prune_release_ratio", "order", "prune_release_ratio < trigger_ratio", p.PruneReleaseRatio)
	case p.PostCompactionTargetRatio > p.PruneReleaseRatio:
		return policyFieldError(message, "post_compaction_target_ratio", "order",
			"post_compaction_target_ratio <= prune_release_ratio", p.PostCompactionTargetRatio)
	}
	return nil
}

// policyNumber is a number field of a Policy: its wire name and where it is.
type policyNumber[T int64 | float64] struct {
	name  string
	value *T
}

// numbersOf returns p's fields of type T (int64: its counts, float64: its
// ratios) with their wire names, in field order.
func numbersOf[T int64 | float64](p *Policy, fields []jsonwire.Field) []policyNumber[T] {
	v := reflect.ValueOf(p).Elem()
	out := make([]policyNumber[T], len(fields))
	for i, f := range fields {
		out[i] = policyNumber[T]{f.Name, v.FieldByIndex(f.Index).Addr().Interface().(*T)}
	}
	return out
}

// policyCounts and policyRatios are Policy's int64 and float64 fields,
// found once when the package loads: the fields of a type do not change,
// and a policy is validated twice per request.
var policyCounts, policyRatios = fieldsOfType[int64](), fieldsOfType[float64]()

func fieldsOfType[T any]() []jsonwire.Field {
	var out []jsonwire.Field
	for _, f := range jsonwire.Fields(reflect.TypeFor[Policy]()) {
		if f.Type == reflect.TypeFor[T]() {
			out = append(out, f)
		}
	}
	return out
}

func (p *Policy) counts() []policyNumber[int64]   { return numbersOf[int64](p, policyCounts) }
func (p *Policy) ratios() []policyNumber[float64] { return numbersOf[float64](p, policyRatios) }

var policyFields = jsonwire.Keys(reflect.TypeFor[Policy]())

// DecodePolicy overlays a decoded JSON object (possibly partial) on the
// defaults and validates the result. Every error is invalid_compaction_policy.
func DecodePolicy(v any) (Policy, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return Policy{}, errcode.Field(errcode.InvalidPolicy, "policy must be a map", "policy", "type").With("expected", "object")
	}
	if unknown := jsonwire.UnknownKeys(m, policyFields); len(unknown) > 0 {
		return Policy{}, errcode.Field(errcode.InvalidPolicy, "unknown policy fields",
			"policy."+jsonwire.TruncateUTF8(unknown[0], maxListedNameSize), "unknown").With("fields", jsonwire.StringsToAny(unknown))
	}
	p := DefaultPolicy()
	if err := p.overlay(m); err != nil {
		return Policy{}, err
	}
	return p, p.Validate()
}

// overlay copies the present fields of m into p, checking JSON types in the
// validation order so a type error reports the check it belongs to.
func (p *Policy) overlay(m map[string]any) error {
	if raw, ok := m["version"]; ok {
		f, isNum := canonical.Float(raw)
		if !isNum || f != 1 { // 1.0 is accepted like 1
			rule := "enum"
			if !isNum {
				rule = "type"
			}
			return policyFieldError("compaction policy is invalid", "version", rule, "1", raw)
		}
	}
	return jsonwire.Read(reflect.ValueOf(p).Elem(), policyMembers, m, func(f jsonwire.Field, rule string) error {
		message, expected := policyTypeFailure(f)
		return policyFieldError(message, f.Name, rule, expected, m[f.Name])
	})
}

// policyMembers are the members overlay reads by their types after the
// version, in the validation order: enabled, mode, model, the ratios, the
// counts.
var policyMembers = slices.Concat(jsonwire.Select(jsonwire.Fields(reflect.TypeFor[Policy]()), "enabled", "mode", "model"),
	policyRatios, policyCounts)

// policyTypeFailure is the message and the expected value of a policy
// member of the wrong type.
func policyTypeFailure(f jsonwire.Field) (message, expected string) {
	switch {
	case f.Type == reflect.TypeFor[float64]():
		return "compaction ratios are invalid", ratioBounds
	case f.Type == reflect.TypeFor[int64]():
		return "compaction limits must be positive integers", positiveBounds
	case f.Name == "mode":
		return "invalid mode", modeValues
	case f.Name == "model":
		return "invalid model", modelBounds
	}
	return "compaction policy is invalid", "a boolean"
}

// UnmarshalJSON decodes a persisted or partial policy over the defaults,
// rejecting duplicate and unknown keys.
func (p *Policy) UnmarshalJSON(data []byte) error {
	v, err := canonical.Decode(data)
	if err != nil {
		return errcode.Wrap(errcode.InvalidPolicy, "policy has duplicate fields or is not JSON", err)
	}
	decoded, err := DecodePolicy(v)
	if err != nil {
		return err
	}
	*p = decoded
	return nil
}

var _ json.Unmarshaler = (*Policy)(nil)
