package local

import (
	"context"
	"errors"
	"iter"
	"sync/atomic"

	"github.com/cairnhq/cairn/session"
)

// errRangedTwice answers a second range over a Follow or Changes sequence.
var errRangedTwice = errors.New("cairn: this sequence was already ranged over; call Follow or Changes again")

// Follow is cairn.Runner.Follow (documented there).
func (r *Runner) Follow(ctx context.Context, sessionID string, after int64) iter.Seq2[session.Event, error] {
	events, cancel := r.hub.subscribe(sessionID, after)
	stop := context.AfterFunc(ctx, cancel)
	return once(func(yield func(session.Event, error) bool) {
		defer cancel()
		defer stop()
		prev := "" // the last event's hash: the next one's Prev
		for {
			select {
			case ev, open := <-events:
				if !open {
					return
				}
				if ev.Seq > 0 && ev.Hash != "" && ev.Prev == "" && prev != "" {
					ev.Prev = prev
				}
				if ev.Seq > 0 {
					prev = ev.Hash
				}
				if !yield(ev, nil) {
					return
				}
			case <-r.background.Done():
				yield(session.Event{}, session.ErrShuttingDown)
				return
			}
		}
	})
}

// Changes is cairn.Runner.Changes (documented there).
func (r *Runner) Changes(ctx context.Context) iter.Seq2[session.Change, error] {
	ctx, cancel := context.WithCancel(ctx)
	changes := r.feed.subscribe(ctx)
	return once(func(yield func(session.Change, error) bool) {
		defer cancel()
		for c := range changes {
			if !yield(c, nil) {
				return
			}
		}
		if ctx.Err() == nil || r.background.Err() != nil {
			yield(session.Change{}, session.ErrShuttingDown)
		}
	})
}

// once is seq for one range; a second yields errRangedTwice.
func once[T any](seq iter.Seq2[T, error]) iter.Seq2[T, error] {
	var used atomic.Bool
	return func(yield func(T, error) bool) {
		if used.Swap(true) {
			var zero T
			yield(zero, errRangedTwice)
			return
		}
		seq(yield)
	}
}
