package local

import (
	"context"
	"sync"

	"github.com/cairnhq/cairn/internal/fanout"
	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/store"
)

// sessionFeed fans the store's change feed out to Changes callers,
// reading each changed session's head once whatever the number of watchers.
type sessionFeed struct {
	out     *fanout.Fanout[session.Change]
	mu      sync.Mutex
	pending map[string]bool // sessions changed since the worker last read them
	resync  bool
	wake    chan struct{}
	done    context.Context // the runner's background context
}

func (f *sessionFeed) init(background context.Context) {
	f.out = fanout.New(0, session.Change{Resync: true})
	f.pending, f.wake, f.done = map[string]bool{}, make(chan struct{}, 1), background
}

// subscribe follows the feed until ctx ends or the runner closes.
func (f *sessionFeed) subscribe(ctx context.Context) <-chan session.Change {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(f.done, cancel)
	context.AfterFunc(ctx, func() { stop() })
	return f.out.Subscribe(ctx)
}

// changed notes a change from the store's feed.
func (f *sessionFeed) changed(c store.Change) {
	if !f.out.Subscribed() {
		return
	}
	f.mu.Lock()
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

// run reads the changed sessions and publishes them until ctx ends.
func (f *sessionFeed) run(ctx context.Context, read func(ctx context.Context, id string) (*session.Session, error)) {
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
			f.out.Publish(session.Change{Resync: true})
		}
		for id := range pending {
			s, err := read(ctx, id)
			if err != nil {
				continue // gone, or the store failed: the next change comes back
			}
			f.out.Publish(session.Change{Session: s})
		}
	}
}
