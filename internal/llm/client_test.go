package llm

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/testenv"
)

var testSchema = map[string]any{
	"type":                 "object",
	"additionalProperties": false,
	"required":             []any{"answer"},
	"properties":           map[string]any{"answer": map[string]any{"type": "integer"}},
}

// newTestClient returns a client on f with fast backoff so retry tests stay quick.
func newTestClient(t *testing.T, f *testenv.FakeOpenAI, tweak func(*Config)) *Client {
	t.Helper()
	cfg := DefaultConfig()
	cfg.BaseURL = f.BaseURL()
	cfg.APIKey = "test-key"
	cfg.Model = "cairn-model"
	cfg.InitialBackoff = 5 * time.Millisecond
	cfg.MaxBackoff = 20 * time.Millisecond
	cfg.Timeout = 20 * time.Second
	if tweak != nil {
		tweak(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

func jsonRequest() Request {
	return Request{System: "Answer in JSON.", User: "What is six times seven?", Schema: testSchema, SchemaName: "answer", MaxTokens: 100}
}

func wantCode(t *testing.T, err error, code string, retryable bool) *errcode.Error {
	t.Helper()
	e := errcode.As(err)
	if e == nil {
		t.Fatalf("error %v is not an *errcode.Error", err)
	}
	if e.Code != code || e.Retryable != retryable {
		t.Fatalf("error = %s retryable=%v, want %s retryable=%v (%v)", e.Code, e.Retryable, code, retryable, err)
	}
	return e
}

func TestCompleteSendsStructuredRequestAndReportsUsage(t *testing.T) {
	f := testenv.OpenAI(t)
	f.Script(testenv.ReplyJSON(map[string]any{"answer": 42}, testenv.Usage{PromptTokens: 120, CompletionTokens: 8, CachedTokens: 64}))
	c := newTestClient(t, f, nil)

	got, err := c.Complete(context.Background(), jsonRequest())
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if got.Text != `{"answer":42}` || got.Attempts != 1 || got.Model != "cairn-model" || got.FinishReason != "stop" {
		t.Fatalf("reply = %+v", got)
	}
	if got.InputTokens != 120 || got.OutputTokens != 8 || got.CachedTokens != 64 {
		t.Fatalf("usage = %+v", got)
	}
	req := f.Requests()[0]
	if req.ResponseFormatType() != "json_schema" {
		t.Fatalf("response_format = %v", req.ResponseFormat)
	}
	js, _ := req.ResponseFormat["json_schema"].(map[string]any)
	if js["name"] != "answer" || js["strict"] != true || js["schema"] == nil {
		t.Fatalf("json_schema = %v", js)
	}
	if req.Tools != nil || req.Body["tools"] != nil || req.Body["tool_choice"] != nil {
		t.Fatalf("request carries tools: %v", req.Body)
	}
	if sys, _ := req.Message("system"); sys != "Answer in JSON." {
		t.Fatalf("system = %q", sys)
	}
	if req.MaxTokens != 100 || req.Model != "cairn-model" {
		t.Fatalf("max tokens %d model %q", req.MaxTokens, req.Model)
	}
	if req.Header.Get("Authorization") != "Bearer test-key" {
		t.Fatalf("authorization = %q", req.Header.Get("Authorization"))
	}
}

func TestCompleteHonoursRetryAfter(t *testing.T) {
	f := testenv.OpenAI(t)
	f.Script(testenv.Reply429(time.Second), testenv.ReplyJSON(`{"answer":42}`, testenv.Usage{PromptTokens: 10, CompletionTokens: 2}))
	c := newTestClient(t, f, nil)

	got, err := c.Complete(context.Background(), jsonRequest())
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if got.Attempts != 2 {
		t.Fatalf("attempts = %d, want 2", got.Attempts)
	}
	reqs := f.Requests()
	gap := reqs[1].Time.Sub(reqs[0].Time)
	// The backoff alone would wait at most 20ms; Retry-After: 1 asks for a second.
	if gap < 900*time.Millisecond || gap > 5*time.Second {
		t.Fatalf("retry came %s after the 429, want about 1s", gap)
	}
}

func TestCompleteRetriesServerErrorsThenSucceeds(t *testing.T) {
	f := testenv.OpenAI(t)
	f.Script(
		testenv.Reply500(),
		testenv.ReplyError(http.StatusBadGateway, "upstream"),
		testenv.ReplyJSON(`{"answer":42}`, testenv.Usage{PromptTokens: 10, CompletionTokens: 2, CachedTokens: 1}),
	)
	c := newTestClient(t, f, nil)
	got, err := c.Complete(context.Background(), jsonRequest())
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if got.Attempts != 3 || len(f.Requests()) != 3 {
		t.Fatalf("attempts = %d, requests = %d, want 3", got.Attempts, len(f.Requests()))
	}
	if got.InputTokens != 10 || got.OutputTokens != 2 || got.CachedTokens != 1 {
		t.Fatalf("usage = %+v", got)
	}
}

func TestCompleteGivesUpAfterMaxAttempts(t *testing.T) {
	f := testenv.OpenAI(t)
	f.SetDefault(testenv.Reply500())
	c := newTestClient(t, f, func(c *Config) { c.MaxAttempts = 3 })
	got, err := c.Complete(context.Background(), jsonRequest())
	e := wantCode(t, err, errcode.ProviderUnavailable, true)
	if got.Attempts != 3 || len(f.Requests()) != 3 || e.Details["status"] != 500 {
		t.Fatalf("attempts = %d requests = %d details = %v", got.Attempts, len(f.Requests()), e.Details)
	}
}

func TestCompleteDoesNotRetryClientErrors(t *testing.T) {
	for _, status := range []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			f := testenv.OpenAI(t)
			f.Script(testenv.ReplyError(status, "nope"))
			c := newTestClient(t, f, nil)
			_, err := c.Complete(context.Background(), jsonRequest())
			e := wantCode(t, err, errcode.ProviderError, false)
			if len(f.Requests()) != 1 || e.Details["status"] != status {
				t.Fatalf("requests = %d details = %v", len(f.Requests()), e.Details)
			}
		})
	}
}

func TestCompleteFallsBackToJSONObjectOnce(t *testing.T) {
	f := testenv.OpenAI(t)
	f.SetRejectJSONSchema(true)
	f.SetDefault(testenv.ReplyJSON(`{"answer":42}`, testenv.Usage{PromptTokens: 5, CompletionTokens: 1}))
	c := newTestClient(t, f, func(c *Config) { c.MaxAttempts = 1 })

	got, err := c.Complete(context.Background(), jsonRequest())
	if err != nil {
		t.Fatalf("first Complete: %v", err)
	}
	if got.Text != `{"answer":42}` || got.Attempts != 2 {
		t.Fatalf("reply = %+v", got)
	}
	if _, err := c.Complete(context.Background(), jsonRequest()); err != nil {
		t.Fatalf("second Complete: %v", err)
	}
	var formats []string
	for _, r := range f.Requests() {
		formats = append(formats, r.ResponseFormatType())
	}
	if strings.Join(formats, ",") != "json_schema,json_object,json_object" {
		t.Fatalf("formats sent = %v", formats)
	}
}

func TestCompleteFallbackIsSafeUnderConcurrency(t *testing.T) {
	f := testenv.OpenAI(t)
	f.SetRejectJSONSchema(true)
	c := newTestClient(t, f, nil)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			_, err := c.Complete(context.Background(), jsonRequest())
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent Complete: %v", err)
		}
	}
	if !c.jsonObjectOnly.Load() {
		t.Fatal("fallback not remembered")
	}
}

// A cancelled call returns at once, with no further request, whether it
// waits for the model's reply or in the backoff before a retry (a 429's
// Retry-After).
func TestCompleteStopsOnCancellation(t *testing.T) {
	for name, reply := range map[string]testenv.Reply{
		"waiting for the reply": testenv.ReplySlow(time.Minute, `{"answer":42}`, testenv.Usage{}),
		"in the backoff":        testenv.Reply429(10 * time.Second),
	} {
		t.Run(name, func(t *testing.T) {
			f := testenv.OpenAI(t)
			f.SetDefault(reply)
			c := newTestClient(t, f, nil)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				_, err := c.Complete(ctx, jsonRequest())
				done <- err
			}()
			testenv.Eventually(t, 5*time.Second, func() error {
				if len(f.Requests()) == 0 {
					return errors.New("request not sent yet")
				}
				return nil
			})
			start := time.Now()
			cancel()
			select {
			case err := <-done:
				e := wantCode(t, err, errcode.ProviderUnavailable, true)
				if !errors.Is(e, context.Canceled) {
					t.Fatalf("cancellation error does not wrap context.Canceled: %v", err)
				}
				if d := time.Since(start); d > time.Second {
					t.Fatalf("returned %s after cancel", d)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Complete did not return after cancel")
			}
			if n := len(f.Requests()); n != 1 {
				t.Fatalf("requests = %d, want 1", n)
			}
		})
	}
}

func TestCompleteDeadline(t *testing.T) {
	f := testenv.OpenAI(t)
	f.SetDefault(testenv.ReplySlow(time.Minute, `{"answer":42}`, testenv.Usage{}))
	c := newTestClient(t, f, nil)
	r := jsonRequest()
	r.Deadline = time.Now().Add(150 * time.Millisecond)
	start := time.Now()
	_, err := c.Complete(context.Background(), r)
	wantCode(t, err, errcode.DeadlineExceeded, false)
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("deadline call took %s", d)
	}

	// A deadline already past makes no request at all.
	before := len(f.Requests())
	r.Deadline = time.Now().Add(-time.Second)
	_, err = c.Complete(context.Background(), r)
	wantCode(t, err, errcode.DeadlineExceeded, false)
	if len(f.Requests()) != before {
		t.Fatal("request sent after the deadline")
	}
}

func TestCompleteTimeoutIsRetryable(t *testing.T) {
	f := testenv.OpenAI(t)
	f.SetDefault(testenv.ReplySlow(time.Minute, `{}`, testenv.Usage{}))
	c := newTestClient(t, f, func(c *Config) { c.Timeout = 100 * time.Millisecond })
	_, err := c.Complete(context.Background(), jsonRequest())
	wantCode(t, err, errcode.DeadlineExceeded, true)
}

func TestCompleteRetryAfterBeyondLimitGivesUp(t *testing.T) {
	f := testenv.OpenAI(t)
	f.SetDefault(testenv.Reply429(2 * time.Minute))
	c := newTestClient(t, f, nil)
	start := time.Now()
	_, err := c.Complete(context.Background(), jsonRequest())
	e := wantCode(t, err, errcode.ProviderUnavailable, true)
	if e.Details["retry_after_ms"] != int64(120000) {
		t.Fatalf("details = %v", e.Details)
	}
	if time.Since(start) > 3*time.Second {
		t.Fatal("waited for a Retry-After beyond MaxRetryAfter")
	}
}

func TestCompleteRetriesMalformedReplies(t *testing.T) {
	f := testenv.OpenAI(t)
	f.Script(testenv.Reply{Malformed: true}, testenv.Reply{Body: `{"id":"x","object":"chat.completion","choices":[]}`},
		testenv.ReplyJSON(`{"answer":42}`, testenv.Usage{PromptTokens: 3}))
	c := newTestClient(t, f, nil)
	got, err := c.Complete(context.Background(), jsonRequest())
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if got.Attempts != 3 || got.Text != `{"answer":42}` {
		t.Fatalf("reply = %+v", got)
	}

	f.SetDefault(testenv.Reply{Malformed: true})
	_, err = c.Complete(context.Background(), jsonRequest())
	wantCode(t, err, errcode.ProviderUnavailable, true)
}

func TestCompleteRefusalIsPermanent(t *testing.T) {
	f := testenv.OpenAI(t)
	f.Script(testenv.Reply{Body: `{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":null,"refusal":"I can't help with that."}}]}`})
	c := newTestClient(t, f, nil)
	_, err := c.Complete(context.Background(), jsonRequest())
	wantCode(t, err, errcode.ProviderError, false)
	if len(f.Requests()) != 1 {
		t.Fatalf("refusal retried: %d requests", len(f.Requests()))
	}
}

func TestCompleteWithoutSchemaSendsNoResponseFormat(t *testing.T) {
	f := testenv.OpenAI(t)
	c := newTestClient(t, f, nil)
	if _, err := c.Complete(context.Background(), Request{User: "hi"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Complete(context.Background(), Request{User: "hi, in JSON", JSONObject: true}); err != nil {
		t.Fatal(err)
	}
	reqs := f.Requests()
	if reqs[0].ResponseFormat != nil || reqs[1].ResponseFormatType() != "json_object" {
		t.Fatalf("formats = %v, %v", reqs[0].ResponseFormat, reqs[1].ResponseFormat)
	}
	if _, ok := reqs[0].Message("system"); ok {
		t.Fatal("empty system prompt was sent")
	}
	if _, err := c.Complete(context.Background(), Request{}); errcode.Code(err) != errcode.Internal {
		t.Fatalf("empty request err = %v", err)
	}
}

func TestCompleteRetriesAHungAttempt(t *testing.T) {
	f := testenv.OpenAI(t)
	f.Script(testenv.ReplySlow(time.Minute, `{}`, testenv.Usage{}), testenv.ReplyJSON(`{"answer":42}`, testenv.Usage{}))
	c := newTestClient(t, f, func(c *Config) { c.AttemptTimeout = 100 * time.Millisecond })
	got, err := c.Complete(context.Background(), jsonRequest())
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if got.Attempts != 2 || got.Text != `{"answer":42}` {
		t.Fatalf("reply = %+v", got)
	}
}

func TestCompleteRetriesNetworkErrors(t *testing.T) {
	addr := testenv.FreeAddr(t) // nothing listens there: every attempt is refused
	cfg := DefaultConfig()
	cfg.BaseURL = "http://" + addr + "/v1/"
	cfg.Model = "m"
	cfg.MaxAttempts = 3
	cfg.InitialBackoff = time.Millisecond
	cfg.MaxBackoff = 5 * time.Millisecond
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Complete(context.Background(), jsonRequest())
	wantCode(t, err, errcode.ProviderUnavailable, true)
	if got.Attempts != 3 {
		t.Fatalf("attempts = %d, want 3", got.Attempts)
	}
}

func TestCompleteSumsUsageOverAttempts(t *testing.T) {
	f := testenv.OpenAI(t)
	f.Script(
		testenv.Reply{Body: `{"id":"x","object":"chat.completion","model":"m","choices":[],"usage":{"prompt_tokens":7,"completion_tokens":0,"total_tokens":7,"prompt_tokens_details":{"cached_tokens":2}}}`},
		testenv.ReplyJSON(`{"answer":42}`, testenv.Usage{PromptTokens: 10, CompletionTokens: 3, CachedTokens: 4}),
	)
	c := newTestClient(t, f, nil)
	got, err := c.Complete(context.Background(), jsonRequest())
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if got.InputTokens != 17 || got.OutputTokens != 3 || got.CachedTokens != 6 || got.Attempts != 2 {
		t.Fatalf("reply = %+v, want usage summed over both attempts", got)
	}
}

func TestCompleteRetryAfterPastRequestDeadline(t *testing.T) {
	f := testenv.OpenAI(t)
	f.SetDefault(testenv.Reply429(5 * time.Second))
	c := newTestClient(t, f, nil)
	r := jsonRequest()
	r.Deadline = time.Now().Add(2 * time.Second)
	start := time.Now()
	_, err := c.Complete(context.Background(), r)
	e := wantCode(t, err, errcode.DeadlineExceeded, false)
	if e.Details["status"] != http.StatusTooManyRequests || time.Since(start) > time.Second {
		t.Fatalf("details %v after %s: want an immediate give-up", e.Details, time.Since(start))
	}

	// Past only the client's Timeout, the same wait is retryable.
	c = newTestClient(t, f, func(c *Config) { c.Timeout = 2 * time.Second })
	_, err = c.Complete(context.Background(), jsonRequest())
	wantCode(t, err, errcode.ProviderUnavailable, true)
}

func TestCompleteRejectsOversizedReplies(t *testing.T) {
	f := testenv.OpenAI(t)
	f.SetDefault(testenv.ReplyJSON(strings.Repeat("x", 4096), testenv.Usage{}))
	c := newTestClient(t, f, func(c *Config) { c.MaxResponseBytes = 1024 })
	_, err := c.Complete(context.Background(), jsonRequest())
	wantCode(t, err, errcode.ProviderError, false)
	if n := len(f.Requests()); n != 1 {
		t.Fatalf("oversized reply retried: %d requests", n)
	}

	// A reply within the limit passes through the same transport.
	c = newTestClient(t, f, func(c *Config) { c.MaxResponseBytes = 64 << 10 })
	if _, err := c.Complete(context.Background(), jsonRequest()); err != nil {
		t.Fatalf("Complete within the limit: %v", err)
	}
}
