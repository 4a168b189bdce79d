package tokens

// pieceMemo remembers the counts of recently counted pieces of 3 to 15
// bytes, tokens or not. A rendering has few distinct pieces (a
// 100-event lanegen rendering: 33 500 pieces, 1 604 distinct): its framing
// (`":[],"`) and keys (`provenance`, `_ordinal`) in every view, the words
// and identifiers of a session. The rank table is megabytes (the o200k
// tokens of 3 to 7 bytes alone are 4 MB), so a lookup there is a cache
// and TLB miss more often than not once the process has done other work
// between counts, while the memo is 48 KB; a piece that is not a token
// also saves its byte-pair merge, a dozen lookups or more. It is
// direct-mapped: a piece evicts the one before it in its slot. A count
// depends only on the piece and the vocabulary, so what a memo holds
// never changes a count; each Encoding keeps its own, one per goroutine
// counting.
type pieceMemo struct {
	// short holds pieces of 3 to 7 bytes as packShort of the piece with
	// the count in the bits above the length (59 to 63): a count is at
	// most the piece's length, 7, and a key never sets those bits, so an
	// entry is one word and 0 is empty.
	short [1 << shortMemoBits]uint64
	// mid holds pieces of 8 to 15 bytes as packMid, the count in bits 59
	// to 63 of the second word (at most 15).
	mid [1 << midMemoBits][2]uint64
}

const (
	shortMemoBits = 12
	midMemoBits   = 10
	memoCountBits = 59
	memoCountMask = uint64(0x1f) << memoCountBits
)

// count returns the count of piece, 3 to 15 bytes long, from the memo
// when it holds it, else from the rank table or a byte-pair merge.
func (m *pieceMemo) count(ranks *rankTable, piece []byte) int64 {
	if len(piece) <= maxShort {
		k := packShort(piece)
		e := &m.short[(k*0x9E3779B97F4A7C15)>>(64-shortMemoBits)]
		if *e&^memoCountMask == k {
			return int64(*e >> memoCountBits)
		}
		n := pieceCount(ranks, piece)
		*e = k | uint64(n)<<memoCountBits
		return n
	}
	k := packMid(piece)
	e := &m.mid[((k[0]*0xC2B2AE3D27D4EB4F^k[1])*0x9E3779B97F4A7C15)>>(64-midMemoBits)]
	if e[0] == k[0] && e[1]&^memoCountMask == k[1] {
		return int64(e[1] >> memoCountBits)
	}
	n := pieceCount(ranks, piece)
	*e = [2]uint64{k[0], k[1] | uint64(n)<<memoCountBits}
	return n
}

// pieceCount is the count of one piece of the split: 1 for a token, else
// what a byte-pair merge leaves.
func pieceCount(ranks *rankTable, piece []byte) int64 {
	switch {
	case len(piece) == 1 && ranks.bytes:
		return 1
	case len(piece) == 2:
		// Not a token, the pair merges into nothing: two parts remain.
		if ranks.pair(piece[0], piece[1]) {
			return 1
		}
		return 2
	}
	if _, ok := ranks.get(piece); ok {
		return 1
	}
	return mergedCount(ranks, piece)
}
