package tokens

// pieceMemo remembers the counts of recently merged pieces. Most pieces
// are tokens, and a lookup counts them; the rest cost a byte-pair merge of
// a dozen lookups or more, but they repeat: a rendering's framing
// (`":[],"`) and keys (`provenance`, `_ordinal`) in every view, the
// identifiers of a session. On the example lane's rendering 4 733 pieces
// need a merge and 275 of them are distinct. It is direct-mapped: a piece evicts the
// one before it in its slot. A count depends only on the piece and the
// vocabulary, so what a memo holds never changes a count; each Encoding
// keeps its own, one per goroutine counting.
type pieceMemo struct {
	entries [memoSize]memoEntry
}

const (
	memoBits = 10
	memoSize = 1 << memoBits
)

type memoEntry struct {
	key   [2]uint64 // memoKey of the piece; zero is empty
	count int64
}

// memoKey packs a piece of 1 to 15 bytes into two words: a short piece as
// packShort and zero, a longer one as packMid with the top bit of the
// second word set, so that the two never meet.
func memoKey(piece []byte) [2]uint64 {
	if len(piece) <= maxShort {
		return [2]uint64{packShort(piece), 0}
	}
	k := packMid(piece)
	k[1] |= 1 << 63
	return k
}

// mergedCount is mergedCount of piece, which is not a token, from the
// memo when it holds it.
func (m *pieceMemo) mergedCount(ranks *rankTable, piece []byte) int64 {
	if len(piece) > maxMid || len(piece) == 0 {
		return mergedCount(ranks, piece)
	}
	k := memoKey(piece)
	e := &m.entries[((k[0]^k[1]*0xC2B2AE3D27D4EB4F)*0x9E3779B97F4A7C15)>>(64-memoBits)]
	if e.key == k {
		return e.count
	}
	n := mergedCount(ranks, piece)
	*e = memoEntry{key: k, count: n}
	return n
}
