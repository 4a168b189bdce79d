package main

import (
	"testing"

	"github.com/cairnhq/cairn/internal/facts"
	"github.com/cairnhq/cairn/testenv"
)

func TestHarvestRouting(t *testing.T) {
	fake := testenv.OpenAI(t)
	h := harvestFlags{
		extractor: "heuristic",
		model:     "fast-model",
		endpoints: "acme=acme-model@" + fake.BaseURL(),
		routes:    "tenant:acme=acme,user:*=model",
		maxCalls:  facts.DefaultModelMaxCalls,
	}
	m := defaultModelFlags()
	m.baseURL = fake.BaseURL()
	r, err := h.router(m, 8)
	if err != nil {
		t.Fatal(err)
	}
	for scope, want := range map[facts.Scope]string{
		{Kind: "tenant", ID: "acme"}:  "model",
		{Kind: "user", ID: "u1"}:      "model",
		{Kind: "thread", ID: "t1"}:    "heuristic",
		{Kind: "tenant", ID: "other"}: "heuristic",
	} {
		if got := r.For(scope).Name(); got != want {
			t.Errorf("extractor for %v = %s, want %s", scope, got, want)
		}
	}
}

func TestHarvestFlagErrors(t *testing.T) {
	m := defaultModelFlags()
	for _, h := range []harvestFlags{
		{extractor: "model"}, // no --harvest-model
		{extractor: "heuristic", endpoints: "acme=no-url"},   // malformed endpoint
		{extractor: "heuristic", routes: "tenant:acme=nope"}, // unknown extractor name
		{extractor: "oracle"},
	} {
		if _, err := h.router(m, 8); err == nil {
			t.Errorf("router(%+v) = nil error", h)
		}
	}
}
