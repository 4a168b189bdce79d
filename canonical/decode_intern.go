package canonical

import (
	"encoding/binary"
	"math/bits"
)

// Requests repeat the same keys in every event, and many values too (roles,
// namespaces, agent names, sequence numbers). Decoders remember the short
// strings they made, one per slot chosen by a hash of the text, so a repeat
// costs a comparison instead of an allocation (and, for values, the boxing
// into an interface too). A slot keeps the last string that hashed to it; a
// collision only costs the allocation the cache would have saved. Kept by
// the speed rule (docs/architecture.md, "Speed work") on
// BenchmarkFairProcessor/generated=100 (internal/consumer), with the
// decoder and encoder pools.
const (
	// internMaxLen is the longest text cached: keys and enum-like values are
	// short, and long text (content, hashes) is rarely repeated.
	internMaxLen = 32
	// internSlotBits sizes the caches: with 256 slots the forty-odd keys of
	// a compaction request rarely collide (with 64, a third of them missed).
	internSlotBits = 8
)

// shortStrings caches object keys.
type shortStrings [1 << internSlotBits]string

// intern returns text as a string, the cached one if it matches.
func (c *shortStrings) intern(text []byte) string {
	if len(text) > internMaxLen {
		return string(text)
	}
	slot := &c[internSlot(text)]
	if *slot != string(text) {
		*slot = string(text)
	}
	return *slot
}

// shortValues caches string values (T string) or numbers (T json.Number),
// already boxed for the decoded tree.
type shortValues[T ~string] [1 << internSlotBits]any

// intern returns text as a T in an interface, the cached one if it matches.
func (c *shortValues[T]) intern(text []byte) any {
	if len(text) > internMaxLen {
		return T(text)
	}
	slot := &c[internSlot(text)]
	if v, ok := (*slot).(T); !ok || string(v) != string(text) {
		*slot = T(text)
	}
	return *slot
}

// internSlot hashes text (at most internMaxLen bytes) by its length and its
// first and last eight bytes, which is quick and tells short strings apart
// well enough for a cache.
func internSlot(text []byte) uint64 {
	var head, tail uint64
	if len(text) >= 8 {
		head = binary.LittleEndian.Uint64(text)
		tail = binary.LittleEndian.Uint64(text[len(text)-8:])
	} else {
		for _, c := range text {
			head = head<<8 | uint64(c)
		}
	}
	h := (head ^ bits.RotateLeft64(tail, 29) ^ uint64(len(text))) * 0x9e3779b97f4a7c15
	return h >> (64 - internSlotBits)
}
