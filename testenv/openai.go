package testenv

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// maxFakeRequestBytes bounds the request bodies the fake server reads.
const maxFakeRequestBytes = 16 << 20

// Usage is the token usage a fake reply reports.
type Usage struct {
	PromptTokens     int64
	CompletionTokens int64
	CachedTokens     int64
}

// Reply is one scripted answer of FakeOpenAI.
//
// By default it is a 200 chat completion whose assistant message content is
// Content (a string is sent as-is, anything else JSON-encoded). Status other
// than 200 sends an OpenAI-shaped error with ErrorMessage. Body, when set,
// replaces the whole response body. Malformed sends a 200 whose body is cut
// mid-JSON. RejectJSONSchema answers 400 if, and only if, the request asked
// for response_format json_schema, as servers without structured output do;
// otherwise the reply is served normally.
type Reply struct {
	Status           int
	Content          any
	Body             string
	ErrorMessage     string
	Header           http.Header
	Delay            time.Duration // waits before answering; abandoned if the client goes away
	RejectJSONSchema bool
	Malformed        bool
	FinishReason     string // default "stop"
	Usage            Usage
}

// ReplyJSON is a 200 reply whose assistant content is content and whose
// usage is usage.
func ReplyJSON(content any, usage Usage) Reply {
	return Reply{Status: http.StatusOK, Content: content, Usage: usage}
}

// Reply429 is a rate-limit reply carrying Retry-After in whole seconds
// (rounded up); retryAfter <= 0 sends no Retry-After.
func Reply429(retryAfter time.Duration) Reply {
	r := Reply{Status: http.StatusTooManyRequests, ErrorMessage: "Rate limit reached", Header: http.Header{}}
	if retryAfter > 0 {
		secs := int64((retryAfter + time.Second - 1) / time.Second)
		r.Header.Set("Retry-After", strconv.FormatInt(secs, 10))
	}
	return r
}

// Reply500 is an internal server error reply.
func Reply500() Reply {
	return Reply{Status: http.StatusInternalServerError, ErrorMessage: "The server had an error while processing your request"}
}

// ReplyError is an error reply with the given status and message.
func ReplyError(status int, message string) Reply {
	return Reply{Status: status, ErrorMessage: message}
}

// ReplySlow is a 200 reply with content that waits d before answering.
func ReplySlow(d time.Duration, content any, usage Usage) Reply {
	r := ReplyJSON(content, usage)
	r.Delay = d
	return r
}

// Message is one chat message as the fake server received it; Content joins
// the text parts of array-form content.
type Message struct {
	Role    string
	Content string
}

// RecordedRequest is one request the fake server received, decoded.
type RecordedRequest struct {
	Time           time.Time
	Method, Path   string
	Header         http.Header
	Raw            []byte         // the body as sent
	Body           map[string]any // the body decoded generically
	Model          string
	Messages       []Message
	ResponseFormat map[string]any // nil when absent
	Tools          []any          // nil when absent
	MaxTokens      int64          // max_completion_tokens, else max_tokens
}

// ResponseFormatType is response_format.type, or "" when absent.
func (r RecordedRequest) ResponseFormatType() string {
	t, _ := r.ResponseFormat["type"].(string)
	return t
}

// Message returns the content of the first message with role, and whether
// there was one.
func (r RecordedRequest) Message(role string) (string, bool) {
	for _, m := range r.Messages {
		if m.Role == role {
			return m.Content, true
		}
	}
	return "", false
}

// FakeOpenAI is an httptest server speaking the chat completions API. It
// answers from a script of replies in order, then from its handler if set,
// then with its default reply. It records every request and is safe for
// concurrent use.
type FakeOpenAI struct {
	srv  *httptest.Server
	done chan struct{}

	mu               sync.Mutex
	script           []Reply
	handler          func(RecordedRequest) Reply
	fallback         Reply
	rejectJSONSchema bool
	requests         []RecordedRequest
	served           int

	conns atomic.Int64
}

// OpenAI starts a fake OpenAI-compatible server for the test and closes it
// when the test ends. Until scripted otherwise it answers every chat
// completion with content "{}".
func OpenAI(t testing.TB) *FakeOpenAI {
	t.Helper()
	f := &FakeOpenAI{done: make(chan struct{}), fallback: ReplyJSON("{}", Usage{PromptTokens: 1, CompletionTokens: 1})}
	f.srv = httptest.NewUnstartedServer(http.HandlerFunc(f.serveHTTP))
	f.srv.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			f.conns.Add(1)
		}
	}
	f.srv.Start()
	t.Cleanup(func() {
		close(f.done)
		f.srv.CloseClientConnections()
		f.srv.Close()
	})
	return f
}

// BaseURL is the API root to configure clients with, ending in "/v1/".
func (f *FakeOpenAI) BaseURL() string { return f.srv.URL + "/v1/" }

// Script appends replies to the script; each is used for exactly one request.
func (f *FakeOpenAI) Script(replies ...Reply) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.script = append(f.script, replies...)
}

// SetDefault sets the reply used once the script and handler are exhausted.
func (f *FakeOpenAI) SetDefault(r Reply) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fallback = r
}

// SetHandler answers requests the script does not cover by calling h, for
// replies that depend on the request. h runs concurrently for concurrent
// requests.
func (f *FakeOpenAI) SetHandler(h func(RecordedRequest) Reply) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.handler = h
}

// SetRejectJSONSchema makes every request that asks for response_format
// json_schema fail with 400 without consuming the script, as a server
// without structured output support does.
func (f *FakeOpenAI) SetRejectJSONSchema(reject bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rejectJSONSchema = reject
}

// Requests returns a copy of every request received so far, in arrival order.
func (f *FakeOpenAI) Requests() []RecordedRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]RecordedRequest(nil), f.requests...)
}

// Conns is the number of connections clients have opened to the server so
// far, to check that they are reused.
func (f *FakeOpenAI) Conns() int { return int(f.conns.Load()) }

// Pending is the number of scripted replies not yet used.
func (f *FakeOpenAI) Pending() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.script)
}

func (f *FakeOpenAI) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || (r.URL.Path != "/v1/chat/completions" && r.URL.Path != "/chat/completions") {
		writeError(w, http.StatusNotFound, "Unknown request URL: "+r.Method+" "+r.URL.Path)
		return
	}
	rec, err := decodeRequest(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	reply, rejectAll := f.next(rec)
	if (rejectAll || reply.RejectJSONSchema) && rec.ResponseFormatType() == "json_schema" {
		writeError(w, http.StatusBadRequest, "response_format of type 'json_schema' is not supported by this model")
		return
	}
	if !f.wait(r, reply.Delay) {
		return
	}
	f.write(w, rec, reply)
}

// next records rec and picks its reply. rejectAll reports the server-wide
// json_schema rejection, which leaves the script untouched.
func (f *FakeOpenAI) next(rec RecordedRequest) (Reply, bool) {
	f.mu.Lock()
	f.requests = append(f.requests, rec)
	if f.rejectJSONSchema && rec.ResponseFormatType() == "json_schema" {
		f.mu.Unlock()
		return Reply{}, true
	}
	f.served++
	if len(f.script) > 0 {
		r := f.script[0]
		f.script = f.script[1:]
		f.mu.Unlock()
		return r, false
	}
	h, fallback := f.handler, f.fallback
	f.mu.Unlock()
	if h != nil {
		return h(rec), false
	}
	return fallback, false
}

// wait delays the answer by d; it reports false if the client went away or
// the server is closing first.
func (f *FakeOpenAI) wait(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-r.Context().Done():
		return false
	case <-f.done:
		return false
	}
}

func (f *FakeOpenAI) write(w http.ResponseWriter, rec RecordedRequest, reply Reply) {
	for k, vs := range reply.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	status := reply.Status
	if status == 0 {
		status = http.StatusOK
	}
	switch {
	case reply.Body != "":
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, reply.Body)
	case reply.Malformed:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, `{"id":"chatcmpl-broken","object":"chat.completion","choices":[{"index":0,"message":{"role":"assis`)
	case status != http.StatusOK:
		msg := reply.ErrorMessage
		if msg == "" {
			msg = http.StatusText(status)
		}
		writeError(w, status, msg)
	default:
		f.writeCompletion(w, rec, reply)
	}
}

func (f *FakeOpenAI) writeCompletion(w http.ResponseWriter, rec RecordedRequest, reply Reply) {
	content, err := contentString(reply.Content)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	finish := reply.FinishReason
	if finish == "" {
		finish = "stop"
	}
	f.mu.Lock()
	id := f.served
	f.mu.Unlock()
	u := reply.Usage
	body := map[string]any{
		"id":      fmt.Sprintf("chatcmpl-fake-%d", id),
		"object":  "chat.completion",
		"created": time.Now().Unix(),
		"model":   rec.Model,
		"choices": []any{map[string]any{
			"index":         0,
			"message":       map[string]any{"role": "assistant", "content": content, "refusal": nil},
			"finish_reason": finish,
			"logprobs":      nil,
		}},
		"usage": map[string]any{
			"prompt_tokens":         u.PromptTokens,
			"completion_tokens":     u.CompletionTokens,
			"total_tokens":          u.PromptTokens + u.CompletionTokens,
			"prompt_tokens_details": map[string]any{"cached_tokens": u.CachedTokens},
		},
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(body)
}

// contentString renders a reply's assistant content: strings as-is, other
// values as JSON.
func contentString(c any) (string, error) {
	switch v := c.(type) {
	case nil:
		return "", nil
	case string:
		return v, nil
	case []byte:
		return string(v), nil
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return "", fmt.Errorf("fake openai: encode reply content: %w", err)
		}
		return string(b), nil
	}
}

func writeError(w http.ResponseWriter, status int, message string) {
	typ := "invalid_request_error"
	switch {
	case status == http.StatusTooManyRequests:
		typ = "rate_limit_exceeded"
	case status >= 500:
		typ = "server_error"
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"error": map[string]any{"message": message, "type": typ, "param": nil, "code": nil},
	})
}

// decodeRequest reads and decodes a chat completion request body.
func decodeRequest(r *http.Request) (RecordedRequest, error) {
	rec := RecordedRequest{Time: time.Now(), Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone()}
	raw, err := io.ReadAll(io.LimitReader(r.Body, maxFakeRequestBytes))
	if err != nil {
		return rec, fmt.Errorf("read body: %w", err)
	}
	rec.Raw = raw
	if err := json.Unmarshal(raw, &rec.Body); err != nil {
		return rec, fmt.Errorf("request body is not a JSON object: %w", err)
	}
	rec.Model, _ = rec.Body["model"].(string)
	rec.ResponseFormat, _ = rec.Body["response_format"].(map[string]any)
	rec.Tools, _ = rec.Body["tools"].([]any)
	rec.MaxTokens = firstInt(rec.Body, "max_completion_tokens", "max_tokens")
	msgs, _ := rec.Body["messages"].([]any)
	for _, m := range msgs {
		obj, _ := m.(map[string]any)
		role, _ := obj["role"].(string)
		rec.Messages = append(rec.Messages, Message{Role: role, Content: textOf(obj["content"])})
	}
	return rec, nil
}

func firstInt(body map[string]any, keys ...string) int64 {
	for _, k := range keys {
		if n, ok := body[k].(float64); ok {
			return int64(n)
		}
	}
	return 0
}

// textOf flattens message content, a string or a list of typed parts.
func textOf(c any) string {
	switch v := c.(type) {
	case string:
		return v
	case []any:
		var b strings.Builder
		for _, p := range v {
			part, _ := p.(map[string]any)
			if s, ok := part["text"].(string); ok {
				b.WriteString(s)
			}
		}
		return b.String()
	default:
		return ""
	}
}
