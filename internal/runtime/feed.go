package runtime

import (
	"context"
	"sync"

	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/store"
)

// WatchSessions is cairn.Runner.WatchSessions (documented there).
func (r *Runner) WatchSessions(ctx context.Context) <-chan session.Change {
	return r.feed.subscribe(ctx)
}

// sessionFeed fans the store's change feed out to WatchSessions callers,
// reading each changed session's head once whatever the number of watchers.
type sessionFeed struct {
	mu      sync.Mutex
	subs    map[*feedSub]struct{}
	pending map[string]bool // sessions changed since the worker last read them
	resync  bool
	wake    chan struct{}
	done    <-chan struct{} // the runner's background context ends
}

type feedSub struct {
	ch     chan session.Change
	missed bool // a change was dropped: send Resync when there is room
}

// feedBuffer is each watcher's channel capacity; past it the watcher is
// sent Resync instead of the changes it could not take.
const feedBuffer = 256

func (f *sessionFeed) init(done <-chan struct{}) {
	f.subs, f.pending, f.wake, f.done = map[*feedSub]struct{}{}, map[string]bool{}, make(chan struct{}, 1), done
}

func (f *sessionFeed) subscribe(ctx context.Context) <-chan session.Change {
	sub := &feedSub{ch: make(chan session.Change, feedBuffer)}
	f.mu.Lock()
	f.subs[sub] = struct{}{}
	f.mu.Unlock()
	go func() {
		select {
		case <-ctx.Done():
		case <-f.done:
		}
		f.mu.Lock()
		delete(f.subs, sub)
		close(sub.ch)
		f.mu.Unlock()
	}()
	return sub.ch
}

// changed notes a change from the store's feed.
func (f *sessionFeed) changed(c store.Change) {
	f.mu.Lock()
	if len(f.subs) == 0 {
		f.mu.Unlock()
		return
	}
	if c.SessionID == "" {
		f.resync = true
	} else if !c.CancelRequested {
		f.pending[c.SessionID] = true
	}
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// run reads the changed sessions and sends them to every watcher until ctx
// ends.
func (f *sessionFeed) run(ctx context.Context, read func(ctx context.Context, id string) (*Session, error)) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-f.wake:
		}
		f.mu.Lock()
		pending, resync := f.pending, f.resync
		f.pending, f.resync = map[string]bool{}, false
		f.mu.Unlock()
		if resync {
			f.send(session.Change{Resync: true})
		}
		for id := range pending {
			s, err := read(ctx, id)
			if err != nil {
				continue // gone, or the store failed: the next change comes back
			}
			f.send(session.Change{Session: s})
		}
	}
}

// send gives c to every watcher without blocking; a full one gets Resync
// once it has room again.
func (f *sessionFeed) send(c session.Change) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for sub := range f.subs {
		if sub.missed {
			select {
			case sub.ch <- session.Change{Resync: true}:
				sub.missed = false
			default:
				continue
			}
		}
		select {
		case sub.ch <- c:
		default:
			sub.missed = true
		}
	}
}
