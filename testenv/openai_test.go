package testenv

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
)

func newOpenAIClient(f *FakeOpenAI) openai.Client {
	return openai.NewClient(
		option.WithBaseURL(f.BaseURL()),
		option.WithAPIKey("test-key"),
		option.WithMaxRetries(0),
	)
}

func chatParams(format string) openai.ChatCompletionNewParams {
	p := openai.ChatCompletionNewParams{
		Model:    "cairn-test-model",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("sys"), openai.UserMessage("hello")},
	}
	if format == "json_schema" {
		p.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{
			OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{
				Name: "semantic", Strict: openai.Bool(true), Schema: map[string]any{"type": "object"},
			}},
		}
	}
	return p
}

func TestFakeOpenAIScriptThenDefault(t *testing.T) {
	f := OpenAI(t)
	f.Script(ReplyJSON(map[string]any{"answer": 42}, Usage{PromptTokens: 11, CompletionTokens: 7, CachedTokens: 3}))
	c := newOpenAIClient(f)
	ctx := context.Background()

	got, err := c.Chat.Completions.New(ctx, chatParams(""))
	if err != nil {
		t.Fatalf("first call: %v", err)
	}
	if got.Choices[0].Message.Content != `{"answer":42}` {
		t.Fatalf("content = %q", got.Choices[0].Message.Content)
	}
	if got.Usage.PromptTokens != 11 || got.Usage.CompletionTokens != 7 || got.Usage.PromptTokensDetails.CachedTokens != 3 {
		t.Fatalf("usage = %+v", got.Usage)
	}
	got, err = c.Chat.Completions.New(ctx, chatParams(""))
	if err != nil {
		t.Fatalf("default call: %v", err)
	}
	if got.Choices[0].Message.Content != "{}" {
		t.Fatalf("default content = %q", got.Choices[0].Message.Content)
	}

	reqs := f.Requests()
	if len(reqs) != 2 {
		t.Fatalf("recorded %d requests, want 2", len(reqs))
	}
	r := reqs[0]
	if r.Model != "cairn-test-model" || r.Path != "/v1/chat/completions" {
		t.Fatalf("model/path = %q %q", r.Model, r.Path)
	}
	if user, _ := r.Message("user"); user != "hello" {
		t.Fatalf("user message = %q", user)
	}
	if r.Header.Get("Authorization") != "Bearer test-key" {
		t.Fatalf("authorization = %q", r.Header.Get("Authorization"))
	}
	if r.Tools != nil || r.ResponseFormat != nil {
		t.Fatalf("unexpected tools/response_format: %v %v", r.Tools, r.ResponseFormat)
	}
}

func TestFakeOpenAIErrorReplies(t *testing.T) {
	f := OpenAI(t)
	f.Script(Reply429(2*time.Second), Reply500(), ReplyError(http.StatusUnauthorized, "bad key"))
	c := newOpenAIClient(f)
	for _, want := range []int{429, 500, 401} {
		_, err := c.Chat.Completions.New(context.Background(), chatParams(""))
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) {
			t.Fatalf("want API error %d, got %v", want, err)
		}
		if apiErr.StatusCode != want {
			t.Fatalf("status = %d, want %d", apiErr.StatusCode, want)
		}
		if want == 429 && apiErr.Response.Header.Get("Retry-After") != "2" {
			t.Fatalf("Retry-After = %q", apiErr.Response.Header.Get("Retry-After"))
		}
	}
}

func TestFakeOpenAIRejectsJSONSchema(t *testing.T) {
	f := OpenAI(t)
	f.Script(Reply{RejectJSONSchema: true, Content: "ok"})
	c := newOpenAIClient(f)
	_, err := c.Chat.Completions.New(context.Background(), chatParams("json_schema"))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || !strings.Contains(apiErr.Message, "json_schema") {
		t.Fatalf("want 400 mentioning json_schema, got %v", err)
	}
	if f.Requests()[0].ResponseFormatType() != "json_schema" {
		t.Fatalf("recorded format %q", f.Requests()[0].ResponseFormatType())
	}

	f.SetRejectJSONSchema(true)
	f.Script(ReplyJSON("plain", Usage{}))
	if _, err := c.Chat.Completions.New(context.Background(), chatParams("json_schema")); err == nil {
		t.Fatal("server-wide rejection did not reject")
	}
	if f.Pending() != 1 {
		t.Fatalf("server-wide rejection consumed the script")
	}
	got, err := c.Chat.Completions.New(context.Background(), chatParams(""))
	if err != nil || got.Choices[0].Message.Content != "plain" {
		t.Fatalf("non-schema call = %v, %v", got, err)
	}
}

func TestFakeOpenAIHandlerMalformedAndDelay(t *testing.T) {
	f := OpenAI(t)
	f.SetHandler(func(r RecordedRequest) Reply {
		user, _ := r.Message("user")
		return ReplyJSON("echo:"+user, Usage{})
	})
	c := newOpenAIClient(f)
	got, err := c.Chat.Completions.New(context.Background(), chatParams(""))
	if err != nil || got.Choices[0].Message.Content != "echo:hello" {
		t.Fatalf("handler reply = %v, %v", got, err)
	}

	f.Script(Reply{Malformed: true})
	if _, err := c.Chat.Completions.New(context.Background(), chatParams("")); err == nil {
		t.Fatal("malformed body decoded without error")
	}

	f.Script(ReplySlow(time.Minute, "late", Usage{}))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := c.Chat.Completions.New(ctx, chatParams("")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("slow reply err = %v, want deadline exceeded", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("cancelled call took %s", d)
	}
}

func TestFakeOpenAIUnknownPath(t *testing.T) {
	f := OpenAI(t)
	resp, err := http.Post(strings.TrimSuffix(f.BaseURL(), "/v1/")+"/v1/embeddings", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("status = %d, want 404", resp.StatusCode)
	}
}
