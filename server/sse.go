package server

import (
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/cairnhq/cairn"
)

// sseCache caches the Server-Sent Events message of each recorded event, so
// that the subscribers of a session share one encoding per event (a
// recorded event never changes: the log is append-only and ids are never
// reused). Text deltas (seq 0) are encoded per stream.
type sseCache struct {
	mu   sync.Mutex
	m    map[sseKey]*sseEntry
	ring []sseKey // the keys in insertion order; the oldest is evicted
	next int
	// encoded counts encodings, for tests.
	encoded atomic.Int64
}

// sseEntry is encoded once, by whichever stream gets there first.
type sseEntry struct {
	once sync.Once
	b    []byte
}

type sseKey struct {
	session string
	seq     int64
}

// sseKept bounds the cache: the last events of the busiest sessions.
const sseKept = 4096

// message returns ev's SSE message: "id: SEQ", "event: TYPE", "data: JSON".
func (f *sseCache) message(session string, ev cairn.Event) []byte {
	if ev.Seq == 0 {
		return f.encode(ev)
	}
	k := sseKey{session, ev.Seq}
	f.mu.Lock()
	e, ok := f.m[k]
	if !ok {
		if f.m == nil {
			f.m = make(map[sseKey]*sseEntry, sseKept)
		}
		if len(f.ring) < sseKept {
			f.ring = append(f.ring, k)
		} else {
			delete(f.m, f.ring[f.next])
			f.ring[f.next] = k
			f.next = (f.next + 1) % sseKept
		}
		e = &sseEntry{}
		f.m[k] = e
	}
	f.mu.Unlock()
	e.once.Do(func() { e.b = f.encode(ev) })
	return e.b
}

func (f *sseCache) encode(ev cairn.Event) []byte {
	f.encoded.Add(1)
	data, _ := json.Marshal(ev)
	if ev.Seq > 0 {
		return fmt.Appendf(nil, "id: %d\nevent: %s\ndata: %s\n\n", ev.Seq, ev.Type, data)
	}
	return fmt.Appendf(nil, "event: %s\ndata: %s\n\n", ev.Type, data)
}
