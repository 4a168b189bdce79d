package canonical

import (
	"math/bits"
	"slices"
	"strings"
)

// member is one object member waiting to be written.
type member struct {
	key   string
	value any
}

// collect appends the members of m to e.pairs in key order. If m has the
// keys of a kept order (see keyOrders), it returns that order and true: its
// encoded keys may be copied. Otherwise it may return the slot for m's size,
// emptied, for the caller to keep m's keys in as it writes them (see
// members).
//
// The objects of one value mostly repeat a few key sets (every event of a
// lane has the same fields), so the sorted keys of recent objects are kept
// per encoder: when they fit m, the members are fetched by lookup, which
// costs less than iterating the map and sorting its keys again, and their
// keys need no escaping.
func (e *encoder) collect(m map[string]any) (*keyOrder, bool) {
	if order := e.orders.fill(&e.pairs, m); order != nil {
		e.pairsHigh = max(e.pairsHigh, len(e.pairs))
		return order, true
	}
	start := len(e.pairs)
	for k, v := range m {
		e.pairs = append(e.pairs, member{k, v})
	}
	e.pairsHigh = max(e.pairsHigh, len(e.pairs))
	sortMembers(e.pairs[start:])
	return e.orders.claim(len(m)), false
}

// keyOrderSlots is how many sorted key lists an encoder keeps; a list is
// kept in the slot for its length, so objects of different sizes never
// evict each other.
const keyOrderSlots = 16

// maxKeyOrder is the largest object whose key order is kept, and
// maxKeyOrderBytes the most encoded key bytes a pooled encoder keeps; they
// bound the scratch a pooled encoder holds.
const (
	maxKeyOrder      = 64
	maxKeyOrderBytes = 16 << 10
)

// keyOrder is the sorted keys of a recently written object and their
// encodings: each key as "key": back to back in enc, with the comma that
// separates it from the one before, key i ending at ends[i].
type keyOrder struct {
	keys []string
	enc  []byte
	ends []int
	// busy counts the objects being written with this order; while it is
	// in use it is not replaced.
	busy int
}

// keyOrders holds the key orders of recently written objects, slot
// len%keyOrderSlots for an object of len keys; used has a bit set for each
// slot filled since the last reset.
type keyOrders struct {
	slots [keyOrderSlots]keyOrder
	used  uint32
}

// fill appends the members of m to *pairs in key order and returns the key
// order used if m has exactly the keys of the order kept for its size. The
// order holds len(m) distinct keys, so finding each of them in m proves the
// key sets are equal, whatever happened to m since the order was kept. On
// nil *pairs is as it was.
func (o *keyOrders) fill(pairs *[]member, m map[string]any) *keyOrder {
	order := &o.slots[len(m)%keyOrderSlots]
	if len(order.keys) != len(m) || len(m) == 0 {
		return nil
	}
	ps := *pairs
	start := len(ps)
	for _, k := range order.keys {
		v, ok := m[k]
		if !ok {
			clear(ps[start:])
			return nil
		}
		ps = append(ps, member{k, v})
	}
	*pairs = ps
	return order
}

// claim empties and returns the slot for objects of n keys, to be filled
// by the caller, or nil if n is out of range or the slot is in use.
func (o *keyOrders) claim(n int) *keyOrder {
	if n == 0 || n > maxKeyOrder {
		return nil
	}
	slot := n % keyOrderSlots
	order := &o.slots[slot]
	if order.busy > 0 {
		return nil
	}
	o.used |= 1 << slot
	clear(order.keys)
	order.keys, order.enc, order.ends = order.keys[:0], order.enc[:0], order.ends[:0]
	return order
}

// setKeys completes a claimed order whose encodings have been added: it
// becomes the kept order for the keys of ms.
func (order *keyOrder) setKeys(ms []member) {
	for i := range ms {
		order.keys = append(order.keys, ms[i].key)
	}
}

// reset forgets every order, dropping the key references and any encoding
// scratch grown past maxKeyOrderBytes. Only the slots used since the last
// reset are visited, which keeps returning an encoder cheap for small values.
func (o *keyOrders) reset() {
	for used := o.used; used != 0; used &= used - 1 {
		order := &o.slots[bits.TrailingZeros32(used)]
		clear(order.keys)
		order.keys = order.keys[:0]
		order.busy = 0
		if cap(order.enc) > maxKeyOrderBytes {
			order.enc = nil
		}
	}
	o.used = 0
}

// sortMembers orders members by key bytes: insertion sort for the small
// objects that dominate real values, pdqsort otherwise.
func sortMembers(ms []member) {
	if len(ms) > 16 {
		slices.SortFunc(ms, func(a, b member) int { return strings.Compare(a.key, b.key) })
		return
	}
	for i := 1; i < len(ms); i++ {
		for j := i; j > 0 && keyLess(ms[j].key, ms[j-1].key); j-- {
			ms[j], ms[j-1] = ms[j-1], ms[j]
		}
	}
}

// keyLess is string < with an inline first-byte test, which settles most
// comparisons between distinct field names without a runtime call.
func keyLess(a, b string) bool {
	if len(a) > 0 && len(b) > 0 && a[0] != b[0] {
		return a[0] < b[0]
	}
	return a < b
}
