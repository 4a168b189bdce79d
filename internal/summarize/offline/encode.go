package offline

import (
	"bytes"
	"encoding/json"
)

// appendJSON appends what encoding/json writes for v with HTML escaping
// off: the output is measured in it (never less than its canonical size:
// the same keys and values, a nil list as null, escapes at least as long),
// and list entries are compared by it. v is a semantic or a part of one,
// which always encodes.
func appendJSON(b []byte, v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic("offline: " + err.Error())
	}
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
}
