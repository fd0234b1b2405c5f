package groupcommit

import (
	"context"
	"errors"
	"testing"
	"time"
)

var errStopped = errors.New("stopped")

// A caller that gives up before the writer takes its write cancels it; one
// that gives up after waits for the outcome.
func TestAwait(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	never := make(chan struct{})

	early := NewTicket()
	if err := early.Await(ctx, never, errStopped); !errors.Is(err, context.Canceled) {
		t.Fatalf("abandoned while queued: %v", err)
	}
	if early.Take() {
		t.Fatal("the writer took an abandoned write")
	}

	late := NewTicket()
	if !late.Take() {
		t.Fatal("the writer could not take a queued write")
	}
	finished := make(chan struct{})
	go func() {
		time.Sleep(20 * time.Millisecond) // elapsed time: the first write holds while the late one queues
		close(finished)
		late.Finish()
	}()
	if err := late.Await(ctx, never, errStopped); err != nil {
		t.Fatalf("taken, then the caller gave up: %v (want the outcome)", err)
	}
	select {
	case <-finished:
	default:
		t.Fatal("Await returned before the writer finished")
	}

	stopped := make(chan struct{})
	close(stopped)
	gone := NewTicket()
	if err := gone.Await(context.Background(), stopped, errStopped); !errors.Is(err, errStopped) {
		t.Fatalf("writer gone: %v", err)
	}
}
