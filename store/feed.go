package store

import (
	"context"
	"sync"

	"github.com/cairnhq/cairn/internal/fanout"
)

// Feed fans Changes out to watchers. Backends embed one, call Publish after
// each commit they make or learn of, and return Watch's channels from it. A
// watcher that falls behind is not blocked on: it gets a resync Change
// (empty SessionID) before its next delivery. The zero value is ready.
type Feed struct {
	once sync.Once
	out  *fanout.Fanout[Change]
}

// feedBuffer is each watcher's backlog before it is told to resync: larger
// than the fan-out's default, because every commit of every process on the
// store passes through it.
const feedBuffer = 1024

func (f *Feed) fanout() *fanout.Fanout[Change] {
	f.once.Do(func() { f.out = fanout.New(feedBuffer, Change{}) })
	return f.out
}

// Watch registers a watcher until ctx ends.
func (f *Feed) Watch(ctx context.Context) <-chan Change { return f.fanout().Subscribe(ctx) }

// WatchSome registers a watcher of the changes want reports true for (see
// SelectiveWatcher).
func (f *Feed) WatchSome(ctx context.Context, want func(Change) bool) <-chan Change {
	return f.fanout().SubscribeFunc(ctx, func(c Change) bool { return c.SessionID == "" || want(c) })
}

// Watching reports whether anyone watches (backends skip work otherwise).
func (f *Feed) Watching() bool { return f.fanout().Subscribed() }

// Publish delivers c to every watcher without blocking.
func (f *Feed) Publish(c Change) { f.fanout().Publish(c) }
