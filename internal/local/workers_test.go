package local

import (
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/testkit/testwait"
)

// An idle worker takes the next call; a call that never returns holds
// only its own worker, so the next call starts another; close ends the
// idle ones.
func TestToolWorkers(t *testing.T) {
	ws := &workers{maxIdle: 2}
	done := make(chan int, 8)
	ws.do(func() { done <- 1 })
	<-done
	idle := func() int {
		ws.mu.Lock()
		defer ws.mu.Unlock()
		return len(ws.idle)
	}
	testwait.For(t, 5*time.Second, "the worker to be idle", func() bool { return idle() == 1 })

	stuck := make(chan struct{})
	defer close(stuck)
	ws.do(func() { <-stuck }) // takes the idle worker and never returns
	if idle() != 0 {
		t.Fatalf("%d idle workers while the only one is busy", idle())
	}
	ws.do(func() { done <- 2 }) // a new worker, not blocked behind the stuck call
	select {
	case got := <-done:
		if got != 2 {
			t.Fatalf("got %d", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a call waited behind a call that never returns")
	}
	testwait.For(t, 5*time.Second, "the new worker to be idle", func() bool { return idle() == 1 })

	ws.close()
	if idle() != 0 {
		t.Fatalf("%d idle workers after close", idle())
	}
	ws.do(func() { done <- 3 }) // after close a call still runs, on a worker that then exits
	if got := <-done; got != 3 {
		t.Fatalf("got %d", got)
	}
	time.Sleep(10 * time.Millisecond) // elapsed time: a window in which a worker must not go idle
	if idle() != 0 {
		t.Fatalf("a worker went idle after close")
	}
}
