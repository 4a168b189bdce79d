package tokens

import "sync"

// Cache remembers counts by key, up to a fixed number of entries, so that
// text sent again (a lane is resent whole with every compaction request)
// is counted once. It keeps two generations: lookups promote an entry from
// the older to the newer one, and when the newer fills up the older is
// dropped, so the entries used most recently survive. It is safe for
// concurrent use; its only state is its entries (no clock, no I/O).
type Cache[K comparable] struct {
	mu       sync.Mutex
	capacity int // of each generation
	current  map[K]int64
	previous map[K]int64
}

// NewCache returns a cache holding at most capacity entries (at least 2).
func NewCache[K comparable](capacity int) *Cache[K] {
	half := max(capacity/2, 1)
	return &Cache[K]{capacity: half, current: make(map[K]int64)}
}

// Get returns the count stored for key.
func (c *Cache[K]) Get(key K) (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n, ok := c.current[key]; ok {
		return n, true
	}
	n, ok := c.previous[key]
	if ok {
		c.put(key, n)
	}
	return n, ok
}

// Put stores the count for key.
func (c *Cache[K]) Put(key K, n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.put(key, n)
}

func (c *Cache[K]) put(key K, n int64) {
	if len(c.current) >= c.capacity {
		c.previous, c.current = c.current, make(map[K]int64, c.capacity)
	}
	c.current[key] = n
}

// Len is the number of entries held (a key in both generations counts
// twice).
func (c *Cache[K]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.current) + len(c.previous)
}

// SplitsAt reports whether a count of text may be split at i: whether
// every encoding's pre-tokenizer, and the word-piece estimate, end a piece
// at i whatever text comes before i-2 or after i+1, so that the count of
// text is the count of text[:i] plus that of text[i:]. That holds between
// two ASCII symbols and an ASCII letter (`{"a`) and between an ASCII letter
// and an ASCII symbol (`e}`); an apostrophe, which starts contractions,
// does not count as a symbol here.
func SplitsAt(text []byte, i int) bool {
	if i <= 0 || i >= len(text) {
		return i == 0 || i == len(text)
	}
	if asciiLetter(text[i]) {
		return i >= 2 && asciiSymbol(text[i-1]) && asciiSymbol(text[i-2])
	}
	return asciiLetter(text[i-1]) && asciiSymbol(text[i])
}

func asciiLetter(b byte) bool { return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' }

// asciiSymbol is a printable ASCII character that is no letter, digit,
// space or apostrophe.
func asciiSymbol(b byte) bool {
	return b > ' ' && b < 0x7f && b != '\'' && !asciiLetter(b) && !(b >= '0' && b <= '9')
}
