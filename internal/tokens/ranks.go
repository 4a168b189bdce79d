package tokens

import "math/bits"

// rankTable finds a token's rank. Most pieces and merge candidates are a
// few bytes long, so tokens of up to 7 bytes sit in an open-addressing
// table keyed by their bytes packed into a uint64 (with the length in the
// top byte, so that no key is 0, the empty slot): a lookup is one multiply
// and usually one cache line, where a map of strings hashes the bytes,
// follows a pointer and compares them. Longer tokens stay in a map.
type rankTable struct {
	keys  []uint64
	ranks []uint32
	shift uint // 64 - log2(len(keys))
	long  map[string]uint32
}

const maxShort = 7

func newRankTable(short int) *rankTable {
	// At most 5/8 full, so that a probe seldom walks past its slot.
	size := 1 << bits.Len(uint(short*8/5))
	return &rankTable{
		keys:  make([]uint64, size),
		ranks: make([]uint32, size),
		shift: uint(64 - bits.TrailingZeros(uint(size))),
		long:  map[string]uint32{},
	}
}

func packShort(b []byte) uint64 {
	k := uint64(len(b)) << 56
	for i, c := range b {
		k |= uint64(c) << (8 * i)
	}
	return k
}

func (t *rankTable) slot(k uint64) int { return int((k * 0x9E3779B97F4A7C15) >> t.shift) }

func (t *rankTable) add(token string, rank uint32) {
	if len(token) > maxShort {
		t.long[token] = rank
		return
	}
	var k uint64 = uint64(len(token)) << 56
	for i := 0; i < len(token); i++ {
		k |= uint64(token[i]) << (8 * i)
	}
	mask := len(t.keys) - 1
	i := t.slot(k)
	for t.keys[i] != 0 && t.keys[i] != k {
		i = (i + 1) & mask
	}
	t.keys[i], t.ranks[i] = k, rank
}

// get returns the rank of the token b, if b is one.
func (t *rankTable) get(b []byte) (uint32, bool) {
	if len(b) > maxShort {
		r, ok := t.long[string(b)]
		return r, ok
	}
	k := packShort(b)
	mask := len(t.keys) - 1
	for i := t.slot(k); ; i = (i + 1) & mask {
		switch t.keys[i] {
		case k:
			return t.ranks[i], true
		case 0:
			return 0, false
		}
	}
}
