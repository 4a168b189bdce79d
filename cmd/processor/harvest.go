package main

import (
	"flag"
	"fmt"
	"strings"

	"github.com/cairnhq/cairn/internal/facts"
	"github.com/cairnhq/cairn/internal/llm"
)

// harvestFlags choose how facts are extracted, per scope.
type harvestFlags struct {
	extractor string
	model     string
	endpoints string
	routes    string
	maxCalls  int
}

func (h *harvestFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&h.extractor, "harvest-extractor", "heuristic", "default fact extractor: heuristic (offline) or model")
	fs.StringVar(&h.model, "harvest-model", "", "fast model of the model extractor, at --base-url with --api-key")
	fs.StringVar(&h.endpoints, "harvest-endpoints", "", "extra model extractors as name=model@base-url, comma-separated (key from --api-key / OPENAI_API_KEY)")
	fs.StringVar(&h.routes, "harvest-routes", "", "per-scope extractors as kind:id=name or kind:*=name, comma-separated (names: heuristic, model, or an endpoint)")
	fs.IntVar(&h.maxCalls, "harvest-max-calls", facts.DefaultModelMaxCalls, "model calls a harvest job may make: a model extractor reads the cut in windows of 24 000 characters, one call each, and memory.flushed's coverage says how much it read (1..256)")
}

// router builds the extractors the flags name and the per-scope routes
// between them. A model extractor uses the same retry policy as the
// summarizer.
func (h harvestFlags) router(m modelFlags, maxFacts int) (*facts.Router, error) {
	if h.maxCalls < 1 || h.maxCalls > 256 {
		return nil, fmt.Errorf("--harvest-max-calls must be 1..256, got %d", h.maxCalls)
	}
	byName := map[string]facts.Extractor{"heuristic": facts.Heuristic{}}
	newModel := func(model, baseURL string) (facts.Extractor, error) {
		cfg := m.llmConfig()
		cfg.Model = model
		if baseURL != "" {
			cfg.BaseURL = baseURL
		}
		client, err := llm.New(cfg)
		if err != nil {
			return nil, err
		}
		return facts.NewModel(client, min(maxFacts, 64), 0, h.maxCalls)
	}
	if h.model != "" {
		ex, err := newModel(h.model, "")
		if err != nil {
			return nil, fmt.Errorf("--harvest-model: %w", err)
		}
		byName["model"] = ex
	}
	for part := range strings.SplitSeq(h.endpoints, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		name, target, ok := strings.Cut(part, "=")
		model, baseURL, ok2 := strings.Cut(target, "@")
		if !ok || !ok2 || name == "" || model == "" || baseURL == "" {
			return nil, fmt.Errorf("--harvest-endpoints %q: want name=model@base-url", part)
		}
		ex, err := newModel(model, baseURL)
		if err != nil {
			return nil, fmt.Errorf("--harvest-endpoints %s: %w", name, err)
		}
		byName[name] = ex
	}
	def, ok := byName[h.extractor]
	if !ok {
		return nil, fmt.Errorf("--harvest-extractor %q: want heuristic, or model with --harvest-model", h.extractor)
	}
	routes, err := facts.ParseRoutes(h.routes, byName)
	if err != nil {
		return nil, err
	}
	return facts.NewRouter(def, routes...)
}
