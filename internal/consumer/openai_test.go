package consumer

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/events"

	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/internal/llm"
	"github.com/cairnhq/cairn/internal/summarize/offline"
	"github.com/cairnhq/cairn/internal/summarize/openaisum"
	"github.com/cairnhq/cairn/semantic"
	"github.com/cairnhq/cairn/testenv"
)

// modelSummarizer is the production model path: openaisum over the real
// openai-go client (internal/llm), pointed at testenv's fake server.
func modelSummarizer(t testing.TB, f *testenv.FakeOpenAI) engine.Summarizer {
	t.Helper()
	cfg := llm.DefaultConfig()
	cfg.BaseURL = f.BaseURL()
	cfg.APIKey = "test-key"
	cfg.Model = "cairn-summarizer"
	cfg.InitialBackoff = 5 * time.Millisecond
	cfg.MaxBackoff = 20 * time.Millisecond
	cfg.MaxAttempts = 2
	c, err := llm.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return openaisum.New(c, openaisum.Options{})
}

// answerWithOffline makes the fake model reply with what the offline
// summarizer produces for the payload it was sent: a valid Semantic.
func answerWithOffline(t testing.TB) func(testenv.RecordedRequest) testenv.Reply {
	off := offline.New(offline.DefaultOptions())
	return func(r testenv.RecordedRequest) testenv.Reply {
		user, _ := r.Message("user")
		var p engine.Payload
		if err := json.Unmarshal([]byte(user), &p); err != nil {
			t.Errorf("user message is not the payload: %v", err)
			return testenv.Reply500()
		}
		sum, err := off.Summarize(context.Background(), p)
		if err != nil {
			t.Errorf("offline: %v", err)
			return testenv.Reply500()
		}
		s, ok := sum.Output.(*semantic.Semantic)
		if !ok {
			t.Errorf("offline output is %T", sum.Output)
			return testenv.Reply500()
		}
		return testenv.ReplyJSON(s.Map(), testenv.Usage{PromptTokens: 900, CompletionTokens: 150})
	}
}

func TestModelEndToEnd(t *testing.T) {
	e := singleEnv(t)
	e.realEngine = true
	f := testenv.OpenAI(t)
	f.Script(testenv.Reply500()) // one transient failure, retried by the client
	f.SetHandler(answerWithOffline(t))
	e.start(t, testConfig(), EngineCompactor{}, modelSummarizer(t, f))
	e.publish(t, engineBody(t, "model-1", "model", "", 40, nil), "model-1")
	ev := onlyEvent(t, e.awaitOutcome(t, "model-1"))
	if ev.str("kind") != "activated" || ev.str("status") != StatusCompacted {
		t.Fatalf("got %v", ev.Body)
	}
	usage, _ := json.Marshal(ev.Body["provider_usage"])
	if !strings.Contains(string(usage), "900") {
		t.Fatalf("provider_usage lacks the model's usage: %s", usage)
	}
	en := e.ledgerEntry(t, "model-1")
	var u events.Usage
	if len(en.Attempts) != 1 || json.Unmarshal(en.Attempts[0].Usage, &u) != nil || u.InputTokens < 900 || u.Attempts < 2 {
		t.Fatalf("ledger attempt usage (the retried call included): %+v %s", en.Attempts, en.Attempts[0].Usage)
	}
}

func TestModelDownEndsInProviderUnavailable(t *testing.T) {
	e := singleEnv(t)
	e.realEngine = true
	f := testenv.OpenAI(t)
	f.SetDefault(testenv.Reply500())
	cfg := testConfig()
	cfg.MaxDeliver = 2
	e.start(t, cfg, EngineCompactor{}, modelSummarizer(t, f))
	e.publish(t, engineBody(t, "model-2", "model2", "", 40, nil), "model-2")
	ev := onlyEvent(t, e.awaitOutcome(t, "model-2"))
	if ev.code() != errcode.ProviderUnavailable {
		t.Fatalf("got %v", ev.Body)
	}
	if d := errorDetails(ev); d["status"] != float64(500) || d["attempts"] == nil {
		t.Fatalf("details %v do not name the status and attempts", d)
	}
	testenv.Eventually(t, waitLong, func() error {
		if en := e.ledgerEntry(t, "model-2"); len(en.Attempts) != 2 {
			return fmt.Errorf("ledger attempts %d, want one per delivery", len(en.Attempts))
		}
		return nil
	})
}

// A provider that refuses the call (401) is not retried: the request fails
// at once with compaction_provider_error, and the model is called once.
func TestModelRefusalFailsWithoutRetry(t *testing.T) {
	e := singleEnv(t)
	e.realEngine = true
	f := testenv.OpenAI(t)
	f.SetDefault(testenv.ReplyError(401, "invalid api key"))
	cfg := testConfig()
	cfg.MaxDeliver = 4
	e.start(t, cfg, EngineCompactor{}, modelSummarizer(t, f))
	e.publish(t, engineBody(t, "model-3", "model3", "", 40, nil), "model-3")
	ev := onlyEvent(t, e.awaitOutcome(t, "model-3"))
	if ev.code() != errcode.ProviderError {
		t.Fatalf("got %v", ev.Body)
	}
	if d := errorDetails(ev); d["status"] != float64(401) {
		t.Fatalf("details %v do not name the status", d)
	}
	if errObj, _ := ev.Body["error"].(map[string]any); errObj["retryable"] != false {
		t.Fatalf("a refusal must not be retryable: %v", errObj)
	}
	if n := len(f.Requests()); n != 1 {
		t.Fatalf("model called %d times, want 1", n)
	}
}
