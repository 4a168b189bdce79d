package errcode

import (
	"errors"
	"maps"
	"os"
	"regexp"
	"testing"
)

// Field names the subject in details; With adds to them, also on an
// Error built without details.
func TestFieldAndWith(t *testing.T) {
	e := Field(InvalidRequest, "compaction trigger is invalid", "trigger", "enum").With("value", "sometimes")
	if e.Code != InvalidRequest || e.Details["field"] != "trigger" || e.Details["rule"] != "enum" || e.Details["value"] != "sometimes" {
		t.Fatalf("%+v", e)
	}
	bare := (&Error{Code: Internal}).With("reason", "x")
	if bare.Details["reason"] != "x" {
		t.Fatalf("%+v", bare)
	}
	if !errors.Is(e, New(InvalidRequest, "")) || Code(e) != InvalidRequest {
		t.Fatalf("Is/Code do not match by code")
	}
}

// subjects.md's Rules table lists exactly Rules, with the same meanings.
func TestRulesMatchSubjects(t *testing.T) {
	doc, err := os.ReadFile("../subjects.md")
	if err != nil {
		t.Fatal(err)
	}
	section := regexp.MustCompile(`(?s)\n## Rules\n(.*?)(\n## |\z)`).FindSubmatch(doc)
	if section == nil {
		t.Fatal("subjects.md has no Rules section")
	}
	documented := map[string]string{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z]+)` \\| (.*) \\|$").FindAllSubmatch(section[1], -1) {
		documented[string(m[1])] = string(m[2])
	}
	if !maps.Equal(documented, Rules) {
		t.Errorf("subjects.md lists the rules %v, errcode.Rules is %v", documented, Rules)
	}
}
