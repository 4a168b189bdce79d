package canonical

import (
	"crypto/sha256"
	"encoding/hex"
	"sync"
)

// maxPooledBuffer is the largest buffer returned to the pool; encoders that
// grew past it for one huge value are dropped so the pool stays small.
const maxPooledBuffer = 4 << 20

// encoderPool keeps encoders with their buffers: kept by the speed rule
// (docs/architecture.md, "Speed work") on BenchmarkFairProcessor/generated=100
// (internal/consumer).
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
	// Drop key and value references so pooled scratch pins no memory.
	clear(e.keys[:cap(e.keys)])
	clear(e.pairs[:e.pairsHigh])
	e.pairsHigh = 0
	e.orders.reset()
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

// resetDigest readies the encoder's digest, which is kept with the pooled
// encoder so EncodeHashWithout allocates nothing for it.
func (e *encoder) resetDigest() {
	if e.digest == nil {
		e.digest = sha256.New()
	}
	e.digest.Reset()
}

// HashBytes returns the lowercase hex SHA-256 of b.
func HashBytes(b []byte) string {
	sum := sha256.Sum256(b)
	return hexSum(sum[:])
}

// hexSum returns sum in lowercase hex with a single allocation.
func hexSum(sum []byte) string {
	var text [2 * sha256.Size]byte
	hex.Encode(text[:], sum)
	return string(text[:])
}

// EncodeHashWithout returns the canonical encoding of the object m and the
// hash Hash would return for m without its member omit, from one encoding:
// the omitted member's bytes are left out of the hashed input. It is for
// values stored whole but hashed without a member (a checkpoint without its
// created_at). Any error wraps ErrNotCanonical.
func EncodeHashWithout(m map[string]any, omit string) ([]byte, string, error) {
	e := getEncoder()
	defer putEncoder(e)
	e.collect(m) // the keys are written here, so no order is kept
	members := e.pairs
	// cut is the omitted member with one adjacent comma: [cutFrom, cutTo).
	cutFrom, cutTo := -1, -1
	e.buf = append(e.buf, '{')
	for i := range members {
		from := len(e.buf)
		if i > 0 {
			e.buf = append(e.buf, ',')
		}
		if err := e.string(members[i].key); err != nil {
			return nil, "", err
		}
		e.buf = append(e.buf, ':')
		if err := e.value(members[i].value, 1); err != nil {
			return nil, "", err
		}
		if members[i].key == omit {
			cutFrom, cutTo = from, len(e.buf)
			if i == 0 && len(members) > 1 {
				cutTo++ // the comma that opens the next member
			}
		}
	}
	e.buf = append(e.buf, '}')
	e.resetDigest()
	h := e.digest
	if cutFrom < 0 {
		h.Write(e.buf)
	} else {
		h.Write(e.buf[:cutFrom])
		h.Write(e.buf[cutTo:])
	}
	return append([]byte(nil), e.buf...), hexSum(h.Sum(e.sum[:0])), nil
}
