package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

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

// pump writes an SSE stream of what follow yields — each item as msg words
// it, nil writing nothing — until the sequence ends, the client leaves, a
// write fails, the server stops (CloseStreams: it says so with a retry
// hint), or, with idle set, nothing comes for that long (it says so). A
// keep-alive comment goes out every heartbeat in between. first, if not
// empty, is written once follow has subscribed, before any item.
//
// The sequence is ranged over in a goroutine of its own that hands the
// items over a channel, so that the stream can wait on them, the heartbeat
// and shutdown at once, and flush once per burst (when the channel is
// drained) rather than once per message.
func pump[T any](ctx context.Context, s *Server, w http.ResponseWriter, flush func(), idle time.Duration,
	follow func(ctx context.Context) iter.Seq2[T, error], msg func(T) []byte, first string) {
	ctx, cancel := context.WithCancel(ctx)
	seq := follow(ctx)
	items := make(chan T, 64)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() {
		defer close(items)
		for v, err := range seq {
			if err != nil {
				return
			}
			select {
			case items <- v:
			case <-ctx.Done():
				return
			}
		}
	})
	if first != "" {
		io.WriteString(w, first)
		flush()
	}
	var idleTimer *time.Timer
	var idleC <-chan time.Time // nil, never ready, without idle
	if idle > 0 {
		idleTimer = time.NewTimer(idle)
		defer idleTimer.Stop()
		idleC = idleTimer.C
	}
	tick := time.NewTicker(s.heartbeat)
	defer tick.Stop()
	for {
		var b []byte
		select {
		case <-ctx.Done():
			return
		case <-s.stopping:
			stoppingMessage(w, flush)
			return
		case <-idleC:
			extendWrite(w)
			io.WriteString(w, ": idle: no event for a while; reconnect with Last-Event-ID to go on\n\n")
			flush()
			return
		case <-tick.C:
			b = []byte(": keep-alive\n\n")
		case v, open := <-items:
			if !open {
				return
			}
			if idleTimer != nil {
				idleTimer.Reset(idle)
			}
			if b = msg(v); b == nil {
				continue
			}
		}
		extendWrite(w)
		if _, err := w.Write(b); err != nil {
			return
		}
		if len(items) == 0 {
			flush()
		}
	}
}
