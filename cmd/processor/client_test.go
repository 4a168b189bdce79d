package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/errcode"
)

// The one-line error names the field and rule from the details.
func TestFailPrintsDetails(t *testing.T) {
	var out, errOut bytes.Buffer
	err := errcode.WithDetails(errcode.InvalidPolicy, "compaction ratios are invalid",
		map[string]any{"field": "policy.trigger_ratio", "rule": "a number with 0 < value < 1", "value": 1.5, "missing_fields": []any{"policy", "trigger"}})
	if code := fail(stdio{out: &out, err: &errOut}, err); code != 1 {
		t.Fatalf("exit %d", code)
	}
	want := `processor: invalid_compaction_policy: compaction ratios are invalid (field=policy.trigger_ratio missing_fields=[policy,trigger] rule="a number with 0 < value < 1" value=1.5)` + "\n"
	if errOut.String() != want {
		t.Fatalf("fail printed\n%q\nwant\n%q", errOut.String(), want)
	}
}

func TestDetailsLineIsBounded(t *testing.T) {
	line := detailsSuffix(map[string]any{"fields": []any{strings.Repeat("<", 300000)}})
	if len(line) > maxDetailsLine+16 {
		t.Fatalf("details line of %d bytes", len(line))
	}
}
