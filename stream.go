package cairn

import (
	"iter"
	"sync/atomic"
)

// Stream runs run (a Start, Resume, Send or Cancel given observe as its
// Observe option) and yields, as they happen, every event it records and
// the text deltas of streaming models (type EventModelDelta, Seq 0, not
// stored). The sequence ends when run returns; an error from run is yielded
// last.
//
//	for ev, err := range cairn.Stream(func(observe func(cairn.Event)) (*cairn.Session, error) {
//		return runner.Start(ctx, "main", "Deploy the build", &cairn.StartOptions{Observe: observe})
//	}) {
//		if err != nil { … }
//		fmt.Println(ev.Type)
//	}
//
// Stopping the loop early does not stop the turn; it runs on, unobserved.
func Stream(run func(observe func(Event)) (*Session, error)) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		ch := make(chan Event, 64)
		var stopped atomic.Bool
		observe := func(ev Event) {
			if !stopped.Load() {
				ch <- ev
			}
		}
		errc := make(chan error, 1)
		go func() {
			_, err := run(observe)
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
