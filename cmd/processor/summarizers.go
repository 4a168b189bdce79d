package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/internal/llm"
	"github.com/cairnhq/cairn/internal/summarize/offline"
	"github.com/cairnhq/cairn/internal/summarize/openaisum"
)

// modelEnv maps standard environment variables onto the model flags, for
// parseFlags. OPENAI_API_KEY is deliberately absent: parseFlags shows env
// values as flag defaults in --help, so the key is read in newSummarizer.
var modelEnv = map[string]string{"OPENAI_BASE_URL": "base-url"}

// modelFlags are the flags of the "openai" summarizer.
type modelFlags struct {
	model       string
	baseURL     string
	apiKey      secretFlag
	timeout     time.Duration
	maxAttempts int
	// calls is how many model calls may run at once (the workers that can
	// call the model); the client keeps that many connections open.
	calls int
}

// register adds the model flags to fs.
func (m *modelFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&m.model, "model", "", "model for --summarizer openai (also CAIRN_MODEL)")
	fs.StringVar(&m.baseURL, "base-url", "", "OpenAI-compatible API root, e.g. http://127.0.0.1:8000/v1/ (also OPENAI_BASE_URL; default "+llm.DefaultBaseURL+")")
	fs.Var(&m.apiKey, "api-key", "API key for the model endpoint (prefer OPENAI_API_KEY: flags show in process lists)")
	fs.DurationVar(&m.timeout, "model-timeout", 2*time.Minute, "bound on one summarizer call, retries included")
	fs.IntVar(&m.maxAttempts, "model-attempts", llm.DefaultConfig().MaxAttempts, "HTTP attempts per summarizer call (1..20)")
}

// llmConfig turns the flags, then the environment, into an llm.Config.
func (m modelFlags) llmConfig() llm.Config {
	cfg := llm.DefaultConfig()
	cfg.Model = m.model
	cfg.BaseURL = m.baseURL
	cfg.APIKey = m.apiKey.value
	cfg.MaxAttempts = m.maxAttempts
	cfg.Timeout = m.timeout
	cfg.IdleConns = min(max(cfg.IdleConns, m.calls), llm.MaxIdleConns)
	cfg = cfg.FromEnv()
	if cfg.Model == "" {
		cfg.Model = os.Getenv("CAIRN_MODEL")
	}
	return cfg
}

// newSummarizer builds the Summarizer called name: "offline" (deterministic,
// no network) or "openai" (an OpenAI-compatible model configured by f).
func newSummarizer(name string, f modelFlags) (engine.Summarizer, error) {
	switch name {
	case "offline":
		return offline.New(offline.DefaultOptions()), nil
	case "openai":
		cfg := f.llmConfig()
		if cfg.Model == "" {
			return nil, errors.New("the openai summarizer needs --model (or CAIRN_MODEL)")
		}
		client, err := llm.New(cfg)
		if err != nil {
			return nil, err
		}
		return openaisum.New(client, openaisum.Options{Timeout: f.timeout}), nil
	default:
		return nil, fmt.Errorf("unknown summarizer %q (want offline or openai)", name)
	}
}

// secretFlag is a string flag whose value never appears in help output.
type secretFlag struct{ value string }

func (s *secretFlag) String() string {
	if s == nil || s.value == "" {
		return ""
	}
	return "(set)"
}

func (s *secretFlag) Set(v string) error {
	s.value = v
	return nil
}
