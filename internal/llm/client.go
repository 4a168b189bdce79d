package llm

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/internal/pause"
)

// defaultSchemaName names the response schema when Request.SchemaName is empty.
const defaultSchemaName = "response"

// Request is one chat completion: a system and a user message, and
// optionally a JSON Schema the reply must follow.
type Request struct {
	// System is the system message; empty sends none.
	System string
	// User is the user message. Required.
	User string
	// Schema, when set, asks for structured output: response_format
	// json_schema (strict), or json_object mode on endpoints that reject
	// json_schema. The prompt must then mention JSON, as json_object requires.
	Schema map[string]any
	// SchemaName names Schema for the provider (default "response").
	SchemaName string
	// JSONObject asks for json_object mode when Schema is nil.
	JSONObject bool
	// MaxTokens bounds the reply (max_completion_tokens); 0 leaves it to the
	// provider.
	MaxTokens int
	// Deadline, when set, is when the caller stops waiting; the call ends with
	// deadline_exceeded then, whatever is in flight.
	Deadline time.Time
}

// Reply is the model's answer and what it cost.
type Reply struct {
	// Text is the assistant message content, unparsed.
	Text string
	// InputTokens, OutputTokens and CachedTokens are summed over every
	// attempt that reported usage.
	InputTokens, OutputTokens, CachedTokens int64
	// Attempts counts the HTTP requests made, retries and fallback included.
	Attempts int
	// Model is the model that answered, as the provider named it.
	Model string
	// FinishReason is the provider's finish_reason ("length" means the reply
	// was cut at MaxTokens).
	FinishReason string
}

// Client calls one OpenAI-compatible endpoint with one model. It is safe for
// concurrent use. The SDK's own retries are off: every retry decision is
// Complete's.
type Client struct {
	cfg Config
	api openai.Client
	// jsonObjectOnly records that the endpoint rejected response_format
	// json_schema, so later calls go straight to json_object mode.
	jsonObjectOnly atomic.Bool
}

// New validates cfg and returns a Client. It does not read the environment
// (see Config.FromEnv) and makes no request.
func New(cfg Config) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	opts := []option.RequestOption{
		option.WithBaseURL(cfg.baseURL()),
		option.WithAPIKey(cfg.APIKey),
		option.WithMaxRetries(0),
		option.WithHTTPClient(limitedClient(cfg.HTTPClient, cfg.MaxResponseBytes, cfg.IdleConns)),
	}
	return &Client{cfg: cfg, api: openai.NewClient(opts...)}, nil
}

// Model is the configured model name.
func (c *Client) Model() string { return c.cfg.Model }

// Complete sends r and returns the first successful reply.
//
// Transient failures (408, 409, 429, 5xx, network errors, unreadable replies)
// are retried with jittered exponential backoff, or after the server's
// Retry-After, up to MaxAttempts; then the error is provider_unavailable
// (retryable). Any other provider answer (400, 401, 403, 404, a refusal) is
// compaction_provider_error, not retryable. When ctx's deadline, Timeout or
// r.Deadline passes the error is deadline_exceeded; when ctx is cancelled
// the call returns at once with provider_unavailable wrapping
// context.Canceled. The returned Reply carries usage and attempts even on
// error.
func (c *Client) Complete(ctx context.Context, r Request) (Reply, error) {
	reply := Reply{Model: c.cfg.Model}
	if r.User == "" {
		return reply, errcode.New(errcode.Internal, "llm request has no user message")
	}
	ctx, cancel := c.callContext(ctx, r)
	defer cancel()

	policy := c.newBackoff()
	failures := 0
	for {
		if ctx.Err() != nil {
			return reply, contextError(ctx, r, reply)
		}
		useSchema := r.Schema != nil && !c.jsonObjectOnly.Load()
		err := c.attempt(ctx, r, useSchema, &reply)
		if err == nil {
			return reply, nil
		}
		if ctx.Err() != nil {
			return reply, contextError(ctx, r, reply)
		}
		f := classify(err)
		if useSchema && f.schemaRejected {
			// The endpoint has no structured output: switch this client to
			// json_object mode for good and resend at once.
			c.jsonObjectOnly.Store(true)
			continue
		}
		if !f.retryable {
			return reply, providerError(f, reply)
		}
		failures++
		if failures >= c.cfg.MaxAttempts {
			return reply, unavailable("provider retries exhausted", f, reply)
		}
		wait := policy.NextBackOff()
		if f.hasRetryAfter {
			wait = f.retryAfter
		}
		if err := c.checkWait(ctx, r, wait, f, reply); err != nil {
			return reply, err
		}
		if !pause.For(ctx, wait) {
			return reply, contextError(ctx, r, reply)
		}
	}
}

// callContext bounds ctx by Timeout and r.Deadline.
func (c *Client) callContext(ctx context.Context, r Request) (context.Context, context.CancelFunc) {
	cancels := []context.CancelFunc{}
	if c.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.Timeout)
		cancels = append(cancels, cancel)
	}
	if !r.Deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, r.Deadline)
		cancels = append(cancels, cancel)
	}
	return ctx, func() {
		for _, cancel := range cancels {
			cancel()
		}
	}
}

// newBackoff is the retry schedule of one call: exponential with jitter,
// never stopping by itself (MaxAttempts and the context bound it).
func (c *Client) newBackoff() backoff.BackOff {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = c.cfg.InitialBackoff
	b.MaxInterval = c.cfg.MaxBackoff
	b.Multiplier = 2
	b.RandomizationFactor = 0.5
	b.MaxElapsedTime = 0
	b.Reset()
	return b
}

// checkWait refuses waits the call cannot afford: a Retry-After beyond
// MaxRetryAfter, or any wait that would outlast a deadline. Giving up early
// frees the caller to reschedule instead of holding a worker. A wait past
// r.Deadline is deadline_exceeded (no resend can meet it); a wait past only
// Timeout or the caller's deadline is provider_unavailable (retryable).
func (c *Client) checkWait(ctx context.Context, r Request, wait time.Duration, f failure, reply Reply) error {
	if f.hasRetryAfter && wait > c.cfg.MaxRetryAfter {
		return unavailable("provider asked to retry later than allowed", f, reply)
	}
	resume := time.Now().Add(wait)
	if !r.Deadline.IsZero() && resume.After(r.Deadline) {
		e := errcode.WithDetails(errcode.DeadlineExceeded, "provider retry would pass the request deadline: "+f.message, details(f, reply))
		e.Err = f.err
		return e
	}
	if dl, ok := ctx.Deadline(); ok && resume.After(dl) {
		return unavailable("provider retry would pass the call deadline", f, reply)
	}
	return nil
}

// attempt makes one HTTP request and folds its usage into reply.
func (c *Client) attempt(ctx context.Context, r Request, useSchema bool, reply *Reply) error {
	if c.cfg.AttemptTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.AttemptTimeout)
		defer cancel()
	}
	reply.Attempts++
	res, err := c.api.Chat.Completions.New(ctx, c.params(r, useSchema))
	if err != nil {
		return err
	}
	return takeResult(res, reply)
}

// params renders r as chat completion parameters; never with tools.
func (c *Client) params(r Request, useSchema bool) openai.ChatCompletionNewParams {
	msgs := make([]openai.ChatCompletionMessageParamUnion, 0, 2)
	if r.System != "" {
		msgs = append(msgs, openai.SystemMessage(r.System))
	}
	msgs = append(msgs, openai.UserMessage(r.User))
	p := openai.ChatCompletionNewParams{Model: c.cfg.Model, Messages: msgs}
	if r.MaxTokens > 0 {
		p.MaxCompletionTokens = openai.Int(int64(r.MaxTokens))
	}
	switch {
	case useSchema:
		name := r.SchemaName
		if name == "" {
			name = defaultSchemaName
		}
		p.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{
			OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{
				Name: name, Strict: openai.Bool(true), Schema: r.Schema,
			}},
		}
	case r.Schema != nil || r.JSONObject:
		p.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{
			OfJSONObject: &shared.ResponseFormatJSONObjectParam{},
		}
	}
	return p
}

// errNoChoices marks a 200 reply without an answer, treated as transient.
var errNoChoices = errors.New("provider reply has no choices")

// refusalError is a model's explicit refusal to answer.
type refusalError struct{ text string }

func (e *refusalError) Error() string { return "model refused: " + e.text }

// takeResult adds res's usage to reply and takes its first choice.
func takeResult(res *openai.ChatCompletion, reply *Reply) error {
	if res == nil {
		return errNoChoices
	}
	reply.InputTokens += res.Usage.PromptTokens
	reply.OutputTokens += res.Usage.CompletionTokens
	reply.CachedTokens += res.Usage.PromptTokensDetails.CachedTokens
	if res.Model != "" {
		reply.Model = res.Model
	}
	if len(res.Choices) == 0 {
		return errNoChoices
	}
	choice := res.Choices[0]
	if choice.Message.Refusal != "" {
		return &refusalError{text: choice.Message.Refusal}
	}
	reply.Text = choice.Message.Content
	reply.FinishReason = choice.FinishReason
	return nil
}

// statusRetryable lists the HTTP statuses worth another attempt.
func statusRetryable(status int) bool {
	switch status {
	case http.StatusRequestTimeout, http.StatusConflict, http.StatusTooManyRequests:
		return true
	}
	return status >= 500
}
