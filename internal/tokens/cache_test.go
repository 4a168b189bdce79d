package tokens

import (
	"math/rand/v2"
	"strings"
	"testing"
)

func TestCacheIsBounded(t *testing.T) {
	c := NewCache[int](100)
	for i := range 10_000 {
		c.Put(i, int64(i))
		if c.Len() > 100 {
			t.Fatalf("after %d puts the cache holds %d entries", i+1, c.Len())
		}
	}
	if n, ok := c.Get(9_999); !ok || n != 9_999 {
		t.Fatalf("the newest entry is gone: %d %v", n, ok)
	}
	if _, ok := c.Get(0); ok {
		t.Fatal("the oldest entry survived 10 000 newer ones")
	}
}

func TestCacheKeepsEntriesInUse(t *testing.T) {
	c := NewCache[int](10)
	c.Put(-1, 7)
	for i := range 1_000 {
		if n, ok := c.Get(-1); !ok || n != 7 {
			t.Fatalf("an entry read before every put was evicted after %d puts", i)
		}
		c.Put(i, 0)
	}
}

// Counting the pieces a text splits into at SplitsAt positions gives the
// count of the whole text, for every encoding.
func TestCountsAddUpAtSplits(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	extra := []string{`{"`, `},{"`, `":"`, "false", "true}", "\"}", "x}", `,"k`}
	for _, e := range allEncodings {
		for range 500 {
			var b strings.Builder
			for range 1 + rng.IntN(30) {
				if rng.IntN(3) == 0 {
					b.WriteString(extra[rng.IntN(len(extra))])
				} else {
					b.WriteString(alphabet[rng.IntN(len(alphabet))])
				}
			}
			text := []byte(b.String())
			var sum int64
			last := 0
			for i := 1; i < len(text); i++ {
				if SplitsAt(text, i) && rng.IntN(2) == 0 {
					sum += e.Count(text[last:i])
					last = i
				}
			}
			sum += e.Count(text[last:])
			if whole := e.Count(text); sum != whole {
				t.Fatalf("%s %q: pieces sum to %d, the whole counts %d", e.Name(), text, sum, whole)
			}
		}
	}
}
