package offline

import (
	"encoding/json"
)

// callArgs are the arguments of a tool call this package reads: the first
// non-empty string among the keys of each field, in the order listed.
type callArgs struct {
	command string // command, cmd
	path    string // path, file, file_path, filename
	target  string // path as above, else url, query, pattern: what a label names
}

// maxArgumentBytes bounds the JSON text of arguments this package parses.
const maxArgumentBytes = 64 << 10

// arguments reads a call's arguments: model APIs carry them as JSON text,
// some hosts as an object. Anything else, or text that is not a JSON
// object, has none.
func arguments(v any) callArgs {
	switch x := v.(type) {
	case map[string]any:
		return argumentsOf(x)
	case string:
		var m map[string]any
		if len(x) <= maxArgumentBytes && json.Unmarshal([]byte(x), &m) == nil {
			return argumentsOf(m)
		}
	}
	return callArgs{}
}

// argumentsOf reads the arguments from a decoded object.
func argumentsOf(m map[string]any) callArgs {
	first := func(keys ...string) string {
		for _, k := range keys {
			if s, _ := m[k].(string); s != "" {
				return s
			}
		}
		return ""
	}
	a := callArgs{command: first("command", "cmd"), path: first("path", "file", "file_path", "filename")}
	a.target = a.path
	if a.target == "" {
		a.target = first("url", "query", "pattern")
	}
	return a
}
