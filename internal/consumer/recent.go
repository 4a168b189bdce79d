package consumer

import (
	"encoding/json"
	"sync"
)

// recentBytes bounds the checkpoint bodies recentCheckpoints keeps.
const recentBytes = 8 << 20

// recentCheckpoints keeps the bodies of the checkpoints this processor
// activated last, so that the next compaction of the same lane takes the
// active checkpoint's semantic from memory instead of reading the
// checkpoint back (activeSemantic): a lane is compacted again and again,
// and the read is a round trip for 10 to 30 KB. A checkpoint never
// changes once a head names it, so a kept body cannot go stale; the hash
// is compared anyway. It holds at most recentBytes, dropping the oldest
// first.
type recentCheckpoints struct {
	mu    sync.Mutex
	byID  map[string]recentCheckpoint
	order []string // ids, oldest first
	bytes int
}

type recentCheckpoint struct {
	hash string
	body json.RawMessage
}

func newRecentCheckpoints() *recentCheckpoints {
	return &recentCheckpoints{byID: map[string]recentCheckpoint{}}
}

// put keeps body as the checkpoint id with hash.
func (r *recentCheckpoints) put(id, hash string, body json.RawMessage) {
	if len(body) > recentBytes/8 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.byID[id]; ok {
		return
	}
	r.byID[id] = recentCheckpoint{hash: hash, body: body}
	r.order = append(r.order, id)
	r.bytes += len(body)
	for r.bytes > recentBytes {
		oldest := r.order[0]
		r.order = r.order[1:]
		r.bytes -= len(r.byID[oldest].body)
		delete(r.byID, oldest)
	}
}

// get returns the body of checkpoint id if it is kept with hash.
func (r *recentCheckpoints) get(id, hash string) (json.RawMessage, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.byID[id]
	if !ok || c.hash != hash {
		return nil, false
	}
	return c.body, true
}
