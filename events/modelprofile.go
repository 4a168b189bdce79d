package events

import (
	"math"

	"github.com/cairnhq/cairn/canonical"
	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/jsonwire"
)

// Context limit kinds of a model profile.
const (
	LimitSeparateInput     = "separate_input"
	LimitSharedInputOutput = "shared_input_output"
)

// ModelProfile is the part of a model's profile that compaction reads
// (docs/request.md, "The budget"). An empty ContextLimitKind means
// separate_input.
type ModelProfile struct {
	ContextLimitKind       string  `json:"context_limit_kind,omitempty" doc:"whether output tokens share the input window" enum:"separate_input|shared_input_output"`
	MaxInputTokens         *int64  `json:"max_input_tokens,omitempty" doc:"the model's input window (separate_input)"`
	MaxContextTokens       *int64  `json:"max_context_tokens,omitempty" doc:"the model's whole window (shared_input_output)"`
	MaxOutputTokens        *int64  `json:"max_output_tokens,omitempty" doc:"the most tokens the model writes in one answer"`
	ProviderReservedTokens *int64  `json:"provider_reserved_tokens,omitempty" doc:"tokens the provider keeps for itself"` // nil means 0
	Tokenizer              *string `json:"tokenizer,omitempty" doc:"the tokenizer that counts this model's tokens; absent means UTF-8 bytes (conservative_utf8)"`
	// problem, when set by DecodeModelProfile, is the first field with the
	// wrong JSON type; the budget fails closed with it.
	problem *limitProblem
}

// limitProblem is an unknown_context_limit failure found while decoding a
// profile, kept until a budget needs the limit.
type limitProblem struct {
	message, field, rule string
}

const (
	limitSemanticsUnknown = "model context limit semantics are unknown"
	limitUnavailable      = "model context limit is unavailable"
)

var profileNumberFields = []string{"max_input_tokens", "max_context_tokens", "max_output_tokens", "provider_reserved_tokens"}

// DecodeModelProfile reads a decoded JSON profile object. It never fails:
// values the budget cannot use (a non-object profile, a non-string kind,
// non-integer or null limits, a tokenizer that is not a string) make every
// later budget fail closed with unknown_context_limit, in the order the
// contract checks them. Other keys
// (capabilities compaction does not read) are ignored.
func DecodeModelProfile(v any) ModelProfile {
	m, ok := v.(map[string]any)
	if !ok {
		return ModelProfile{problem: &limitProblem{limitSemanticsUnknown, "model_profile", "type"}}
	}
	var p ModelProfile
	if raw, present := m["context_limit_kind"]; present {
		kind, isString := raw.(string)
		if !isString {
			return ModelProfile{problem: &limitProblem{limitSemanticsUnknown, "model_profile.context_limit_kind", "type"}}
		}
		p.ContextLimitKind = kind
	}
	targets := []**int64{&p.MaxInputTokens, &p.MaxContextTokens, &p.MaxOutputTokens, &p.ProviderReservedTokens}
	for i, name := range profileNumberFields {
		raw, present := m[name]
		if !present {
			continue
		}
		n, isInt := canonical.Int(raw)
		if !isInt {
			// max_input/max_context may be null (unset); a null reservation
			// is not replaced by the default 0.
			if raw == nil && name != "provider_reserved_tokens" {
				continue
			}
			if p.problem == nil {
				p.problem = &limitProblem{limitUnavailable, "model_profile." + name, "type"}
			}
			continue
		}
		*targets[i] = &n
	}
	switch t := m["tokenizer"].(type) {
	case nil:
	case string:
		if t != "" {
			p.Tokenizer = &t
		}
	default:
		if p.problem == nil {
			p.problem = &limitProblem{limitSemanticsUnknown, "model_profile.tokenizer", "type"}
		}
	}
	return p
}

// limitError is an unknown_context_limit naming the profile field and the
// rule it broke.
func limitError(message, field, rule string) *errcode.Error {
	return errcode.Field(errcode.UnknownContextLimit, message, field, rule)
}

// kinds lists the valid context limit kinds, as a failure's details state them.
var kinds = []string{LimitSeparateInput, LimitSharedInputOutput}

// EffectiveInputLimit returns the input window compaction works against
// (docs/request.md, "The budget"); every failure is unknown_context_limit.
func (p ModelProfile) EffectiveInputLimit(requestedMaxOutputTokens int64) (int64, error) {
	kind := p.ContextLimitKind
	if kind == "" {
		kind = LimitSeparateInput
	}
	if pr := p.problem; pr != nil && pr.message == limitSemanticsUnknown {
		return 0, limitError(pr.message, pr.field, pr.rule)
	}
	if kind != LimitSeparateInput && kind != LimitSharedInputOutput {
		return 0, limitError(limitSemanticsUnknown, "model_profile.context_limit_kind", "enum").
			With("value", jsonwire.Echo(kind)).With("expected", jsonwire.StringsToAny(kinds))
	}
	if pr := p.problem; pr != nil {
		return 0, limitError(pr.message, pr.field, pr.rule)
	}
	var reserved int64
	if p.ProviderReservedTokens != nil {
		reserved = *p.ProviderReservedTokens
	}
	if reserved < 0 {
		return 0, limitError(limitUnavailable, "model_profile.provider_reserved_tokens", "range").With("value", reserved)
	}
	if kind == LimitSeparateInput {
		return separateInputLimit(p.MaxInputTokens, reserved)
	}
	return sharedLimit(p.MaxContextTokens, reserved, requestedMaxOutputTokens)
}

// separateInputLimit is the input window of a separate_input profile: its
// max_input_tokens less the provider's reservation.
func separateInputLimit(maxInput *int64, reserved int64) (int64, error) {
	const field = "model_profile.max_input_tokens"
	if maxInput == nil {
		return 0, limitError(limitUnavailable, field, "required")
	}
	if *maxInput <= reserved {
		return 0, limitError(limitUnavailable, field, "range").
			With("value", *maxInput).With("min_exclusive", reserved)
	}
	return *maxInput - reserved, nil
}

// sharedLimit is the input window of a shared_input_output profile: its
// max_context_tokens less the reservation and the requested output.
func sharedLimit(maxContext *int64, reserved, output int64) (int64, error) {
	const field = "model_profile.max_context_tokens"
	switch {
	case output < 0:
		return 0, limitError(limitUnavailable, "requested_max_output_tokens", "range").With("value", output)
	case maxContext == nil:
		return 0, limitError(limitUnavailable, field, "required")
	case output > math.MaxInt64-reserved || *maxContext <= reserved+output:
		return 0, limitError(limitUnavailable, field, "range").
			With("value", *maxContext).With("provider_reserved_tokens", reserved).With("requested_max_output_tokens", output)
	}
	return *maxContext - reserved - output, nil
}
