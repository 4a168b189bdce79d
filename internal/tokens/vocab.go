package tokens

import (
	"embed"
	"encoding/binary"
	"fmt"
	"strings"
	"sync"
)

//go:embed vocab/*.tok
var vocabFiles embed.FS

// vocabulary is an encoding's tokens by their merge rank.
type vocabulary struct {
	once  sync.Once
	file  string
	ranks *rankTable
}

// get decodes the vocabulary on first use. The embedded files are written
// by genvocab.go and checked by the tests, so a broken one is a build
// defect and panics.
func (v *vocabulary) get() *rankTable {
	v.once.Do(func() {
		ranks, err := decodeVocabulary(v.file)
		if err != nil {
			panic(fmt.Sprintf("tokens: embedded vocabulary %s: %v", v.file, err))
		}
		v.ranks = ranks
	})
	return v.ranks
}

// decodeVocabulary reads a list of uvarint-length-prefixed tokens; a
// token's position is its rank, and an empty entry is an unused rank. The
// long tokens' keys share one string so that decoding allocates little.
func decodeVocabulary(file string) (*rankTable, error) {
	raw, err := vocabFiles.ReadFile("vocab/" + file)
	if err != nil {
		return nil, err
	}
	type entry struct{ off, n int }
	var entries []entry
	short := 0
	for off := 0; off < len(raw); {
		n, k := binary.Uvarint(raw[off:])
		if k <= 0 || uint64(len(raw)-off-k) < n {
			return nil, fmt.Errorf("corrupt entry at byte %d", off)
		}
		off += k
		entries = append(entries, entry{off, int(n)})
		if n > 0 && n <= maxShort {
			short++
		}
		off += int(n)
	}
	all := strings.Clone(string(raw))
	t := newRankTable(short)
	for rank, e := range entries {
		if e.n > 0 {
			t.add(all[e.off:e.off+e.n], uint32(rank))
		}
	}
	return t, nil
}
