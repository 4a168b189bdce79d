package tokens

import (
	"encoding/binary"
	"math/bits"
)

// rankTable finds a token's rank. A third of a rendering's pieces, and
// every pair a byte-pair merge starts from, are one or two bytes long:
// their ranks are indexed by the bytes themselves. Most pieces and merge candidates are a
// few bytes long, so tokens of up to 15 bytes sit in open-addressing
// tables keyed by their bytes packed into one uint64 (up to 7 bytes) or
// two (8 to 15), with the length in the top byte so that no key is 0, the
// empty slot: a lookup is a load or two, a multiply and usually one cache
// line, where a map of strings hashes the bytes, follows a pointer and
// compares them. The few longer tokens stay in a map. The tables are at
// most 5/8 full, so that a probe seldom walks past its slot.
type rankTable struct {
	tiny []uint32 // tokens of 1 and 2 bytes by tinyIndex; noRank if none
	// pairs has bit b0 | b1<<8 set when the 2 bytes b0 b1 are a token:
	// counting a 2-byte piece needs only whether it is one, and these 8 KB
	// stay in the cache where tiny's 256 KB do not. bytes is set when
	// every byte is a token (byte-level BPE: all four encodings), so that a
	// 1-byte piece counts 1 without a lookup.
	pairs     [1 << 16 / 64]uint64
	bytes     bool
	short     []shortEntry
	shortBits uint // 64 - log2(len(short))
	mid       []midEntry
	midBits   uint
	long      map[string]uint32
}

// An entry holds a key with its rank, so that a hit reads one cache line.
type (
	shortEntry struct {
		key  uint64 // packShort
		rank uint32
	}
	midEntry struct {
		key  [2]uint64 // packMid
		rank uint32
	}
)

const (
	maxShort = 7
	maxMid   = 15
)

// tableSize returns the slots for n keys and the shift that maps a hash
// to a slot.
func tableSize(n int) (int, uint) {
	size := 1 << bits.Len(uint(n*8/5))
	return size, uint(64 - bits.TrailingZeros(uint(size)))
}

func newRankTable(short, mid int) *rankTable {
	t := &rankTable{tiny: make([]uint32, 1<<16+1<<8), long: map[string]uint32{}}
	for i := range t.tiny {
		t.tiny[i] = noRank
	}
	n, shift := tableSize(short)
	t.short, t.shortBits = make([]shortEntry, n), shift
	n, shift = tableSize(mid)
	t.mid, t.midBits = make([]midEntry, n), shift
	return t
}

// Fibonacci hashing of the packed keys.
func (t *rankTable) shortSlot(k uint64) int { return int((k * 0x9E3779B97F4A7C15) >> t.shortBits) }
func (t *rankTable) midSlot(k [2]uint64) int {
	return int(((k[0]*0xC2B2AE3D27D4EB4F ^ k[1]) * 0x9E3779B97F4A7C15) >> t.midBits)
}

// packShort packs b, at most 7 bytes, and its length into a uint64. A
// piece is a slice of the text being counted, so there are usually 8 bytes
// within its capacity: one load and a mask then pack it (the bytes past
// its end are read, never used).
func packShort(b []byte) uint64 {
	n := uint64(len(b)) << 56
	if cap(b) >= 8 {
		return binary.LittleEndian.Uint64(b[:8])&(1<<(8*len(b))-1) | n
	}
	for i, c := range b {
		n |= uint64(c) << (8 * i)
	}
	return n
}

// packMid packs b, 8 to 15 bytes: its first 8, then the rest as
// packShort does.
func packMid(b []byte) [2]uint64 {
	return [2]uint64{binary.LittleEndian.Uint64(b), packShort(b[8:])}
}

// le64 is the first 8 bytes of s as a little-endian uint64.
func le64(s string) uint64 {
	var n uint64
	for i := 0; i < 8; i++ {
		n |= uint64(s[i]) << (8 * i)
	}
	return n
}

// packString is packShort of a token of the vocabulary.
func packString(s string) uint64 {
	n := uint64(len(s)) << 56
	for i := 0; i < len(s); i++ {
		n |= uint64(s[i]) << (8 * i)
	}
	return n
}

// tinyIndex is where a 1- or 2-byte token's rank sits in tiny.
func tinyIndex(b0, b1 byte, n int) int {
	if n == 1 {
		return 1<<16 + int(b0)
	}
	return int(b0) | int(b1)<<8
}

func (t *rankTable) add(token string, rank uint32) {
	switch {
	case len(token) == 1:
		t.tiny[tinyIndex(token[0], 0, 1)] = rank
	case len(token) == 2:
		t.tiny[tinyIndex(token[0], token[1], 2)] = rank
		i := int(token[0]) | int(token[1])<<8
		t.pairs[i/64] |= 1 << (i % 64)
	case len(token) <= maxShort:
		k, mask := packString(token), len(t.short)-1
		i := t.shortSlot(k)
		for t.short[i].key != 0 && t.short[i].key != k {
			i = (i + 1) & mask
		}
		t.short[i] = shortEntry{k, rank}
	case len(token) <= maxMid:
		k, mask := [2]uint64{le64(token), packString(token[8:])}, len(t.mid)-1
		i := t.midSlot(k)
		for t.mid[i].key != [2]uint64{} && t.mid[i].key != k {
			i = (i + 1) & mask
		}
		t.mid[i] = midEntry{k, rank}
	default:
		t.long[token] = rank
	}
}

// finish sets bytes once every token is added.
func (t *rankTable) finish() {
	t.bytes = true
	for b := range 256 {
		if t.tiny[tinyIndex(byte(b), 0, 1)] == noRank {
			t.bytes = false
		}
	}
}

// pair reports whether the 2 bytes b0 b1 are a token.
func (t *rankTable) pair(b0, b1 byte) bool {
	i := int(b0) | int(b1)<<8
	return t.pairs[i/64]&(1<<(i%64)) != 0
}

// get returns the rank of the token b, if b is one.
func (t *rankTable) get(b []byte) (uint32, bool) {
	switch {
	case len(b) == 0:
		return 0, false
	case len(b) == 1:
		r := t.tiny[tinyIndex(b[0], 0, 1)]
		return r, r != noRank
	case len(b) == 2:
		r := t.tiny[tinyIndex(b[0], b[1], 2)]
		return r, r != noRank
	case len(b) <= maxShort:
		k, mask := packShort(b), len(t.short)-1
		for i := t.shortSlot(k); ; i = (i + 1) & mask {
			switch s := &t.short[i]; s.key {
			case k:
				return s.rank, true
			case 0:
				return 0, false
			}
		}
	case len(b) <= maxMid:
		k, mask := packMid(b), len(t.mid)-1
		for i := t.midSlot(k); ; i = (i + 1) & mask {
			switch s := &t.mid[i]; s.key {
			case k:
				return s.rank, true
			case [2]uint64{}:
				return 0, false
			}
		}
	}
	r, ok := t.long[string(b)]
	return r, ok
}
