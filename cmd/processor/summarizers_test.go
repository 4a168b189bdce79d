package main

import (
	"bytes"
	"context"
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/consumer"
	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/internal/summarize/offline"
	"github.com/cairnhq/cairn/internal/summarize/openaisum"
	"github.com/cairnhq/cairn/internal/telemetry"
	"github.com/cairnhq/cairn/semantic"
	"github.com/cairnhq/cairn/testenv"
)

func parseModelFlags(t *testing.T, args ...string) (modelFlags, string) {
	t.Helper()
	var m modelFlags
	var help bytes.Buffer
	fs := newFlagSet("test", "test", stdio{err: &help})
	m.register(fs)
	if ok, code := parseFlags(fs, args, modelEnv); !ok {
		t.Fatalf("parseFlags(%v) failed with %d: %s", args, code, help.String())
	}
	fs.Usage()
	return m, help.String()
}

func TestNewSummarizerOpenAICallsTheEndpoint(t *testing.T) {
	f := testenv.OpenAI(t)
	t.Setenv("OPENAI_API_KEY", "env-key")
	m, _ := parseModelFlags(t, "--model", "small-model", "--base-url", f.BaseURL())

	s, err := newSummarizer("openai", m)
	if err != nil {
		t.Fatalf("newSummarizer: %v", err)
	}
	if _, ok := s.(*openaisum.Summarizer); !ok {
		t.Fatalf("summarizer is %T", s)
	}
	p := engine.Payload{SchemaVersion: engine.PayloadSchemaVersion, CoveredRange: semantic.Coverage{FirstChatSeq: 1, LastChatSeq: 1}}
	if _, err := s.Summarize(context.Background(), p); err != nil {
		t.Fatalf("Summarize: %v", err)
	}
	req := f.Requests()[0]
	if req.Model != "small-model" || req.Header.Get("Authorization") != "Bearer env-key" {
		t.Fatalf("model %q authorization %q", req.Model, req.Header.Get("Authorization"))
	}
}

func TestModelFlagsFromEnvironment(t *testing.T) {
	f := testenv.OpenAI(t)
	t.Setenv("CAIRN_MODEL", "env-model")
	t.Setenv("OPENAI_BASE_URL", f.BaseURL())
	t.Setenv("CAIRN_API_KEY", "very-secret-key")
	m, help := parseModelFlags(t)
	if strings.Contains(help, "very-secret-key") {
		t.Fatalf("help output shows the API key:\n%s", help)
	}
	cfg := m.llmConfig()
	if cfg.Model != "env-model" || cfg.BaseURL != f.BaseURL() || cfg.APIKey != "very-secret-key" {
		t.Fatalf("config = %+v", cfg)
	}
}

func TestNewSummarizerErrors(t *testing.T) {
	t.Setenv("CAIRN_MODEL", "")
	if _, err := newSummarizer("openai", defaultModelFlags()); err == nil || !strings.Contains(err.Error(), "--model") {
		t.Fatalf("missing model: err = %v", err)
	}
	m := defaultModelFlags()
	m.model = "x"
	m.baseURL = "not a url"
	if _, err := newSummarizer("openai", m); err == nil {
		t.Fatal("invalid base URL accepted")
	}
	if _, err := newSummarizer("magic", m); err == nil {
		t.Fatal("unknown summarizer accepted")
	}
	s, err := newSummarizer("offline", modelFlags{})
	if err != nil {
		t.Fatalf("offline: %v", err)
	}
	if _, ok := s.(*offline.Summarizer); !ok {
		t.Fatalf("offline summarizer is %T", s)
	}
}

func TestSummarizerForUsesEnvironment(t *testing.T) {
	f := testenv.OpenAI(t)
	t.Setenv("CAIRN_MODEL", "wired-model")
	t.Setenv("OPENAI_BASE_URL", f.BaseURL())
	s, err := summarizerFor("openai", defaultModelFlags())
	if err != nil {
		t.Fatalf("summarizerFor: %v", err)
	}
	if _, err := s.Summarize(context.Background(), engine.Payload{}); err != nil {
		t.Fatalf("Summarize: %v", err)
	}
	if got := f.Requests()[0].Model; got != "wired-model" {
		t.Fatalf("model = %q", got)
	}
}

func TestSecretFlagHidesValue(t *testing.T) {
	var s secretFlag
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.Var(&s, "k", "")
	if err := fs.Parse([]string{"-k", "hunter2"}); err != nil {
		t.Fatal(err)
	}
	if s.value != "hunter2" || s.String() == "hunter2" {
		t.Fatalf("value %q shown as %q", s.value, s.String())
	}
}

// Serve meters every summarizer and bench may delay it; neither may make the
// offline summarizer look remote (its calls would be recorded in the
// ledger), and a stand-in model latency must make it look remote.
func TestWrappersKeepALocalSummarizerLocal(t *testing.T) {
	off := offline.New(offline.DefaultOptions())
	standIn := &delayed{Summarizer: off, latency: time.Millisecond}
	cases := []struct {
		name string
		s    engine.Summarizer
		want bool
	}{
		{"metered offline", metered{off, telemetry.NewMetrics()}, true},
		{"bench without latency", &delayed{Summarizer: off}, true},
		{"bench with a model latency", standIn, false},
		{"metered stand-in model", metered{standIn, telemetry.NewMetrics()}, false},
		{"metered openai", metered{&openaisum.Summarizer{}, telemetry.NewMetrics()}, false},
	}
	for _, c := range cases {
		if got := consumer.IsLocal(c.s); got != c.want {
			t.Errorf("%s: local %v, want %v", c.name, got, c.want)
		}
	}
}

// defaultModelFlags are the flag defaults, for callers without a flag set.
func defaultModelFlags() modelFlags {
	var m modelFlags
	m.register(flag.NewFlagSet("model", flag.ContinueOnError))
	return m
}
