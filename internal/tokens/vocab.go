package tokens

import (
	_ "embed" // the vocabularies
	"fmt"
	"sync"
)

// The vocabularies, embedded as strings so that the long tokens' map keys
// point into the binary's read-only data instead of copies.
var (
	//go:embed vocab/o200k_base.tok
	o200kData string
	//go:embed vocab/cl100k_base.tok
	cl100kData string
	//go:embed vocab/p50k_base.tok
	p50kData string
	//go:embed vocab/r50k_base.tok
	r50kData string
)

// vocabulary is an encoding's tokens by their merge rank.
type vocabulary struct {
	once  sync.Once
	name  string
	data  string
	ranks *rankTable
}

// get decodes the vocabulary on first use. The embedded files are written
// by genvocab.go and checked by the tests, so a broken one is a build
// defect and panics.
func (v *vocabulary) get() *rankTable {
	v.once.Do(func() {
		ranks, err := decodeVocabulary(v.data)
		if err != nil {
			panic(fmt.Sprintf("tokens: embedded vocabulary %s: %v", v.name, err))
		}
		v.ranks = ranks
	})
	return v.ranks
}

// decodeVocabulary reads a list of uvarint-length-prefixed tokens; a
// token's position is its rank, and an empty entry is an unused rank. The
// first pass sizes the tables of short and mid-length tokens, the second
// fills them.
func decodeVocabulary(data string) (*rankTable, error) {
	short, mid := 0, 0
	err := eachToken(data, func(token string, _ uint32) {
		switch {
		case len(token) <= maxShort:
			short++
		case len(token) <= maxMid:
			mid++
		}
	})
	if err != nil {
		return nil, err
	}
	t := newRankTable(short, mid)
	if err := eachToken(data, t.add); err != nil {
		return nil, err
	}
	t.finish()
	return t, nil
}

// eachToken calls f with every token of data and its rank.
func eachToken(data string, f func(token string, rank uint32)) error {
	var rank uint32
	for off := 0; off < len(data); rank++ {
		var n uint64
		k := 0
		for shift := 0; ; shift += 7 { // a uvarint
			if off+k >= len(data) || shift > 63 {
				return fmt.Errorf("corrupt entry at byte %d", off)
			}
			b := data[off+k]
			k++
			n |= uint64(b&0x7f) << shift
			if b < 0x80 {
				break
			}
		}
		if uint64(len(data)-off-k) < n {
			return fmt.Errorf("corrupt entry at byte %d", off)
		}
		off += k
		if n > 0 {
			f(data[off:off+int(n)], rank)
		}
		off += int(n)
	}
	return nil
}
