package cairn

import (
	"sync"

	"github.com/cairnhq/cairn/internal/engine"
)

// stateCache keeps session states between requests so a resume need not
// replay the log. A state is taken out while in use (the engine mutates it)
// and put back only when everything in it is recorded; load checks it
// against the store's seq first.
type stateCache struct {
	mu  sync.Mutex
	max int // <= 0: keep nothing
	m   map[string]*engine.State
}

func (c *stateCache) take(id string) *engine.State {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.m[id]
	delete(c.m, id)
	return st
}

func (c *stateCache) put(st *engine.State) {
	if c.max <= 0 || st == nil || st.SessionID == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[string]*engine.State)
	}
	for id := range c.m {
		if len(c.m) < c.max {
			break
		}
		delete(c.m, id) // an arbitrary victim: cheap, and a miss only costs a replay
	}
	c.m[st.SessionID] = st
}
