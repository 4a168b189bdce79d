// Package openaisum summarizes lane chunks with an OpenAI-compatible model.
package openaisum

import (
	"bytes"
	"context"
	"encoding/json"
	"time"

	"github.com/cairnhq/cairn/events"

	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/internal/llm"
	"github.com/cairnhq/cairn/semantic"
)

// Defaults of Options.
const (
	DefaultSchemaName      = "cairn_semantic"
	DefaultMaxInputBytes   = 4 << 20
	DefaultMaxRepairOutput = 64 << 10
)

// Options tunes a Summarizer. Zero fields take their defaults.
type Options struct {
	// Timeout bounds one Summarize call, retries included; 0 leaves the
	// bound to ctx and the llm.Client's own Timeout.
	Timeout time.Duration
	// MaxOutputTokens caps the reply length asked for; 0 uses the payload's
	// maximum_output_tokens alone.
	MaxOutputTokens int
	// MaxInputBytes bounds the user message; a larger payload fails with
	// compaction_input_too_large before any request (default 4 MiB).
	MaxInputBytes int
	// MaxRepairOutput bounds how much of a rejected reply is sent back on a
	// repair call; the rest is cut (default 64 KiB).
	MaxRepairOutput int
	// SchemaName names the response schema for the provider
	// (default "cairn_semantic").
	SchemaName string
}

func (o Options) withDefaults() Options {
	if o.MaxInputBytes <= 0 {
		o.MaxInputBytes = DefaultMaxInputBytes
	}
	if o.MaxRepairOutput <= 0 {
		o.MaxRepairOutput = DefaultMaxRepairOutput
	}
	if o.SchemaName == "" {
		o.SchemaName = DefaultSchemaName
	}
	return o
}

// Summarizer asks a model for a Semantic through an llm.Client. It is safe for
// concurrent use.
type Summarizer struct {
	client *llm.Client
	opts   Options
	schema map[string]any
}

var _ engine.Summarizer = (*Summarizer)(nil)

// New returns a Summarizer calling c. It asks for structured output with
// semantic.StrictSchema(semantic.DefaultBounds); c falls back to json_object
// mode on endpoints without json_schema support.
func New(c *llm.Client, o Options) *Summarizer {
	return &Summarizer{client: c, opts: o.withDefaults(), schema: semantic.StrictSchema(semantic.DefaultBounds)}
}

// Summarize sends p to the model and returns its reply unparsed: Output is
// the reply text (a JSON document the engine decodes and validates), Usage
// the tokens of every attempt. Errors are the llm.Client's *errcode.Error
// unchanged (compaction_provider_error, provider_unavailable,
// deadline_exceeded), or compaction_input_too_large when p is too big to send.
func (s *Summarizer) Summarize(ctx context.Context, p engine.Payload) (engine.Summary, error) {
	user, err := s.userMessage(p)
	if err != nil {
		return engine.Summary{}, err
	}
	if s.opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.opts.Timeout)
		defer cancel()
	}
	reply, err := s.client.Complete(ctx, llm.Request{
		System:     systemPrompt,
		User:       user,
		Schema:     s.schema,
		SchemaName: s.opts.SchemaName,
		MaxTokens:  s.maxTokens(p),
	})
	if err != nil {
		return engine.Summary{}, err
	}
	return engine.Summary{Output: reply.Text, Usage: usageOf(reply)}, nil
}

// maxTokens is the payload's output allowance, capped by MaxOutputTokens.
func (s *Summarizer) maxTokens(p engine.Payload) int {
	n := max(p.MaximumOutputTokens, 0)
	if s.opts.MaxOutputTokens > 0 && (n == 0 || n > s.opts.MaxOutputTokens) {
		n = s.opts.MaxOutputTokens
	}
	return n
}

// userMessage is the payload as JSON, its repair section included and
// bounded. HTML escaping is off so the model sees content bytes as they are,
// which exact excerpts depend on.
func (s *Summarizer) userMessage(p engine.Payload) (string, error) {
	if p.Repair != nil {
		r := *p.Repair
		r.InvalidOutput = s.boundedOutput(r.InvalidOutput)
		p.Repair = &r
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(p); err != nil {
		return "", errcode.Wrap(errcode.ProviderError, "compaction payload cannot be encoded as JSON", err)
	}
	if buf.Len() > s.opts.MaxInputBytes {
		return "", errcode.WithDetails(errcode.InputTooLarge, "compaction payload is too large to send to the model",
			map[string]any{"bytes": buf.Len(), "maximum_bytes": s.opts.MaxInputBytes})
	}
	return string(bytes.TrimRight(buf.Bytes(), "\n")), nil
}

// boundedOutput renders a rejected reply as text no longer than
// MaxRepairOutput, so a runaway reply cannot inflate the repair call.
func (s *Summarizer) boundedOutput(v any) any {
	var text string
	switch o := v.(type) {
	case string:
		text = o
	case []byte:
		text = string(o)
	default:
		b, err := json.Marshal(o)
		if err != nil {
			return "(unencodable output)"
		}
		if len(b) <= s.opts.MaxRepairOutput {
			return json.RawMessage(b)
		}
		text = string(b)
	}
	if len(text) <= s.opts.MaxRepairOutput {
		return text
	}
	return cutUTF8(text, s.opts.MaxRepairOutput) + "…(truncated)"
}

// cutUTF8 returns the longest prefix of s of at most n bytes that ends on a
// rune boundary.
func cutUTF8(s string, n int) string {
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

func usageOf(r llm.Reply) *events.Usage {
	return &events.Usage{
		InputTokens:  r.InputTokens,
		OutputTokens: r.OutputTokens,
		CachedTokens: r.CachedTokens,
		Attempts:     r.Attempts,
		Model:        r.Model,
	}
}
