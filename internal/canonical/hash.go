package canonical

import (
	"crypto/sha256"
	"encoding/hex"
	"sync"
)

// maxPooledBuffer is the largest buffer returned to the pool; encoders that
// grew past it for one huge value are dropped so the pool stays small.
const maxPooledBuffer = 4 << 20

var encoderPool = sync.Pool{New: func() any { return &encoder{buf: make([]byte, 0, 4096)} }}

func getEncoder() *encoder {
	e := encoderPool.Get().(*encoder)
	e.buf = e.buf[:0]
	e.keys = e.keys[:0]
	e.pairs = e.pairs[:0]
	return e
}

func putEncoder(e *encoder) {
	if cap(e.buf) > maxPooledBuffer || cap(e.keys) > maxPooledBuffer/16 || cap(e.pairs) > maxPooledBuffer/32 {
		return
	}
	clear(e.keys[:cap(e.keys)]) // drop key references so pooled scratch pins no strings
	encoderPool.Put(e)
}

// Hash returns the lowercase hex SHA-256 of the canonical encoding of v. Any
// error wraps ErrNotCanonical. Safe for concurrent use.
func Hash(v any) (string, error) {
	e := getEncoder()
	defer putEncoder(e)
	if err := e.value(v, 0); err != nil {
		return "", err
	}
	return HashBytes(e.buf), nil
}

// HashBytes returns the lowercase hex SHA-256 of b.
func HashBytes(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
