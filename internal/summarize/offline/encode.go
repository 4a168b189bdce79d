package offline

import (
	"bytes"
	"encoding/json"
	"sync"
)

// appendJSON appends what encoding/json writes for v with HTML escaping
// off: the output is measured in it (never less than its canonical size:
// the same keys and values, a nil list as null, escapes at least as long),
// and list entries are compared by it. v is a semantic or a part of one,
// which always encodes.
func appendJSON(b []byte, v any) []byte {
	e := encoders.Get().(*encoder)
	defer encoders.Put(e)
	e.buf.Reset()
	if err := e.enc.Encode(v); err != nil {
		panic("offline: " + err.Error())
	}
	return append(b, bytes.TrimSuffix(e.buf.Bytes(), []byte("\n"))...)
}

// encoder is a json.Encoder with HTML escaping off and the buffer it
// writes to, kept for reuse: trimming encodes an entry at a time.
type encoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

var encoders = sync.Pool{New: func() any {
	e := new(encoder)
	e.enc = json.NewEncoder(&e.buf)
	e.enc.SetEscapeHTML(false)
	return e
}}
