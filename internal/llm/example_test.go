package llm_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/cairnhq/cairn/internal/llm"
)

func ExampleClient_Complete() {
	// A stand-in for an OpenAI-compatible endpoint.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"c1","object":"chat.completion","model":"small","choices":[{"index":0,"finish_reason":"stop",
			"message":{"role":"assistant","content":"{\"answer\":42}"}}],
			"usage":{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17}}`)
	}))
	defer srv.Close()

	cfg := llm.DefaultConfig()
	cfg.BaseURL = srv.URL + "/v1/"
	cfg.Model = "small"
	client, err := llm.New(cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	reply, err := client.Complete(context.Background(), llm.Request{
		System: "Answer in JSON.",
		User:   "What is six times seven?",
		Schema: map[string]any{"type": "object", "properties": map[string]any{"answer": map[string]any{"type": "integer"}}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(reply.Text, reply.InputTokens, reply.OutputTokens, reply.Attempts)
	// Output: {"answer":42} 12 5 1
}
