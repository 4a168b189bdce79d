package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/errcode"
)

// corpusDir holds the request corpus (its generate.mjs says how each case
// is made); examples/js/schema-corpus.test.mjs checks the same labels
// against schemas/request.json with Ajv.
const corpusDir = "../../examples/js/testdata/requests"

// corpusCase is one file of the corpus.
type corpusCase struct {
	Description string          `json:"description"`
	Expect      corpusVerdict   `json:"expect"`
	Request     json.RawMessage `json:"request"`
}

// corpusVerdict is what the processor does with a case's request: accepts
// it, or rejects it with an error's code, details.field and details.rule.
type corpusVerdict struct {
	Valid        bool   `json:"valid"`
	Code         string `json:"code,omitempty"`
	Field        string `json:"field,omitempty"`
	Rule         string `json:"rule,omitempty"`
	BeyondSchema bool   `json:"beyond_schema,omitempty"`
}

func readCorpus(t *testing.T) map[string]corpusCase {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(corpusDir, "*.json"))
	if err != nil || len(paths) < 100 {
		t.Fatalf("corpus: %d cases (%v), want at least 100", len(paths), err)
	}
	cases := map[string]corpusCase{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var c corpusCase
		if err := json.Unmarshal(b, &c); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		cases[strings.TrimSuffix(filepath.Base(p), ".json")] = c
	}
	return cases
}

// TestRequestCorpus checks that `processor request validate`, offline,
// accepts or rejects every case of the corpus as its label states. An
// accepted request is one validate calls ok, or one the engine found
// nothing to compact in: that verdict is on the lane's size (the cases'
// lanes are short), not on the request's shape.
func TestRequestCorpus(t *testing.T) {
	now := time.Date(2026, 9, 2, 12, 0, 0, 0, time.UTC)
	cases := readCorpus(t)
	agreed := 0
	for name, c := range cases {
		v := validateRequest(context.Background(), c.Request, validateOptions{}, now)
		got := corpusVerdict{Valid: v.OK, BeyondSchema: c.Expect.BeyondSchema}
		if v.Error != nil && v.Error.Code == errcode.NothingToCompact {
			got.Valid = true
		} else if v.Error != nil {
			got.Code = v.Error.Code
			got.Field, _ = v.Error.Details["field"].(string)
			got.Rule, _ = v.Error.Details["rule"].(string)
		}
		if got != c.Expect {
			t.Errorf("%s (%s): got %+v, label says %+v", name, c.Description, got, c.Expect)
			continue
		}
		if _, listed := errcode.Rules[got.Rule]; !got.Valid && (got.Field == "" || !listed) {
			t.Errorf("%s: a rejection must name its field and a rule of errcode.Rules: %+v", name, v.Error.Details)
		}
		agreed++
	}
	t.Logf("the processor agrees with %d of %d labels", agreed, len(cases))
}
