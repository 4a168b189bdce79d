package openaisum

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/cairnhq/cairn/events"

	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/internal/lanegen"
	"github.com/cairnhq/cairn/internal/summarize/offline"
	"github.com/cairnhq/cairn/testenv"
)

// modelFromOffline makes the fake server answer like a capable model: it
// decodes the payload it was sent and replies with the offline summarizer's
// semantic for it. Replies numbered in broken get a wrong coverage instead.
func modelFromOffline(t *testing.T, broken map[int]bool) func(testenv.RecordedRequest) testenv.Reply {
	calls := 0
	return func(r testenv.RecordedRequest) testenv.Reply {
		calls++
		user, _ := r.Message("user")
		var p engine.Payload
		if err := json.Unmarshal([]byte(user), &p); err != nil {
			t.Errorf("payload does not decode: %v", err)
			return testenv.Reply500()
		}
		sum, err := offline.New(offline.DefaultOptions()).Summarize(context.Background(), p)
		if err != nil {
			t.Errorf("offline summarize: %v", err)
			return testenv.Reply500()
		}
		out, _ := json.Marshal(sum.Output)
		if broken[calls] {
			var m map[string]any
			_ = json.Unmarshal(out, &m)
			m["coverage"] = map[string]any{"first_chat_seq": 1, "last_chat_seq": 1}
			out, _ = json.Marshal(m)
		}
		return testenv.ReplyJSON(string(out), testenv.Usage{PromptTokens: int64(len(user) / 4), CompletionTokens: int64(len(out) / 4)})
	}
}

func compactRequest(t *testing.T) *engine.Request {
	t.Helper()
	req, err := engine.DecodeRequest(lanegen.RequestJSON(lanegen.RequestOptions{Lane: lanegen.Options{Events: 60, Seed: 7}}))
	if err != nil {
		t.Fatalf("decode generated request: %v", err)
	}
	return req
}

func TestEngineCompactsThroughTheModel(t *testing.T) {
	f := testenv.OpenAI(t)
	f.SetHandler(modelFromOffline(t, nil))
	s := newSummarizer(t, f, Options{})

	res, err := engine.Compact(context.Background(), compactRequest(t), s, time.Now())
	if err != nil {
		t.Fatalf("Compact: %v", err)
	}
	if res.Status != events.StatusCompacted || res.Checkpoint == nil || res.Checkpoint.Semantic == nil {
		t.Fatalf("status = %s, checkpoint = %v", res.Status, res.Checkpoint)
	}
	if len(res.ProviderUsage) == 0 || len(f.Requests()) == 0 {
		t.Fatalf("usage %v after %d requests", res.ProviderUsage, len(f.Requests()))
	}
}

func TestEngineRepairsThroughTheModel(t *testing.T) {
	f := testenv.OpenAI(t)
	f.SetHandler(modelFromOffline(t, map[int]bool{1: true}))
	s := newSummarizer(t, f, Options{})

	res, err := engine.Compact(context.Background(), compactRequest(t), s, time.Now())
	if err != nil {
		t.Fatalf("Compact: %v", err)
	}
	if res.Status != events.StatusCompacted {
		t.Fatalf("status = %s", res.Status)
	}
	reqs := f.Requests()
	if len(reqs) < 2 {
		t.Fatalf("%d requests, want a repair call", len(reqs))
	}
	user, _ := reqs[1].Message("user")
	var p engine.Payload
	if err := json.Unmarshal([]byte(user), &p); err != nil || p.Repair == nil {
		t.Fatalf("second call is not a repair: %v", err)
	}
	if p.Repair.Error.Message != "semantic coverage does not match the source range" {
		t.Fatalf("repair error = %+v", p.Repair.Error)
	}
}
