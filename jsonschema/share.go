package jsonschema

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Share describes once, under the $defs of the schema s, every object shape
// s holds in more than one place, and puts a reference to it in each of
// those places: a reader sees one type where it recurs, and a client that
// generates types from the schema gets one type. names names the shapes by
// their property names, sorted and joined by ","; a shape held twice that
// names lacks panics, so a new repeated shape is named where it appears.
func Share(s map[string]any, names map[string]string) {
	seen := map[string]int{}
	countShapes(s, seen, true)
	defs := map[string]any{}
	shareIn(s, seen, names, defs, true)
	if len(defs) > 0 {
		s["$defs"] = defs
	}
}

// shapeKey is an object schema's identity: its JSON, keys sorted.
func shapeKey(m map[string]any) string {
	b, err := json.Marshal(m)
	if err != nil {
		panic(fmt.Sprintf("jsonschema: schema is not JSON: %v", err))
	}
	return string(b)
}

// countShapes counts, by shapeKey, the object schemas (those with
// properties) below v, v itself aside when it is the root.
func countShapes(v any, seen map[string]int, root bool) {
	switch x := v.(type) {
	case map[string]any:
		if _, ok := x["properties"]; ok && !root {
			seen[shapeKey(x)]++
		}
		for _, child := range x {
			countShapes(child, seen, false)
		}
	case []any:
		for _, child := range x {
			countShapes(child, seen, false)
		}
	}
}

// shareIn replaces, below v, each object schema seen more than once with a
// reference to its definition in defs.
func shareIn(v any, seen map[string]int, names map[string]string, defs map[string]any, root bool) any {
	switch x := v.(type) {
	case map[string]any:
		if props, ok := x["properties"].(map[string]any); ok && !root && seen[shapeKey(x)] > 1 {
			name := names[strings.Join(slices.Sorted(maps.Keys(props)), ",")]
			if name == "" {
				panic(fmt.Sprintf("jsonschema: the shape with properties %v stands in several places and has no name", slices.Sorted(maps.Keys(props))))
			}
			if _, done := defs[name]; !done {
				defs[name] = shareIn(x, seen, names, defs, true)
			}
			return map[string]any{"$ref": "#/$defs/" + name}
		}
		for k, child := range x {
			x[k] = shareIn(child, seen, names, defs, false)
		}
		return x
	case []any:
		for i, child := range x {
			x[i] = shareIn(child, seen, names, defs, false)
		}
	}
	return v
}
