package server

import (
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/cairnhq/cairn"
)

// frames caches the Server-Sent Events frame of each recorded event, so
// that the subscribers of a session share one encoding per event (a
// recorded event never changes: the log is append-only and ids are never
// reused). Text deltas (seq 0) are encoded per stream.
type frames struct {
	mu   sync.Mutex
	m    map[frameKey]*frameEntry
	ring []frameKey // the keys in insertion order; the oldest is evicted
	next int
	// encoded counts encodings, for tests.
	encoded atomic.Int64
}

// frameEntry is encoded once, by whichever stream gets there first.
type frameEntry struct {
	once sync.Once
	b    []byte
}

type frameKey struct {
	session string
	seq     int64
}

// framesKept bounds the cache: the last events of the busiest sessions.
const framesKept = 4096

// frame returns ev's SSE frame: "id: SEQ", "event: TYPE", "data: JSON".
func (f *frames) frame(session string, ev cairn.Event) []byte {
	if ev.Seq == 0 {
		return f.encode(ev)
	}
	k := frameKey{session, ev.Seq}
	f.mu.Lock()
	e, ok := f.m[k]
	if !ok {
		if f.m == nil {
			f.m = make(map[frameKey]*frameEntry, framesKept)
		}
		if len(f.ring) < framesKept {
			f.ring = append(f.ring, k)
		} else {
			delete(f.m, f.ring[f.next])
			f.ring[f.next] = k
			f.next = (f.next + 1) % framesKept
		}
		e = &frameEntry{}
		f.m[k] = e
	}
	f.mu.Unlock()
	e.once.Do(func() { e.b = f.encode(ev) })
	return e.b
}

func (f *frames) encode(ev cairn.Event) []byte {
	f.encoded.Add(1)
	data, _ := json.Marshal(ev)
	if ev.Seq > 0 {
		return fmt.Appendf(nil, "id: %d\nevent: %s\ndata: %s\n\n", ev.Seq, ev.Type, data)
	}
	return fmt.Appendf(nil, "event: %s\ndata: %s\n\n", ev.Type, data)
}
