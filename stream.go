package cairn

import (
	"context"
	"iter"
	"sync/atomic"
)

type observerKey struct{}

// observe delivers ev to the Stream consuming ctx, if any.
func observe(ctx context.Context, ev Event) {
	if fn, ok := ctx.Value(observerKey{}).(func(Event)); ok {
		fn(ev)
	}
}

// Stream runs run (a Start, Resume, Send or Cancel of this runner) and
// yields, as they happen, every event it records and the text deltas of
// streaming models (type EventModelDelta, Seq 0, not stored). The sequence
// ends when run returns; an error from run is yielded last.
//
//	for ev, err := range runner.Stream(ctx, func(ctx context.Context) (*cairn.Session, error) {
//		return runner.Start(ctx, "main", "Deploy the build", nil)
//	}) {
//		if err != nil { … }
//		fmt.Println(ev.Type)
//	}
//
// Stopping the loop early does not stop the turn; it runs on, unobserved.
func (r *Runner) Stream(ctx context.Context, run func(ctx context.Context) (*Session, error)) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		ch := make(chan Event, 64)
		var stopped atomic.Bool
		octx := context.WithValue(ctx, observerKey{}, func(ev Event) {
			if !stopped.Load() {
				ch <- ev
			}
		})
		errc := make(chan error, 1)
		go func() {
			_, err := run(octx)
			errc <- err
			close(ch)
		}()
		for ev := range ch {
			if !yield(ev, nil) {
				stopped.Store(true)
				go func() {
					for range ch { // let the turn finish without a reader
					}
				}()
				return
			}
		}
		if err := <-errc; err != nil {
			yield(Event{}, err)
		}
	}
}
