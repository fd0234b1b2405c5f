package local

import (
	"sync"

	"github.com/cairnhq/cairn/internal/engine"
)

// DefaultCacheBytes bounds the session states a Runner keeps in memory.
const DefaultCacheBytes = 64 << 20

// stateCache keeps session states between requests so a resume need not
// replay the log. A state is taken out while in use (the engine mutates it)
// and put back only when everything in it is recorded; load checks it
// against the store's seq first. It holds at most maxBytes (a state's size
// is its log's: snapshot plus tail, which is what a replay would decode) and
// maxEntries states, evicting the least recently used.
type stateCache struct {
	mu         sync.Mutex
	maxEntries int // <= 0: keep nothing
	maxBytes   int
	bytes      int
	entries    int
	// lru is a ring through the cached states, most recent after it; an
	// entry is its own list element, one allocation a put (container/list
	// took two).
	lru cached
	m   map[string]*cached
}

type cached struct {
	st         *engine.State
	bytes      int
	prev, next *cached
}

// stateBytes estimates what a state holds in memory.
func stateBytes(st *engine.State) int {
	return st.Log.SnapshotBytes + st.Log.TailBytes + 512
}

func (c *stateCache) take(id string) *engine.State {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.m[id]
	if e == nil {
		return nil
	}
	c.remove(e)
	return e.st
}

func (c *stateCache) remove(e *cached) {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
	delete(c.m, e.st.SessionID)
	c.bytes -= e.bytes
	c.entries--
}

func (c *stateCache) put(st *engine.State) {
	if c.maxEntries <= 0 || st == nil || st.SessionID == "" {
		return
	}
	n := stateBytes(st)
	if n > c.maxBytes {
		return // larger than the whole cache: a replay is the cheaper miss
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[string]*cached)
		c.lru.prev, c.lru.next = &c.lru, &c.lru
	}
	if e := c.m[st.SessionID]; e != nil {
		c.remove(e)
	}
	for c.entries > 0 && (c.entries >= c.maxEntries || c.bytes+n > c.maxBytes) {
		c.remove(c.lru.prev) // the least recently used
	}
	e := &cached{st: st, bytes: n, prev: &c.lru, next: c.lru.next}
	c.lru.next.prev, c.lru.next = e, e
	c.m[st.SessionID] = e
	c.bytes += n
	c.entries++
}

// size reports the states and bytes held.
func (c *stateCache) size() (entries, bytes int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.entries, c.bytes
}
