package offline

// ordered is a keyed list whose order is the order of last mention: put
// moves an entry to the newest end, so dropping from the front drops the
// least recently mentioned entries first. The zero value is an empty list;
// it allocates on the first put, which many lists of a summary never see.
type ordered[T any] struct {
	keys  []string // mention log; an entry lives at the index in its node
	nodes map[string]*node[T]
}

type node[T any] struct {
	v   T
	pos int
}

// firstMentions is the first capacity of the mention log.
const firstMentions = 8

// get returns the entry for key, if any.
func (o *ordered[T]) get(key string) (T, bool) {
	if n := o.nodes[key]; n != nil {
		return n.v, true
	}
	var zero T
	return zero, false
}

// put stores v under key as the newest entry.
func (o *ordered[T]) put(key string, v T) {
	n := o.nodes[key]
	if n == nil {
		if o.nodes == nil {
			o.nodes = map[string]*node[T]{}
			o.keys = make([]string, 0, firstMentions)
		}
		n = new(node[T])
		o.nodes[key] = n
	}
	n.v, n.pos = v, len(o.keys)
	o.keys = append(o.keys, key)
	if len(o.keys) > 4*len(o.nodes)+64 {
		o.compact()
	}
}

// remove deletes key's entry.
func (o *ordered[T]) remove(key string) { delete(o.nodes, key) }

// list returns the entries, least recently mentioned first.
func (o *ordered[T]) list() []T {
	out := make([]T, 0, len(o.nodes))
	for i, k := range o.keys {
		if n := o.nodes[k]; n != nil && n.pos == i {
			out = append(out, n.v)
		}
	}
	return out
}

// compact drops stale mentions so the log stays proportional to the entries.
func (o *ordered[T]) compact() {
	live := o.keys[:0:0]
	for i, k := range o.keys {
		if n := o.nodes[k]; n != nil && n.pos == i {
			n.pos = len(live)
			live = append(live, k)
		}
	}
	o.keys = live
}

// cite returns ids with id appended as the newest citation (moved there if
// already present), keeping at most max ids, newest last.
func cite(ids []string, id string, max int) []string {
	out := make([]string, 0, len(ids)+1)
	for _, x := range ids {
		if x != id {
			out = append(out, x)
		}
	}
	out = append(out, id)
	if len(out) > max {
		out = out[len(out)-max:]
	}
	return out
}

// citeOwned is cite for a list no one else holds: it reuses the list's
// array instead of copying it.
func citeOwned(ids []string, id string, max int) []string {
	out := ids[:0]
	for _, x := range ids {
		if x != id {
			out = append(out, x)
		}
	}
	out = append(out, id)
	if len(out) > max {
		out = out[:copy(out, out[len(out)-max:])]
	}
	return out
}

// citeAll merges more into ids, in order, as by cite.
func citeAll(ids, more []string, max int) []string {
	for _, id := range more {
		ids = cite(ids, id, max)
	}
	if ids == nil {
		ids = []string{}
	}
	return ids
}
