package engine

import "sync"

// bufferPool pools byte buffers between compactions. A buffer that grew
// past max (for one unusually large lane or event) is dropped instead of
// being kept alive by the pool.
type bufferPool struct {
	pool    sync.Pool
	initial int // capacity of a new buffer
	max     int
}

// get returns an empty pooled buffer.
func (p *bufferPool) get() *[]byte {
	if bp, ok := p.pool.Get().(*[]byte); ok {
		*bp = (*bp)[:0]
		return bp
	}
	b := make([]byte, 0, p.initial)
	return &b
}

// put pools b, the buffer of bp after use, unless it grew past max.
func (p *bufferPool) put(bp *[]byte, b []byte) {
	if cap(b) <= p.max {
		*bp = b[:0]
		p.pool.Put(bp)
	}
}

// renderBuffers hold the engine's own canonical renderings and lane views.
// Their max keeps the renderings of the largest lanes (10 000 events of a
// few hundred bytes) pooled, so that their cost stays proportional to the
// lane's.
var renderBuffers = &bufferPool{max: 16 << 20}

// scratchBuffers hold the encodings of single event views while they are
// measured or hashed.
var scratchBuffers = &bufferPool{initial: 4096, max: 2 << 20}
