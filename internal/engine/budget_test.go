package engine

import (
	"strings"
	"testing"

	"github.com/cairnhq/cairn/events"

	"github.com/cairnhq/cairn/canonical"
	"github.com/cairnhq/cairn/errcode"
)

// Budget conformance cases CB-01..CB-12: limits, ratios, methods and
// category allocation (docs/request.md, "The budget").

func sepProfile(maxInput, reserved int64) events.ModelProfile {
	return events.ModelProfile{MaxInputTokens: ptr(maxInput), ProviderReservedTokens: ptr(reserved)}
}

func TestCB01SeparateAndSharedLimits(t *testing.T) {
	b, err := NewContextBudget(sepProfile(10_000, 100), make([]byte, 2_000), BudgetOptions{})
	if err != nil || b.EffectiveInputLimit != 9_900 || b.EstimatedTokens != 2_000 {
		t.Fatalf("separate: %+v %v", b, err)
	}
	shared := events.ModelProfile{ContextLimitKind: events.LimitSharedInputOutput, MaxContextTokens: ptr(int64(10_000)),
		MaxOutputTokens: ptr(int64(2_000)), ProviderReservedTokens: ptr(int64(100))}
	b, err = NewContextBudget(shared, []byte("x"), BudgetOptions{RequestedMaxOutputTokens: 1_500})
	if err != nil || b.EffectiveInputLimit != 8_400 {
		t.Fatalf("shared: %+v %v", b, err)
	}
	if b.TriggerTokens != 7_140 || b.FreeTokens != 8_399 {
		t.Fatalf("trigger %d free %d", b.TriggerTokens, b.FreeTokens)
	}
}

func TestCB02UnknownLimitSemanticsFailClosed(t *testing.T) {
	_, err := NewContextBudget(events.ModelProfile{ContextLimitKind: "unknown", MaxInputTokens: ptr(int64(10))}, nil, BudgetOptions{})
	wantCode(t, err, errcode.UnknownContextLimit)
	_, err = NewContextBudget(events.DecodeModelProfile("not a map"), nil, BudgetOptions{})
	wantCode(t, err, errcode.UnknownContextLimit)
	_, err = NewContextBudget(events.ModelProfile{}, nil, BudgetOptions{})
	wantCode(t, err, errcode.UnknownContextLimit)
}

func TestCB03InvalidSharedReservationsFailClosed(t *testing.T) {
	shared := map[string]any{"context_limit_kind": "shared_input_output", "max_context_tokens": int64(10_000)}
	_, err := NewContextBudget(events.DecodeModelProfile(shared), nil, BudgetOptions{RequestedMaxOutputTokens: -1})
	wantCode(t, err, errcode.UnknownContextLimit)
	shared["provider_reserved_tokens"] = "100"
	_, err = NewContextBudget(events.DecodeModelProfile(shared), nil, BudgetOptions{})
	wantCode(t, err, errcode.UnknownContextLimit)
	shared["provider_reserved_tokens"] = nil
	_, err = NewContextBudget(events.DecodeModelProfile(shared), nil, BudgetOptions{})
	wantCode(t, err, errcode.UnknownContextLimit)
	delete(shared, "provider_reserved_tokens")
	if _, err := NewContextBudget(events.DecodeModelProfile(shared), nil, BudgetOptions{}); err != nil {
		t.Fatalf("valid shared profile: %v", err)
	}
}

func TestCB04LocalTokenizerMarginReserveAndFloor(t *testing.T) {
	p := sepProfile(10_000, 0)
	p.Tokenizer = ptr("static")
	hash := strings.Repeat("e", 64)
	b, err := NewContextBudget(p, []byte("hello world"), BudgetOptions{
		AccountingMethod: events.MethodLocalTokenizer, ReportedInputTokens: 300, ProfileHash: &hash,
		Categories: map[string]int64{"system": 3, "memory_history": 1},
	})
	if err != nil || b.Method != events.MethodLocalTokenizer || b.EstimatedTokens != 300 || *b.ProfileHash != hash {
		t.Fatalf("%+v %v", b, err)
	}
	if b.CategoryBytes["system"] != 3 || b.CategoryBytes["memory_history"] != 1 {
		t.Fatalf("category bytes %v", b.CategoryBytes)
	}
	if sum(b.Categories) != 300 || b.Categories["memory_history"] <= 0 {
		t.Fatalf("categories %v", b.Categories)
	}
	// Without the floor the estimate is ceil(n × 1.1) + 256.
	b, _ = NewContextBudget(p, []byte("hello world"), BudgetOptions{AccountingMethod: events.MethodLocalTokenizer})
	if n := approxTokens([]byte("hello world")); b.EstimatedTokens != (n*11+9)/10+256 {
		t.Fatalf("estimate %d for %d tokens", b.EstimatedTokens, n)
	}
}

func sum(m map[string]int64) int64 {
	var s int64
	for _, v := range m {
		s += v
	}
	return s
}

func TestCB05UnsupportedLocalAccountingFallsBack(t *testing.T) {
	b, err := NewContextBudget(sepProfile(10_000, 0), []byte("hello"), BudgetOptions{AccountingMethod: events.MethodLocalTokenizer})
	if err != nil || b.Method != events.MethodConservativeUTF8 || b.EstimatedTokens != 5 {
		t.Fatalf("%+v %v", b, err)
	}
}

func TestCB06MissingProviderUsageIsNoFloor(t *testing.T) {
	b, err := NewContextBudget(sepProfile(10_000, 0), []byte("hello"), BudgetOptions{})
	if err != nil || b.EstimatedTokens != 5 || b.Version != 1 {
		t.Fatalf("%+v %v", b, err)
	}
	_, err = NewContextBudget(sepProfile(10_000, 0), []byte("hello"), BudgetOptions{ReportedInputTokens: -1})
	wantCode(t, err, errcode.InvalidContextBudget)
}

func TestCB07ProviderOverheadReceivesTheResidual(t *testing.T) {
	b, err := NewContextBudget(sepProfile(10_000, 0), []byte("request"),
		BudgetOptions{Categories: map[string]int64{"system": 3, "provider_overhead": 4}})
	if err != nil || len(b.Categories) != 2 || sum(b.Categories) != b.EstimatedTokens {
		t.Fatalf("%+v %v", b, err)
	}
	if _, err := canonical.Encode(b.Categories); err != nil {
		t.Fatal(err)
	}
	// With zero bytes every category disappears into provider_overhead.
	b, _ = NewContextBudget(sepProfile(10_000, 0), []byte("request"), BudgetOptions{Categories: map[string]int64{"system": 0}})
	if len(b.Categories) != 1 || b.Categories[categoryResidual] != 7 {
		t.Fatalf("zero-byte categories %v", b.Categories)
	}
	_, err = NewContextBudget(sepProfile(10_000, 0), nil, BudgetOptions{Categories: map[string]int64{"x": -1}})
	wantCode(t, err, errcode.InvalidContextBudget)
	_, err = NewContextBudget(sepProfile(10_000, 0), nil, BudgetOptions{TriggerRatio: 1.5})
	wantCode(t, err, errcode.InvalidContextBudget)
}

func exact(bytes int64, hash string) map[string]any {
	return map[string]any{"kind": "exact", "bytes": bytes, "hash": hash}
}

func appendOf(items ...map[string]any) map[string]any {
	list := make([]any, len(items))
	for i, it := range items {
		list[i] = it
	}
	return map[string]any{"kind": "append", "items": list}
}

func item(id string, bytes int64, hash string) map[string]any {
	return map[string]any{"id": id, "bytes": bytes, "hash": hash}
}

var (
	hashA = strings.Repeat("a", 64)
	hashB = strings.Repeat("b", 64)
	hashC = strings.Repeat("c", 64)
)

func baselineV2(tokens int64, components map[string]any) map[string]any {
	return map[string]any{"version": int64(2), "input_tokens": tokens, "components": components}
}

func TestCB08SameEpochUsageAddsOnlyDeltas(t *testing.T) {
	baseline := baselineV2(1_000, map[string]any{"system": exact(100, hashA), "history": appendOf(item("m1", 50, hashB))})
	current := map[string]any{"system": exact(100, hashA), "history": appendOf(item("m1", 50, hashB), item("m2", 25, hashC))}
	b, err := NewContextBudget(sepProfile(100_000, 0), make([]byte, 10_000),
		BudgetOptions{ReportedUsageBaseline: baseline, ComponentDescriptors: current, ReportedInputTokens: 5_000})
	if err != nil || b.Method != events.MethodReportedUsageDeltaV2 || b.Version != 2 || *b.BaselineInputTokens != 1_000 ||
		*b.DeltaTokens != 25 || b.EstimatedTokens != 1_025 {
		t.Fatalf("%+v %v", b, err)
	}
}

func TestCB09ChangedShortenedReorderedChargeFully(t *testing.T) {
	baseline := baselineV2(500, map[string]any{"system": exact(10, hashA), "history": appendOf(item("m1", 10, hashB), item("m2", 20, hashC))})
	current := map[string]any{"system": exact(30, hashB), "history": appendOf(item("m2", 20, hashC))}
	b, err := NewContextBudget(sepProfile(100_000, 0), make([]byte, 10_000),
		BudgetOptions{ReportedUsageBaseline: baseline, ComponentDescriptors: current})
	if err != nil || *b.DeltaTokens != 50 || b.EstimatedTokens != 550 {
		t.Fatalf("%+v %v", b, err)
	}
}

func TestCB10MalformedOrLegacyBaselinesStayConservative(t *testing.T) {
	current := map[string]any{"system": exact(10, hashA)}
	for _, baseline := range []any{nil, map[string]any{"version": int64(1)},
		map[string]any{"version": int64(2), "input_tokens": int64(-1), "components": current}} {
		b, err := NewContextBudget(sepProfile(100_000, 0), make([]byte, 1_000),
			BudgetOptions{ReportedUsageBaseline: baseline, ComponentDescriptors: current, ReportedInputTokens: 100})
		if err != nil || b.Method != events.MethodConservativeUTF8 || b.Version != 1 || b.EstimatedTokens != 1_000 {
			t.Fatalf("baseline %v: %+v %v", baseline, b, err)
		}
	}
}

func TestCB11IncompatibleComponentsFallBack(t *testing.T) {
	baseline := baselineV2(100, map[string]any{"system": exact(10, hashA), "history": appendOf(item("m1", 10, hashB))})
	for name, current := range map[string]map[string]any{
		"missing component": {"system": exact(10, hashA)},
		"duplicate item id": {"system": exact(10, hashA), "history": appendOf(item("m1", 10, hashB), item("m1", 5, hashC))},
		"extra component":   {"system": exact(10, hashA), "history": appendOf(item("m1", 10, hashB)), "tools": exact(1, hashA)},
		"bad kind":          {"system": map[string]any{"kind": "diff"}, "history": appendOf(item("m1", 10, hashB))},
	} {
		b, err := NewContextBudget(sepProfile(100_000, 0), make([]byte, 1_000),
			BudgetOptions{ReportedUsageBaseline: baseline, ComponentDescriptors: current})
		if err != nil || b.Method != events.MethodConservativeUTF8 || b.Version != 1 || b.EstimatedTokens != 1_000 {
			t.Fatalf("%s: %+v %v", name, b, err)
		}
	}
}

func TestCB12SameHashDifferentBytesIsCharged(t *testing.T) {
	baseline := baselineV2(100, map[string]any{"system": exact(4, hashA), "history": appendOf(item("m1", 3, hashB))})
	current := map[string]any{"system": exact(7, hashA), "history": appendOf(item("m1", 5, hashB))}
	b, err := NewContextBudget(sepProfile(100_000, 0), make([]byte, 1_000),
		BudgetOptions{ReportedUsageBaseline: baseline, ComponentDescriptors: current})
	if err != nil || b.Method != events.MethodReportedUsageDeltaV2 || *b.DeltaTokens != 12 || b.EstimatedTokens != 112 {
		t.Fatalf("%+v %v", b, err)
	}
}

func TestTokenizerIsDeterministicAndMonotone(t *testing.T) {
	cases := map[string]int64{"": 0, "hello": 2, "hello world": 4, "a,b": 3, "\n\n": 1, "日本": 2, "abcdefgh": 2}
	for text, want := range cases {
		if got := approxTokens([]byte(text)); got != want {
			t.Errorf("approxTokens(%q) = %d, want %d", text, got, want)
		}
	}
	if _, ok := counterFor(" "); ok {
		t.Error("a blank tokenizer name counted")
	}
	for name, want := range map[string]string{"static": CounterApprox, "o200k_base": "o200k_base", "cl100k_base": "cl100k_base",
		"p50k_base": "p50k_base", "r50k_base": "r50k_base", "gpt-4o": "o200k_base", "gpt-4o-2024-08-06": "o200k_base",
		"gpt-4.1-mini": "o200k_base", "gpt-4": "cl100k_base", "gpt-3.5-turbo": "cl100k_base", "text-davinci-003": "p50k_base",
		"davinci": "r50k_base", "claude-sonnet-4": CounterApprox} {
		c, ok := counterFor(name)
		if !ok || c.name != want {
			t.Errorf("tokenizer %s counts with %q (%v), want %s", name, c.name, ok, want)
		}
	}
}
