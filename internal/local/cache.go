package local

import (
	"container/list"
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
	lru        list.List // of *cached, most recent at the front
	m          map[string]*list.Element
}

type cached struct {
	st    *engine.State
	bytes int
}

// stateBytes estimates what a state holds in memory.
func stateBytes(st *engine.State) int {
	return st.Log.SnapshotBytes + st.Log.TailBytes + 512
}

func (c *stateCache) take(id string) *engine.State {
	c.mu.Lock()
	defer c.mu.Unlock()
	el := c.m[id]
	if el == nil {
		return nil
	}
	c.remove(el)
	return el.Value.(*cached).st
}

func (c *stateCache) remove(el *list.Element) {
	e := c.lru.Remove(el).(*cached)
	delete(c.m, e.st.SessionID)
	c.bytes -= e.bytes
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
		c.m = make(map[string]*list.Element)
	}
	if el := c.m[st.SessionID]; el != nil {
		c.remove(el)
	}
	for c.lru.Len() > 0 && (c.lru.Len() >= c.maxEntries || c.bytes+n > c.maxBytes) {
		c.remove(c.lru.Back())
	}
	c.m[st.SessionID] = c.lru.PushFront(&cached{st: st, bytes: n})
	c.bytes += n
}

// size reports the states and bytes held.
func (c *stateCache) size() (entries, bytes int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len(), c.bytes
}
