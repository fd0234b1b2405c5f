package store

import (
	"context"
	"sync"
)

// Feed fans Changes out to watchers. Backends embed one, call Publish after
// each commit they make or learn of, and return Watch's channels from it. A
// watcher that falls behind is not blocked on: it gets a resync Change
// (empty SessionID) before its next delivery. The zero value is ready.
type Feed struct {
	mu       sync.Mutex
	watchers map[*watcher]struct{}
}

type watcher struct {
	ch   chan Change
	lost bool
}

// feedBuffer is each watcher's backlog before it is told to resync.
const feedBuffer = 1024

// Watch registers a watcher until ctx ends.
func (f *Feed) Watch(ctx context.Context) <-chan Change {
	w := &watcher{ch: make(chan Change, feedBuffer)}
	f.mu.Lock()
	if f.watchers == nil {
		f.watchers = map[*watcher]struct{}{}
	}
	f.watchers[w] = struct{}{}
	f.mu.Unlock()
	context.AfterFunc(ctx, func() {
		f.mu.Lock()
		delete(f.watchers, w)
		f.mu.Unlock()
		close(w.ch)
	})
	return w.ch
}

// Watching reports whether anyone watches (backends skip work otherwise).
func (f *Feed) Watching() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.watchers) > 0
}

// Publish delivers c to every watcher without blocking.
func (f *Feed) Publish(c Change) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for w := range f.watchers {
		if w.lost {
			select {
			case w.ch <- Change{}:
				w.lost = false
			default:
				continue
			}
		}
		select {
		case w.ch <- c:
		default:
			w.lost = true
		}
	}
}
