package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/internal/engine"
)

// --tokenizer names the tokenizer in every request, which the engine then
// counts with, and keeps the window the lane has in bytes.
func TestBenchRequestNamesTheTokenizer(t *testing.T) {
	c := benchConfig{events: 100}
	plain, bytesWindow := benchRequest(c, "bench-t-0", 1, "bench-agent-t-0")
	c.tokenizer = "o200k_base"
	named, tokenWindow := benchRequest(c, "bench-t-0", 1, "bench-agent-t-0")
	for body, want := range map[string]string{string(plain): "", string(named): "o200k_base"} {
		var req struct {
			ModelProfile struct {
				Tokenizer string `json:"tokenizer"`
			} `json:"model_profile"`
		}
		if err := json.Unmarshal([]byte(body), &req); err != nil || req.ModelProfile.Tokenizer != want {
			t.Fatalf("model_profile.tokenizer %q, want %q (%v)", req.ModelProfile.Tokenizer, want, err)
		}
	}
	if tokenWindow != bytesWindow {
		t.Fatalf("window %d with o200k_base, %d in bytes", tokenWindow, bytesWindow)
	}
	req, err := engine.DecodeRequest(named)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := engine.NewContextBudget(req.ModelProfile, []byte("counted"), engine.BudgetOptions{}); err != nil || b.Counter != "o200k_base" {
		t.Fatalf("budget %+v, %v: not counted with o200k_base", b, err)
	}
}

// A run with --tokenizer compacts every lane, as a run in bytes does, and
// says which tokenizer and window it used and what CPU a request took.
func TestBenchWithATokenizerCompactsEveryLane(t *testing.T) {
	var out, errOut bytes.Buffer
	args := []string{"--requests", "8", "--events", "100", "--workers", "2", "--tokenizer", "o200k_base", "--timeout", "2m"}
	if code := runBench(context.Background(), args, stdio{out: &out, err: &errOut}); code != 0 {
		t.Fatalf("exit %d: %s%s", code, out.String(), errOut.String())
	}
	for _, want := range []string{"tokenizer o200k_base counts (window and thresholds those of the lane in bytes, for the same plan), max_input_tokens ", "activated 8, skipped 0, failed 0", "activated: compacted 8", "ms per request"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
