package tokens

import (
	"math/rand/v2"
	"testing"
)

// A memo answers only for the piece it stored: pieces of every length the
// memo holds, many more than its slots so that most evict another, are
// counted through one memo twice over and must give what the rank table
// and the merge give without it.
func TestMemoNeverChangesACount(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	letters := []byte("abcdefghijklmnopqrstuvwxyz _\"{}:,0123456789ABCDEF\xe4\xb8\xad")
	for _, e := range allEncodings {
		ranks := e.vocab.get()
		pieces := make([][]byte, 40_000)
		want := make([]int64, len(pieces))
		for i := range pieces {
			p := make([]byte, 3+rng.IntN(maxMid-2))
			for k := range p {
				p[k] = letters[rng.IntN(len(letters))]
			}
			pieces[i] = p
			if _, ok := ranks.get(p); ok {
				want[i] = 1
			} else {
				want[i] = mergedCount(ranks, p)
			}
		}
		m := new(pieceMemo)
		for pass := range 2 {
			for i, p := range pieces {
				if got := m.count(ranks, p); got != want[i] {
					t.Fatalf("%s pass %d %q: memo counts %d, want %d", e.Name(), pass, p, got, want[i])
				}
			}
		}
	}
}

// Counting a 1- or 2-byte piece reads pairs and bytes instead of the rank
// table: they must say what the table says.
func TestShortPieceTablesMatchTheRanks(t *testing.T) {
	for _, e := range allEncodings {
		ranks := e.vocab.get()
		if !ranks.bytes {
			t.Errorf("%s: not every byte is a token", e.Name())
		}
		for i := range 1 << 16 {
			_, ok := ranks.get([]byte{byte(i), byte(i >> 8)})
			if ranks.pair(byte(i), byte(i>>8)) != ok {
				t.Fatalf("%s: pair %q is a token: %v, pairs says %v", e.Name(), []byte{byte(i), byte(i >> 8)}, ok, !ok)
			}
		}
	}
}
