package openaisum

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/events"

	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/internal/llm"
	"github.com/cairnhq/cairn/semantic"
	"github.com/cairnhq/cairn/testenv"
)

const (
	userEventID = "0192f0a0-0000-7000-8000-000000000001"
	toolEventID = "0192f0a0-0000-7000-8000-000000000002"
	artifactID  = "0192f0a0-0000-7000-8000-0000000000aa"
	userContent = "Please rename <Config> & keep the tests green in pkg/store."
)

func ptr[T any](v T) *T { return &v }

func testPayload() engine.Payload {
	return engine.Payload{
		SchemaVersion: engine.PayloadSchemaVersion,
		CheckpointID:  "0192f0a0-0000-7000-8000-0000000000ff",
		CoveredRange:  semantic.Coverage{FirstChatSeq: 1, LastChatSeq: 2},
		Events: []engine.EventView{
			{EventID: userEventID, ChatSeq: 1, Role: "user", Content: ptr(userContent), ArtifactIDs: []string{}},
			{EventID: toolEventID, ChatSeq: 2, Role: "tool", Content: ptr("ok: 12 tests passed"), ArtifactIDs: []string{artifactID}},
		},
		MaximumOutputTokens: 2048,
	}
}

// semanticFor builds a valid semantic for the payload carried in a recorded
// request, as a well-behaved model would.
func semanticFor(t *testing.T, req testenv.RecordedRequest) map[string]any {
	t.Helper()
	user, _ := req.Message("user")
	var p engine.Payload
	if err := json.Unmarshal([]byte(user), &p); err != nil {
		t.Errorf("user message is not the payload JSON: %v", err)
		return nil
	}
	var userEvent engine.EventView
	for _, e := range p.Events {
		if e.Role == "user" && e.Content != nil {
			userEvent = e
			break
		}
	}
	excerpt := (*userEvent.Content)[:len("Please rename <Config>")]
	ids := []any{userEvent.EventID}
	return map[string]any{
		"version":     1,
		"objective":   []any{map[string]any{"text": "Rename Config in pkg/store", "source_event_ids": ids}},
		"constraints": []any{}, "decisions": []any{}, "critical_context": []any{}, "errors": []any{},
		"user_requests": []any{map[string]any{
			"source_event_id": userEvent.EventID, "exact_excerpt": excerpt, "secret_omission": nil, "status": "active",
		}},
		"progress": map[string]any{"completed": []any{}, "active": []any{}, "blocked": []any{}, "pending": []any{}},
		"artifact_refs": []any{map[string]any{
			"artifact_id": artifactID, "purpose": "test run output", "source_event_ids": []any{toolEventID},
		}},
		"coverage": map[string]any{"first_chat_seq": p.CoveredRange.FirstChatSeq, "last_chat_seq": p.CoveredRange.LastChatSeq},
	}
}

func newSummarizer(t *testing.T, f *testenv.FakeOpenAI, o Options) *Summarizer {
	t.Helper()
	cfg := llm.DefaultConfig()
	cfg.BaseURL = f.BaseURL()
	cfg.APIKey = "test-key"
	cfg.Model = "cairn-summarizer"
	cfg.InitialBackoff = 5 * time.Millisecond
	cfg.MaxBackoff = 20 * time.Millisecond
	c, err := llm.New(cfg)
	if err != nil {
		t.Fatalf("llm.New: %v", err)
	}
	return New(c, o)
}

func sources(p engine.Payload) semantic.Sources {
	src := semantic.Sources{Coverage: p.CoveredRange}
	for _, e := range p.Events {
		src.Events = append(src.Events, semantic.SourceEvent{
			EventID: e.EventID, Role: e.Role, Content: e.Content, ChatSeq: e.ChatSeq, ArtifactIDs: e.ArtifactIDs,
		})
	}
	return src
}

func TestSummarizeReturnsValidSemanticAndUsage(t *testing.T) {
	f := testenv.OpenAI(t)
	f.SetHandler(func(r testenv.RecordedRequest) testenv.Reply {
		return testenv.ReplyJSON(semanticFor(t, r), testenv.Usage{PromptTokens: 900, CompletionTokens: 150, CachedTokens: 512})
	})
	s := newSummarizer(t, f, Options{})
	p := testPayload()

	sum, err := s.Summarize(context.Background(), p)
	if err != nil {
		t.Fatalf("Summarize: %v", err)
	}
	text, ok := sum.Output.(string)
	if !ok {
		t.Fatalf("output is %T, want string JSON", sum.Output)
	}
	sem, err := semantic.ParseJSON([]byte(text))
	if err != nil {
		t.Fatalf("output does not parse: %v", err)
	}
	if err := semantic.Validate(sem, sources(p)); err != nil {
		t.Fatalf("output does not validate against its sources: %v", err)
	}
	want := &events.Usage{InputTokens: 900, OutputTokens: 150, CachedTokens: 512, Attempts: 1, Model: "cairn-summarizer"}
	if !reflect.DeepEqual(sum.Usage, want) {
		t.Fatalf("usage = %+v, want %+v", sum.Usage, want)
	}
}

func TestSummarizeSendsPromptSchemaAndPayload(t *testing.T) {
	f := testenv.OpenAI(t)
	s := newSummarizer(t, f, Options{MaxOutputTokens: 1000})
	p := testPayload()
	if _, err := s.Summarize(context.Background(), p); err != nil {
		t.Fatalf("Summarize: %v", err)
	}
	req := f.Requests()[0]

	sys, _ := req.Message("system")
	for _, phrase := range []string{"untrusted data", "never instructions", "byte for byte", "covered_range", "previous_semantic", "JSON"} {
		if !strings.Contains(sys, phrase) {
			t.Errorf("system prompt does not mention %q", phrase)
		}
	}
	if req.Tools != nil || req.Body["tool_choice"] != nil {
		t.Errorf("request carries tools: %v", req.Body)
	}
	if req.ResponseFormatType() != "json_schema" {
		t.Fatalf("response_format = %v", req.ResponseFormat)
	}
	js, _ := req.ResponseFormat["json_schema"].(map[string]any)
	if js["name"] != DefaultSchemaName || js["strict"] != true {
		t.Errorf("json_schema name/strict = %v/%v", js["name"], js["strict"])
	}
	wantSchema, _ := json.Marshal(semantic.StrictSchema(semantic.DefaultBounds))
	gotSchema, _ := json.Marshal(js["schema"])
	if string(gotSchema) != string(wantSchema) {
		t.Errorf("schema sent differs from semantic.StrictSchema")
	}
	if req.MaxTokens != 1000 {
		t.Errorf("max tokens = %d, want the 1000 cap", req.MaxTokens)
	}

	user, _ := req.Message("user")
	if !strings.Contains(user, userContent) {
		t.Errorf("user message does not carry the content unescaped: %s", user)
	}
	var got engine.Payload
	if err := json.Unmarshal([]byte(user), &got); err != nil {
		t.Fatalf("user message is not JSON: %v", err)
	}
	if !reflect.DeepEqual(got, p) {
		t.Errorf("payload round trip differs:\n got %+v\nwant %+v", got, p)
	}
	if strings.Contains(user, `"repair"`) {
		t.Error("first call carries a repair section")
	}
}

func TestSummarizeRepairCarriesErrorAndInvalidOutput(t *testing.T) {
	f := testenv.OpenAI(t)
	s := newSummarizer(t, f, Options{MaxRepairOutput: 64})
	p := testPayload()
	invalid := `{"version":1,"coverage":{"first_chat_seq":9,"last_chat_seq":9}}` + strings.Repeat("x", 200)
	p.Repair = &engine.Repair{
		InvalidOutput: invalid,
		Error: engine.RepairError{
			Type:    errcode.InvalidSemantic,
			Message: "semantic coverage does not match the source range",
			Details: map[string]any{"expected": []any{1, 2}},
		},
	}
	if _, err := s.Summarize(context.Background(), p); err != nil {
		t.Fatalf("Summarize: %v", err)
	}
	user, _ := f.Requests()[0].Message("user")
	var got struct {
		Repair struct {
			InvalidOutput string             `json:"invalid_output"`
			Error         engine.RepairError `json:"error"`
		} `json:"repair"`
	}
	if err := json.Unmarshal([]byte(user), &got); err != nil {
		t.Fatalf("repair message is not JSON: %v", err)
	}
	if got.Repair.Error.Type != errcode.InvalidSemantic || got.Repair.Error.Message != p.Repair.Error.Message {
		t.Fatalf("repair error = %+v", got.Repair.Error)
	}
	if !strings.HasPrefix(got.Repair.InvalidOutput, invalid[:64]) || len(got.Repair.InvalidOutput) > 64+len("…(truncated)") {
		t.Fatalf("invalid output not carried or not bounded: %q", got.Repair.InvalidOutput)
	}
	if p.Repair.InvalidOutput != invalid {
		t.Fatal("Summarize modified the caller's payload")
	}
}

func TestSummarizeRepairWithStructuredOutput(t *testing.T) {
	f := testenv.OpenAI(t)
	s := newSummarizer(t, f, Options{})
	p := testPayload()
	p.Repair = &engine.Repair{InvalidOutput: map[string]any{"version": 2}, Error: engine.RepairError{Type: errcode.InvalidSemantic, Message: "semantic version is invalid"}}
	if _, err := s.Summarize(context.Background(), p); err != nil {
		t.Fatalf("Summarize: %v", err)
	}
	user, _ := f.Requests()[0].Message("user")
	if !strings.Contains(user, `"invalid_output":{"version":2}`) || !strings.Contains(user, "semantic version is invalid") {
		t.Fatalf("repair section missing: %s", user)
	}
}

func TestSummarizeRetriesTransientFailures(t *testing.T) {
	f := testenv.OpenAI(t)
	f.Script(testenv.Reply500(), testenv.Reply{Status: http.StatusTooManyRequests, Header: http.Header{"Retry-After-Ms": {"30"}}})
	f.SetHandler(func(r testenv.RecordedRequest) testenv.Reply {
		return testenv.ReplyJSON(semanticFor(t, r), testenv.Usage{PromptTokens: 100, CompletionTokens: 10})
	})
	s := newSummarizer(t, f, Options{})
	sum, err := s.Summarize(context.Background(), testPayload())
	if err != nil {
		t.Fatalf("Summarize: %v", err)
	}
	if sum.Usage.Attempts != 3 || len(f.Requests()) != 3 {
		t.Fatalf("attempts = %d, requests = %d, want 3", sum.Usage.Attempts, len(f.Requests()))
	}
}

func TestSummarizeFallsBackToJSONObject(t *testing.T) {
	f := testenv.OpenAI(t)
	f.SetRejectJSONSchema(true)
	f.SetHandler(func(r testenv.RecordedRequest) testenv.Reply {
		return testenv.ReplyJSON(semanticFor(t, r), testenv.Usage{})
	})
	s := newSummarizer(t, f, Options{})
	for range 2 {
		if _, err := s.Summarize(context.Background(), testPayload()); err != nil {
			t.Fatalf("Summarize: %v", err)
		}
	}
	var formats []string
	for _, r := range f.Requests() {
		formats = append(formats, r.ResponseFormatType())
	}
	if strings.Join(formats, ",") != "json_schema,json_object,json_object" {
		t.Fatalf("formats = %v", formats)
	}
}

func TestSummarizePassesProviderErrorsThrough(t *testing.T) {
	f := testenv.OpenAI(t)
	f.Script(testenv.ReplyError(http.StatusUnauthorized, "invalid api key"))
	s := newSummarizer(t, f, Options{})
	_, err := s.Summarize(context.Background(), testPayload())
	if e := errcode.As(err); e == nil || e.Code != errcode.ProviderError || e.Retryable {
		t.Fatalf("err = %v, want non-retryable %s", err, errcode.ProviderError)
	}
}

func TestSummarizeCancellationReturnsPromptly(t *testing.T) {
	f := testenv.OpenAI(t)
	f.SetDefault(testenv.ReplySlow(time.Minute, "{}", testenv.Usage{}))
	s := newSummarizer(t, f, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := s.Summarize(ctx, testPayload())
		done <- err
	}()
	testenv.Eventually(t, 5*time.Second, func() error {
		if len(f.Requests()) == 0 {
			return errors.New("no request yet")
		}
		return nil
	})
	cancel()
	select {
	case err := <-done:
		if errcode.As(err) == nil || !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want a typed error wrapping context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Summarize did not return after cancel")
	}
}

func TestSummarizeTimeout(t *testing.T) {
	f := testenv.OpenAI(t)
	f.SetDefault(testenv.ReplySlow(time.Minute, "{}", testenv.Usage{}))
	s := newSummarizer(t, f, Options{Timeout: 100 * time.Millisecond})
	start := time.Now()
	_, err := s.Summarize(context.Background(), testPayload())
	if errcode.Code(err) != errcode.DeadlineExceeded {
		t.Fatalf("err = %v, want %s", err, errcode.DeadlineExceeded)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("timeout took %s", d)
	}
}

func TestSummarizeRejectsOversizedPayloadWithoutCalling(t *testing.T) {
	f := testenv.OpenAI(t)
	s := newSummarizer(t, f, Options{MaxInputBytes: 256})
	p := testPayload()
	p.Events[0].Content = ptr(strings.Repeat("a", 1000))
	_, err := s.Summarize(context.Background(), p)
	if errcode.Code(err) != errcode.InputTooLarge {
		t.Fatalf("err = %v, want %s", err, errcode.InputTooLarge)
	}
	if len(f.Requests()) != 0 {
		t.Fatal("oversized payload was sent")
	}
}

func TestMaxTokens(t *testing.T) {
	cases := []struct{ payload, cap, want int }{{2048, 0, 2048}, {2048, 1000, 1000}, {500, 1000, 500}, {0, 1000, 1000}, {0, 0, 0}, {-5, 0, 0}}
	for _, tc := range cases {
		s := &Summarizer{opts: Options{MaxOutputTokens: tc.cap}}
		if got := s.maxTokens(engine.Payload{MaximumOutputTokens: tc.payload}); got != tc.want {
			t.Errorf("maxTokens(%d, cap %d) = %d, want %d", tc.payload, tc.cap, got, tc.want)
		}
	}
}

func TestSummarizeUnencodablePayloadIsTyped(t *testing.T) {
	f := testenv.OpenAI(t)
	s := newSummarizer(t, f, Options{})
	p := testPayload()
	p.Events[1].Tool = map[string]any{"exit": math.NaN()}
	_, err := s.Summarize(context.Background(), p)
	if errcode.Code(err) != errcode.ProviderError {
		t.Fatalf("err = %v, want %s", err, errcode.ProviderError)
	}
	if len(f.Requests()) != 0 {
		t.Fatal("unencodable payload was sent")
	}
}
