package tokens

import "math"

// noRank marks a pair that does not merge.
const noRank = math.MaxUint32

// mergedCount returns how many tokens byte-pair encoding leaves of piece,
// which is not itself a token: like tiktoken, it repeatedly merges the
// adjacent pair whose union has the lowest rank (the leftmost on a tie).
func mergedCount(ranks *rankTable, piece []byte) int64 {
	if len(piece) <= 1 {
		return int64(len(piece))
	}
	if len(piece) > 128 {
		return mergedCountLong(ranks, piece)
	}
	// starts[k] is where part k begins; rank[k] the rank of merging parts
	// k and k+1. Short pieces fit on the stack.
	var startsBuf [129]int32
	var rankBuf [128]uint32
	n := len(piece)
	starts := startsBuf[:n+1]
	rank := rankBuf[:n]
	for k := range starts {
		starts[k] = int32(k)
	}
	pairRank := func(k int) uint32 {
		if k+2 >= len(starts) {
			return noRank
		}
		if r, ok := ranks.get(piece[starts[k]:starts[k+2]]); ok {
			return r
		}
		return noRank
	}
	parts := n // the parts are starts[:parts+1]
	for k := 0; k < parts; k++ {
		rank[k] = pairRank(k)
	}
	for parts > 1 {
		best, at := uint32(noRank), -1
		for k := 0; k < parts-1; k++ {
			if rank[k] < best {
				best, at = rank[k], k
			}
		}
		if at < 0 {
			break
		}
		copy(starts[at+1:], starts[at+2:parts+1])
		copy(rank[at+1:], rank[at+2:parts])
		parts--
		starts = starts[:parts+1]
		rank[at] = pairRank(at)
		if at > 0 {
			rank[at-1] = pairRank(at - 1)
		}
	}
	return int64(parts)
}

// mergedCountLong is mergedCount in O(n log n) for long pieces (a run of
// symbols or spaces can be megabytes long): the parts are a linked list
// and the candidate merges a heap ordered by rank, then position.
func mergedCountLong(ranks *rankTable, piece []byte) int64 {
	n := int32(len(piece))
	next := make([]int32, n+1)
	prev := make([]int32, n+1)
	rank := make([]uint32, n+1)
	for k := range next {
		next[k], prev[k], rank[k] = int32(k)+1, int32(k)-1, noRank
	}
	next[n] = -1
	rankOf := func(k int32) uint32 {
		j := next[k]
		if j < 0 || next[j] < 0 {
			return noRank
		}
		if r, ok := ranks.get(piece[k:next[j]]); ok {
			return r
		}
		return noRank
	}
	h := make(mergeHeap, 0, n)
	for k := int32(0); k+2 <= n; k++ {
		if rank[k] = rankOf(k); rank[k] != noRank {
			h = append(h, candidate{rank[k], k})
		}
	}
	h.init()
	parts := int64(n)
	for len(h) > 0 {
		top := h.pop()
		k := top.at
		if rank[k] != top.rank {
			continue // stale: the pair changed since it was queued
		}
		j := next[k]
		rank[j] = noRank
		next[k] = next[j]
		if next[k] >= 0 {
			prev[next[k]] = k
		}
		parts--
		for _, b := range [2]int32{k, prev[k]} {
			if b < 0 {
				continue
			}
			if rank[b] = rankOf(b); rank[b] != noRank {
				h.push(candidate{rank[b], b})
			}
		}
	}
	return parts
}

type candidate struct {
	rank uint32
	at   int32
}

// mergeHeap is a min-heap of candidates by rank, then position.
type mergeHeap []candidate

func (h mergeHeap) less(a, b int) bool {
	if h[a].rank != h[b].rank {
		return h[a].rank < h[b].rank
	}
	return h[a].at < h[b].at
}

func (h mergeHeap) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *mergeHeap) push(c candidate) {
	*h = append(*h, c)
	for i := len(*h) - 1; i > 0; {
		parent := (i - 1) / 2
		if !h.less(i, parent) {
			break
		}
		(*h)[i], (*h)[parent] = (*h)[parent], (*h)[i]
		i = parent
	}
}

func (h *mergeHeap) pop() candidate {
	old := *h
	top := old[0]
	old[0] = old[len(old)-1]
	*h = old[:len(old)-1]
	h.down(0)
	return top
}

func (h mergeHeap) down(i int) {
	for {
		child := 2*i + 1
		if child >= len(h) {
			return
		}
		if r := child + 1; r < len(h) && h.less(r, child) {
			child = r
		}
		if !h.less(child, i) {
			return
		}
		h[i], h[child] = h[child], h[i]
		i = child
	}
}
