package offline

import (
	"slices"
	"testing"
)

// citeOwned gives what cite gives.
func TestCiteOwnedMatchesCite(t *testing.T) {
	ids := []string{"a", "b", "c", "a", "d", "b", "b", "e", "a", "f", "c"}
	for max := 1; max <= 5; max++ {
		var owned, copied []string
		for _, id := range ids {
			owned, copied = citeOwned(owned, id, max), cite(copied, id, max)
			if !slices.Equal(owned, copied) {
				t.Fatalf("max %d after %q: %v, want %v", max, id, owned, copied)
			}
		}
	}
}
