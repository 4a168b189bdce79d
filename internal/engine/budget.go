package engine

import (
	"math"
	"math/bits"

	"github.com/cairnhq/cairn/events"
	"github.com/cairnhq/cairn/jsonwire"

	"github.com/cairnhq/cairn/errcode"
)

// categoryResidual receives the tokens that integer allocation leaves over.
const categoryResidual = "provider_overhead"

const reportedUsageMessage = "reported usage must be a non-negative integer"

// categoryField is the request field that holds the category byte counts.
const categoryField = "accounting.category_bytes"

// budgetError is an invalid_context_budget naming the field and the rule.
func budgetError(message, field, rule string) *errcode.Error {
	return errcode.Field(errcode.InvalidContextBudget, message, field, rule)
}

// categoryError names the category whose byte count is not a
// non-negative integer.
func categoryError(name, rule string, value any) *errcode.Error {
	return budgetError("category costs must be non-negative integers", categoryField+"."+name, rule).
		With("value", jsonwire.Echo(value))
}

// BudgetOptions are the inputs of a ContextBudget besides profile and request.
type BudgetOptions struct {
	// TriggerRatio, 0 < r < 1; zero means the default 0.85.
	TriggerRatio             float64
	Categories               map[string]int64
	RequestedMaxOutputTokens int64
	// AccountingMethod: local_tokenizer_v1 counts the request with the
	// profile's tokenizer; "" (no method given) does too when the profile
	// names a tokenizer; anything else is conservative_utf8.
	AccountingMethod string
	// ReportedInputTokens is the provider's input count for exactly this
	// request; it only ever raises a v1 estimate (a floor).
	ReportedInputTokens int64
	// ReportedUsageBaseline and ComponentDescriptors enable v2 delta
	// accounting when both are valid (subjects.md, Token accounting);
	// decoded JSON values.
	ReportedUsageBaseline any
	ComponentDescriptors  any
	ProfileHash           *string

	// views and counts, set by the engine for its own canonical renderings,
	// let the local count reuse event views' counts (countRendering).
	views  []viewSpan
	counts *viewCounts
}

// ContextBudget is the measured size of one provider request against the
// model's window (subjects.md, Token accounting).
type ContextBudget struct {
	EffectiveInputLimit int64   `json:"effective_input_limit"`
	EstimatedTokens     int64   `json:"estimated_tokens"`
	TriggerTokens       int64   `json:"trigger_tokens"`
	FreeTokens          int64   `json:"free_tokens"`
	Method              string  `json:"method"`
	Version             int64   `json:"version"`
	ProfileHash         *string `json:"profile_hash"`
	BaselineInputTokens *int64  `json:"baseline_input_tokens"`
	DeltaTokens         *int64  `json:"delta_tokens"`
	// Counter names the count the estimate stands on: utf8_bytes, an
	// encoding (o200k_base, cl100k_base, p50k_base, r50k_base), approx_v1
	// or reported_usage.
	Counter       string           `json:"counter"`
	CategoryBytes map[string]int64 `json:"category_bytes"`
	Categories    map[string]int64 `json:"categories"`
}

// NewContextBudget measures rendered (the exact provider request bytes).
func NewContextBudget(p events.ModelProfile, rendered []byte, o BudgetOptions) (*ContextBudget, error) {
	return newBudget(p, int64(len(rendered)), rendered, o)
}

// newBudget measures a request of size bytes. text is the request itself when
// known; without it the local tokenizer cannot count and the estimate falls
// back to conservative bytes.
func newBudget(p events.ModelProfile, size int64, text []byte, o BudgetOptions) (*ContextBudget, error) {
	if size < 0 {
		return nil, errcode.Field(errcode.InvalidRenderedRequest, "rendered request must be binary",
			"rendered_request_bytes", "range").With("value", size)
	}
	limit, err := p.EffectiveInputLimit(o.RequestedMaxOutputTokens)
	if err != nil {
		return nil, err
	}
	ratio := o.TriggerRatio
	if ratio == 0 {
		ratio = 0.85
	}
	if !(ratio > 0 && ratio < 1) {
		return nil, budgetError("trigger ratio must be between zero and one", "policy.trigger_ratio", "range").
			With("value", ratio)
	}
	categoryTotal, err := sumCategories(o.Categories)
	if err != nil {
		return nil, err
	}
	if o.ReportedInputTokens < 0 {
		return nil, budgetError(reportedUsageMessage, "accounting.reported_input_tokens", "range").
			With("value", o.ReportedInputTokens)
	}
	b := &ContextBudget{EffectiveInputLimit: limit, Version: 1, ProfileHash: o.ProfileHash, CategoryBytes: copyCategories(o.Categories)}
	b.Method, b.Counter, b.EstimatedTokens = localEstimate(p, size, text, categoryTotal, o)
	if baseline, delta, ok := deltaV2(o.ReportedUsageBaseline, o.ComponentDescriptors); ok {
		b.Method, b.Version, b.Counter = events.MethodReportedUsageDeltaV2, 2, CounterReportedUsage
		b.BaselineInputTokens, b.DeltaTokens = ptr(baseline), ptr(delta)
		b.EstimatedTokens = saturatingAdd(baseline, delta)
	} else {
		b.EstimatedTokens = max(b.EstimatedTokens, o.ReportedInputTokens)
	}
	b.TriggerTokens = max(floorRatio(limit, ratio), 1)
	b.FreeTokens = max(limit-b.EstimatedTokens, 0)
	b.Categories = allocateCategories(b.EstimatedTokens, o.Categories, categoryTotal)
	return b, nil
}

func sumCategories(c map[string]int64) (int64, error) {
	var total int64
	for k, n := range c {
		if n < 0 || total > math.MaxInt64-n {
			return 0, categoryError(k, "range", n)
		}
		total += n
	}
	return total, nil
}

func copyCategories(c map[string]int64) map[string]int64 {
	out := make(map[string]int64, len(c))
	for k, v := range c {
		out[k] = v
	}
	return out
}

// localEstimate is the local estimate of subjects.md, Token accounting:
// the tokenizer path when asked for and possible, else the conservative
// byte count. A profile that names a tokenizer asks for it unless the
// request names another method: a tokenizer is only ever named to be
// counted with. Without a tokenizer the
// byte count stays, since it is the one bound that holds for every model
// (a byte-level BPE token is at least one byte).
func localEstimate(p events.ModelProfile, size int64, text []byte, categoryTotal int64, o BudgetOptions) (method, counterName string, estimate int64) {
	wanted := o.AccountingMethod == events.MethodLocalTokenizer || o.AccountingMethod == "" && p.Tokenizer != nil
	if wanted && p.Tokenizer != nil && text != nil && int64(len(text)) == size {
		if c, ok := counterFor(*p.Tokenizer); ok {
			count := countRendering(c, text, o.views, o.counts)
			// 10 % margin plus a 256-token protocol reserve.
			return events.MethodLocalTokenizer, c.name, (count*11+9)/10 + 256
		}
	}
	return events.MethodConservativeUTF8, CounterUTF8Bytes, max(size, categoryTotal)
}

func saturatingAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// allocateCategories splits total tokens over categories in proportion to
// their bytes; the integer remainder goes to provider_overhead, so the result
// always sums to total. With no bytes at all everything is overhead.
func allocateCategories(total int64, categories map[string]int64, byteTotal int64) map[string]int64 {
	out := map[string]int64{}
	var allocated int64
	if byteTotal > 0 {
		for k, b := range categories {
			hi, lo := bits.Mul64(uint64(total), uint64(b))
			share, _ := bits.Div64(hi, lo, uint64(byteTotal)) // share ≤ total since b ≤ byteTotal
			out[k] = int64(share)
			allocated += int64(share)
		}
	}
	out[categoryResidual] += total - allocated
	return out
}

// floorRatio is floor(limit × ratio) as the contract computes it.
func floorRatio(limit int64, ratio float64) int64 {
	return int64(math.Floor(float64(limit) * ratio))
}

// ptr returns a pointer to a copy of v.
func ptr[T any](v T) *T { return &v }
