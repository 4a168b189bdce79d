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

// collect appends the members of m to e.pairs in key order.
//
// The objects of one value mostly repeat a few key sets (every event of a
// lane has the same fields), so the sorted keys of recent objects are kept
// per encoder: when they fit m, the members are fetched by lookup, which
// costs less than iterating the map and sorting its keys again.
func (e *encoder) collect(m map[string]any) {
	start := len(e.pairs)
	if e.orders.fill(&e.pairs, m) {
		return
	}
	for k, v := range m {
		e.pairs = append(e.pairs, member{k, v})
	}
	sortMembers(e.pairs[start:])
	e.orders.remember(e.pairs[start:])
}

// keyOrderSlots is how many sorted key lists an encoder keeps; a list is
// kept in the slot for its length, so objects of different sizes never
// evict each other.
const keyOrderSlots = 16

// maxKeyOrder is the largest object whose key order is kept, which bounds
// the scratch a pooled encoder holds.
const maxKeyOrder = 64

// keyOrders holds the sorted keys of recently written objects, slot
// len%keyOrderSlots for an object of len keys.
type keyOrders [keyOrderSlots][]string

// fill appends the members of m to *pairs in key order and reports true if
// m has exactly the keys of the list kept for its size. The list holds
// len(m) distinct keys, so finding each of them in m proves the key sets are
// equal, whatever happened to m since the list was kept. On false *pairs is
// as it was.
func (o *keyOrders) fill(pairs *[]member, m map[string]any) bool {
	keys := o[len(m)%keyOrderSlots]
	if len(keys) != len(m) || len(keys) == 0 {
		return false
	}
	ps := *pairs
	start := len(ps)
	for _, k := range keys {
		v, ok := m[k]
		if !ok {
			clear(ps[start:])
			return false
		}
		ps = append(ps, member{k, v})
	}
	*pairs = ps
	return true
}

// remember keeps the keys of sorted members in the slot for their count.
func (o *keyOrders) remember(ms []member) {
	if len(ms) == 0 || len(ms) > maxKeyOrder {
		return
	}
	keys := o[len(ms)%keyOrderSlots][:0]
	for i := range ms {
		keys = append(keys, ms[i].key)
	}
	o[len(ms)%keyOrderSlots] = keys
}

// reset forgets every list, dropping the key references.
func (o *keyOrders) reset() {
	for i := range o {
		clear(o[i])
		o[i] = o[i][:0]
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
