// Package fanout hands each value published to every subscriber without
// ever blocking the publisher: the fan-out behind the store's change feed
// (store.Feed) and the runner's cross-session feed.
//
// A subscriber has a bounded buffer. One that falls behind misses values,
// and gets the fan-out's resync value once it has room again, before any
// newer value: it then knows to reload what it shows, and never mistakes a
// gap for quiet.
package fanout

import (
	"context"
	"sync"
)

// Buffer is each subscriber's capacity when New is given 0.
const Buffer = 256

// Fanout publishes values of type T. Its zero value is not ready; use New.
type Fanout[T any] struct {
	mu     sync.Mutex
	subs   map[*sub[T]]struct{}
	buffer int
	resync T
}

type sub[T any] struct {
	ch     chan T
	want   func(T) bool // nil: every value
	missed bool         // a value was dropped: send resync when there is room
}

// New returns a fan-out whose subscribers hold buffer values (0 means
// Buffer) and are sent resync after they missed some.
func New[T any](buffer int, resync T) *Fanout[T] {
	if buffer <= 0 {
		buffer = Buffer
	}
	return &Fanout[T]{subs: map[*sub[T]]struct{}{}, buffer: buffer, resync: resync}
}

// Subscribe returns a channel of the values published from now on; it is
// closed once ctx ends.
func (f *Fanout[T]) Subscribe(ctx context.Context) <-chan T { return f.SubscribeFunc(ctx, nil) }

// SubscribeFunc is Subscribe for the values want reports true for (nil:
// all). want runs in the publisher's goroutine, under the fan-out's lock,
// so it must be quick and must not publish: it spares the subscriber's
// goroutine a wake-up for each value it would drop anyway. A value want
// skips is not missed (no resync follows it).
func (f *Fanout[T]) SubscribeFunc(ctx context.Context, want func(T) bool) <-chan T {
	s := &sub[T]{ch: make(chan T, f.buffer), want: want}
	f.mu.Lock()
	f.subs[s] = struct{}{}
	f.mu.Unlock()
	context.AfterFunc(ctx, func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.subs, s)
		close(s.ch)
	})
	return s.ch
}

// Subscribed reports whether anyone subscribes, so a publisher can skip
// the work of making a value nobody gets.
func (f *Fanout[T]) Subscribed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.subs) > 0
}

// Publish gives v to every subscriber that has room, at once; one that has
// none misses it (and gets resync first when it has room again).
func (f *Fanout[T]) Publish(v T) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for s := range f.subs {
		if s.missed {
			select {
			case s.ch <- f.resync:
				s.missed = false
			default:
				continue
			}
		}
		if s.want != nil && !s.want(v) {
			continue
		}
		select {
		case s.ch <- v:
		default:
			s.missed = true
		}
	}
}
