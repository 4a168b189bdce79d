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
	ranks map[string]uint32
}

// get decodes the vocabulary on first use. The embedded files are written
// by genvocab.go and checked by the tests, so a broken one is a build
// defect and panics.
func (v *vocabulary) get() map[string]uint32 {
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
// keys share one string so that decoding allocates little.
func decodeVocabulary(file string) (map[string]uint32, error) {
	raw, err := vocabFiles.ReadFile("vocab/" + file)
	if err != nil {
		return nil, err
	}
	all := strings.Clone(string(raw))
	ranks := make(map[string]uint32, len(all)/7)
	for off, rank := 0, uint32(0); off < len(all); rank++ {
		n, k := binary.Uvarint(raw[off:])
		if k <= 0 || uint64(len(all)-off-k) < n {
			return nil, fmt.Errorf("corrupt entry at byte %d", off)
		}
		off += k
		if n > 0 {
			ranks[all[off:off+int(n)]] = rank
		}
		off += int(n)
	}
	return ranks, nil
}
