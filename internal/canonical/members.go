package canonical

import (
	"slices"
	"strings"
)

// member is one object member waiting to be written.
type member struct {
	key   string
	value any
}

// collect appends the members of m to e.pairs in key order. It returns the
// kept key order of m's keys when there is one (see keyOrders), whose
// encoded keys the caller may copy.
//
// The objects of one value mostly repeat a few key sets (every event of a
// lane has the same fields), so the sorted keys of recent objects are kept
// per encoder: when they fit m, the members are fetched by lookup, which
// costs less than iterating the map and sorting its keys again.
func (e *encoder) collect(m map[string]any) *keyOrder {
	if order := e.orders.fill(&e.pairs, m); order != nil {
		return order
	}
	start := len(e.pairs)
	for k, v := range m {
		e.pairs = append(e.pairs, member{k, v})
	}
	sortMembers(e.pairs[start:])
	return e.remember(e.pairs[start:])
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
// len%keyOrderSlots for an object of len keys.
type keyOrders [keyOrderSlots]keyOrder

// fill appends the members of m to *pairs in key order and returns the key
// order used if m has exactly the keys of the order kept for its size. The
// order holds len(m) distinct keys, so finding each of them in m proves the
// key sets are equal, whatever happened to m since the order was kept. On
// nil *pairs is as it was.
func (o *keyOrders) fill(pairs *[]member, m map[string]any) *keyOrder {
	order := &o[len(m)%keyOrderSlots]
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

// remember keeps the keys of sorted members, and their encodings, in the
// slot for their count and returns it; it returns nil if the slot is in use
// or a key is not canonical (which the caller then reports).
func (e *encoder) remember(ms []member) *keyOrder {
	if len(ms) == 0 || len(ms) > maxKeyOrder {
		return nil
	}
	order := &e.orders[len(ms)%keyOrderSlots]
	if order.busy > 0 {
		return nil
	}
	order.keys, order.ends = order.keys[:0], order.ends[:0]
	out := e.buf
	e.buf = order.enc[:0]
	defer func() { order.enc, e.buf = e.buf, out }()
	for i := range ms {
		if i > 0 {
			e.buf = append(e.buf, ',')
		}
		if e.string(ms[i].key) != nil {
			clear(order.keys)
			order.keys = order.keys[:0]
			return nil
		}
		e.buf = append(e.buf, ':')
		order.keys = append(order.keys, ms[i].key)
		order.ends = append(order.ends, len(e.buf))
	}
	return order
}

// reset forgets every order, dropping the key references and any encoding
// scratch grown past maxKeyOrderBytes.
func (o *keyOrders) reset() {
	for i := range o {
		order := &o[i]
		clear(order.keys)
		order.keys = order.keys[:0]
		order.busy = 0
		if cap(order.enc) > maxKeyOrderBytes {
			order.enc = nil
		}
	}
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
