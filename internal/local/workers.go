package local

import "sync"

// idleToolWorkers is how many workers may wait for a call.
const idleToolWorkers = 16

// workers runs tool handlers on goroutines that outlive one call: the
// handlers that a timeout must be able to end, and those of turns the
// runner's own goroutines drive (a turn on its caller's goroutine runs the
// others there, guarded: see Runner.rescue). A new
// goroutine starts with a small stack, and a handler that decodes its JSON
// arguments grows it two or three times, each time copying it: a tenth of
// a turn's time in BenchmarkTurn's profile. An idle worker keeps the stack
// it grew. A call that finds no idle worker starts one, so a handler that
// never returns holds only its own goroutine, as before; at most maxIdle
// wait for work, the rest exit.
type workers struct {
	mu      sync.Mutex
	idle    []chan func()
	maxIdle int
	closed  bool
}

// do runs f on an idle worker, or on a new one.
func (ws *workers) do(f func()) {
	ws.mu.Lock()
	if n := len(ws.idle); n > 0 && !ws.closed {
		jobs := ws.idle[n-1]
		ws.idle = ws.idle[:n-1]
		ws.mu.Unlock()
		jobs <- f // buffered, and empty while the worker is idle: never blocks
		return
	}
	ws.mu.Unlock()
	jobs := make(chan func(), 1)
	jobs <- f
	go ws.work(jobs)
}

func (ws *workers) work(jobs chan func()) {
	for f := range jobs {
		f()
		ws.mu.Lock()
		if ws.closed || len(ws.idle) >= ws.maxIdle {
			ws.mu.Unlock()
			return
		}
		ws.idle = append(ws.idle, jobs)
		ws.mu.Unlock()
	}
}

// close ends the idle workers; the busy ones end when their call returns.
func (ws *workers) close() {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.closed = true
	for _, jobs := range ws.idle {
		close(jobs)
	}
	ws.idle = nil
}

// eachAtMost calls fn(i) for every i below n, at most limit at once, each
// on its own goroutine, and returns when all have: the fan-out of a tool
// batch, a pause's previews and a bulk decision.
func eachAtMost(n, limit int, fn func(i int)) {
	sem := make(chan struct{}, max(limit, 1))
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			fn(i)
		}()
	}
	wg.Wait()
}
