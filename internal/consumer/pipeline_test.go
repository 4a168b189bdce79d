package consumer

import "testing"

func TestHeaderFoldMatchesOnlyCaseVariants(t *testing.T) {
	h := map[string][]string{"TraceParent": {"00-a-b-01"}, "x[": {"bracket"}}
	if got := headerFold(h, "traceparent"); got != "00-a-b-01" {
		t.Fatalf("headerFold(traceparent) = %q", got)
	}
	// '[' and '{' differ only in the bit an ASCII fold ignores for letters.
	if got := headerFold(h, "x{"); got != "" {
		t.Fatalf("headerFold(x{) = %q, want no match", got)
	}
}
