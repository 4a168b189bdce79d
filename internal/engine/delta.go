package engine

import (
	"slices"

	"github.com/cairnhq/cairn/canonical"
	"github.com/cairnhq/cairn/jsonwire"
)

// Reported-usage delta accounting, version 2: the provider's
// input count for a previous request of the same lane plus the bytes of what
// changed since, judged from component descriptors the application supplies.
// Any malformed input silently disables it; it never fails a budget.

type appendItem struct {
	id    string
	hash  string
	bytes int64
}

type descriptor struct {
	exact bool
	bytes int64 // exact bytes, or the sum of append item bytes
	hash  string
	items []appendItem
}

// deltaV2 returns the baseline tokens and the delta when both inputs are
// valid, else ok = false.
func deltaV2(baselineRaw, currentRaw any) (baseline, delta int64, ok bool) {
	b, isMap := baselineRaw.(map[string]any)
	if !isMap {
		return 0, 0, false
	}
	if version, isInt := canonical.Int(b["version"]); !isInt || version != 2 {
		return 0, 0, false
	}
	baseline, isInt := canonical.Int(b["input_tokens"])
	if !isInt || baseline < 0 {
		return 0, 0, false
	}
	previous, isMap := b["components"].(map[string]any)
	current, isMap2 := currentRaw.(map[string]any)
	if !isMap || !isMap2 || len(previous) == 0 || len(current) != len(previous) {
		return 0, 0, false
	}
	for name, raw := range current {
		prevRaw, same := previous[name]
		if !same || name == "" {
			return 0, 0, false
		}
		cur, valid := parseDescriptor(raw)
		if !valid {
			return 0, 0, false
		}
		prev, prevValid := parseDescriptor(prevRaw)
		delta = saturatingAdd(delta, charge(cur, prev, prevValid))
	}
	return baseline, delta, true
}

// charge is what the current component costs beyond the previous request.
func charge(cur, prev descriptor, prevValid bool) int64 {
	if !prevValid || cur.exact != prev.exact {
		return cur.bytes
	}
	if cur.exact {
		if cur.bytes == prev.bytes && cur.hash == prev.hash {
			return 0
		}
		return cur.bytes
	}
	if len(prev.items) > len(cur.items) || !slices.Equal(cur.items[:len(prev.items)], prev.items) {
		return cur.bytes
	}
	var added int64
	for _, item := range cur.items[len(prev.items):] {
		added = saturatingAdd(added, item.bytes)
	}
	return added
}

func parseDescriptor(raw any) (descriptor, bool) {
	m, isMap := raw.(map[string]any)
	if !isMap {
		return descriptor{}, false
	}
	switch m["kind"] {
	case "exact":
		n, isInt := canonical.Int(m["bytes"])
		hash, isString := m["hash"].(string)
		if !isInt || n < 0 || !isString || !jsonwire.IsHash64(hash) {
			return descriptor{}, false
		}
		return descriptor{exact: true, bytes: n, hash: hash}, true
	case "append":
		return parseAppend(m["items"])
	}
	return descriptor{}, false
}

func parseAppend(raw any) (descriptor, bool) {
	list, isList := raw.([]any)
	if !isList {
		return descriptor{}, false
	}
	d := descriptor{items: make([]appendItem, 0, len(list))}
	seen := make(map[string]bool, len(list))
	for _, el := range list {
		m, isMap := el.(map[string]any)
		if !isMap {
			return descriptor{}, false
		}
		id, isString := m["id"].(string)
		hash, isHash := m["hash"].(string)
		n, isInt := canonical.Int(m["bytes"])
		if !isString || id == "" || seen[id] || !isHash || !jsonwire.IsHash64(hash) || !isInt || n < 0 {
			return descriptor{}, false
		}
		seen[id] = true
		d.items = append(d.items, appendItem{id: id, hash: hash, bytes: n})
		d.bytes = saturatingAdd(d.bytes, n)
	}
	return d, true
}
