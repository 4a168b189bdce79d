package events

import (
	"encoding/json"
	"sync"
	"unicode/utf8"

	"github.com/cairnhq/cairn/canonical"
)

// isID reports whether s is an id of the contract: 1..200 bytes.
func isID(s string) bool { return len(s) >= 1 && len(s) <= 200 }

// isNamespace reports whether s is 1..200 bytes of valid UTF-8.
func isNamespace(s string) bool { return isID(s) && utf8.ValidString(s) }

// plainValue is v as encoding/json writes it (its json tags name the
// members), decoded back into a canonical value. canonical.Decode keeps
// numbers as the text encoding/json wrote, which round-trips, so the
// canonical bytes are those of the typed values.
func plainValue(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return canonical.Decode(b)
}

// canonicalJSON is the canonical encoding of plainValue(v).
func canonicalJSON(v any) ([]byte, error) {
	p, err := plainValue(v)
	if err != nil {
		return nil, err
	}
	return canonical.Encode(p)
}

// scratchPool pools the buffers an event's hashes are encoded into while
// it is validated; a buffer that grew past maxScratch (for one unusually
// large event) is dropped instead of being kept alive by the pool.
type scratchPool struct{ pool sync.Pool }

const maxScratch = 2 << 20

var scratch = &scratchPool{}

func (p *scratchPool) get() *[]byte {
	if bp, ok := p.pool.Get().(*[]byte); ok {
		*bp = (*bp)[:0]
		return bp
	}
	b := make([]byte, 0, 4096)
	return &b
}

func (p *scratchPool) put(bp *[]byte, b []byte) {
	if cap(b) <= maxScratch {
		*bp = b[:0]
		p.pool.Put(bp)
	}
}
