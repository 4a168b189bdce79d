package llm

import (
	"context"
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/openai/openai-go/v3"

	"github.com/cairnhq/cairn/errcode"
)

// maxErrorText bounds provider text copied into error details.
const maxErrorText = 512

// maxRetryAfterHeader caps a parsed Retry-After so it cannot overflow.
const maxRetryAfterHeader = 24 * time.Hour

// failure is one failed attempt, classified once.
type failure struct {
	err            error
	status         int // HTTP status, 0 when there was no HTTP answer
	message        string
	retryable      bool
	schemaRejected bool // a 400 about response_format / json_schema
	retryAfter     time.Duration
	hasRetryAfter  bool
}

// classify decides what a failed attempt means. Provider answers are judged
// by status; anything without a usable answer (network errors, unreadable or
// empty bodies, attempt timeouts) is transient.
func classify(err error) failure {
	f := failure{err: err, message: truncate(err.Error())}
	var refusal *refusalError
	if errors.As(err, &refusal) || errors.Is(err, errResponseTooLarge) {
		return f
	}
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) {
		f.retryable = true
		return f
	}
	f.status = apiErr.StatusCode
	if apiErr.Message != "" {
		f.message = truncate(apiErr.Message)
	}
	f.retryable = statusRetryable(f.status)
	f.schemaRejected = f.status == http.StatusBadRequest && mentionsStructuredOutput(apiErr)
	if apiErr.Response != nil {
		f.retryAfter, f.hasRetryAfter = parseRetryAfter(apiErr.Response.Header, time.Now())
	}
	return f
}

// mentionsStructuredOutput reports whether a 400 complains about the
// response_format / json_schema request, as servers without structured
// output support do.
func mentionsStructuredOutput(e *openai.Error) bool {
	text := strings.ToLower(e.Message + " " + e.Param + " " + e.RawJSON())
	return strings.Contains(text, "response_format") || strings.Contains(text, "json_schema") ||
		strings.Contains(text, "structured output")
}

// parseRetryAfter reads retry-after-ms (OpenAI's extension) or Retry-After
// as seconds or an HTTP date. ok is false when neither is present or valid.
func parseRetryAfter(h http.Header, now time.Time) (d time.Duration, ok bool) {
	if v := strings.TrimSpace(h.Get("retry-after-ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 && !math.IsInf(ms, 0) && !math.IsNaN(ms) {
			return capRetryAfter(ms * float64(time.Millisecond)), true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs < 0 || math.IsInf(secs, 0) || math.IsNaN(secs) {
			return 0, false
		}
		return capRetryAfter(secs * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

func capRetryAfter(ns float64) time.Duration {
	if ns > float64(maxRetryAfterHeader) {
		return maxRetryAfterHeader
	}
	return time.Duration(ns)
}

// providerError is the permanent failure: the provider answered and said no.
func providerError(f failure, reply Reply) *errcode.Error {
	e := errcode.WithDetails(errcode.ProviderError, "provider rejected the request: "+f.message, details(f, reply))
	e.Err = f.err
	return e
}

// unavailable is the transient failure Complete gives up on.
func unavailable(msg string, f failure, reply Reply) *errcode.Error {
	d := details(f, reply)
	if f.hasRetryAfter {
		d["retry_after_ms"] = f.retryAfter.Milliseconds()
	}
	e := errcode.WithDetails(errcode.ProviderUnavailable, msg+": "+f.message, d)
	e.Retryable = true
	e.Err = f.err
	return e
}

// contextError reports why the call's context ended: a deadline (the
// caller's, Timeout or r.Deadline) or cancellation.
func contextError(ctx context.Context, r Request, reply Reply) *errcode.Error {
	d := map[string]any{"attempts": reply.Attempts}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		e := errcode.WithDetails(errcode.DeadlineExceeded, "model call passed its deadline", d)
		// Resending helps only if the request's own deadline is still ahead.
		e.Retryable = r.Deadline.IsZero() || time.Now().Before(r.Deadline)
		e.Err = ctx.Err()
		return e
	}
	e := errcode.WithDetails(errcode.ProviderUnavailable, "model call cancelled", d)
	e.Retryable = true
	e.Err = ctx.Err()
	return e
}

func details(f failure, reply Reply) map[string]any {
	d := map[string]any{"attempts": reply.Attempts}
	if f.status != 0 {
		d["status"] = f.status
	}
	return d
}

func truncate(s string) string {
	if len(s) <= maxErrorText {
		return s
	}
	cut := maxErrorText
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
