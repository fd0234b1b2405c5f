// Package groupcommit is the hand-off between the callers of a store and
// its one writer, which commits what they queued together (group commit):
// a caller that stops waiting before the writer took its write cancels it,
// and one that stops waiting after gets the truth, never a guess.
package groupcommit

import (
	"context"
	"sync/atomic"
)

// Ticket is one queued write's state: queued, then taken by the writer or
// abandoned by its caller, whichever comes first.
type Ticket struct {
	state atomic.Int32
	done  chan struct{}
}

const (
	queued int32 = iota
	taken
	abandoned
)

// NewTicket returns a queued ticket.
func NewTicket() *Ticket { return &Ticket{done: make(chan struct{})} }

// Take claims the write for the writer; false when its caller gave up
// (the writer must skip it).
func (t *Ticket) Take() bool { return t.state.CompareAndSwap(queued, taken) }

// Finish tells the caller that the write's outcome is set.
func (t *Ticket) Finish() { close(t.done) }

// Await waits for the writer to finish the write and returns nil. When ctx
// ends, or stopped is closed (the writer is gone), before the writer took
// it, the write is abandoned and Await returns ctx's error or errStopped;
// after, it waits for the outcome all the same.
func (t *Ticket) Await(ctx context.Context, stopped <-chan struct{}, errStopped error) error {
	select {
	case <-t.done:
		return nil
	case <-ctx.Done():
		if t.state.CompareAndSwap(queued, abandoned) {
			return ctx.Err()
		}
	case <-stopped:
		if t.state.CompareAndSwap(queued, abandoned) {
			return errStopped
		}
	}
	<-t.done
	return nil
}
