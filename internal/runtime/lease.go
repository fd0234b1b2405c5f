package runtime

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/store"
)

// DefaultLease is how long a runner owns a running turn without renewing
// it (RunnerOptions.Lease): after that, another runner on the store may
// take the session over.
const DefaultLease = 15 * time.Second

// turn is a running turn owned by this runner.
type turn struct {
	cancelRequested atomic.Bool
	// cancelBy is who asked for the cancel in this process; nil when the
	// request came through the store (see cancelInput).
	cancelBy  atomic.Pointer[session.Actor]
	lost      atomic.Bool
	mu        sync.Mutex
	stopModel context.CancelFunc // cancels the model call in flight, if any
	// unwritten holds a new session's first step (its events) until the
	// turn's next commit (driveIn, commitTo); only the turn's goroutine
	// uses it.
	unwritten engine.Step
}

func (t *turn) requestCancel() {
	t.cancelRequested.Store(true)
	t.dropModelCall()
}

// requestCancelBy is requestCancel from a caller of this process.
func (t *turn) requestCancelBy(by session.Actor) {
	t.cancelBy.Store(&by)
	t.requestCancel()
}

// cancelInput is the cancel a turn applies when it stops on a request:
// by whoever asked, in this process or (read from the store's head) in
// another.
func (r *Runner) cancelInput(ctx context.Context, id string, t *turn) engine.Input {
	in := engine.Cancel{Scope: session.CancelAll}
	if by := t.cancelBy.Load(); by != nil {
		in.Actor = *by
	} else if h, err := r.store.Head(ctx, id); err == nil {
		in.Actor = h.CancelBy
	}
	return in
}

// dropModelCall cancels the model call in flight, if any: a model call is
// safe to repeat, so it is dropped at once; running tools finish.
func (t *turn) dropModelCall() {
	t.mu.Lock()
	if t.stopModel != nil {
		t.stopModel()
	}
	t.mu.Unlock()
}

// turns tracks this runner's running turns.
type turns struct {
	mu sync.Mutex
	m  map[string]*turn
	wg sync.WaitGroup
}

func (ts *turns) begin(id string) *turn {
	t := &turn{}
	ts.mu.Lock()
	if ts.m == nil {
		ts.m = map[string]*turn{}
	}
	ts.m[id] = t
	ts.mu.Unlock()
	ts.wg.Add(1)
	return t
}

func (ts *turns) end(id string, t *turn) {
	ts.mu.Lock()
	if ts.m[id] == t {
		delete(ts.m, id)
	}
	ts.mu.Unlock()
	ts.wg.Done()
}

func (ts *turns) get(id string) *turn {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.m[id]
}

func (ts *turns) all() []*turn {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	out := make([]*turn, 0, len(ts.m))
	for _, t := range ts.m {
		out = append(out, t)
	}
	return out
}

func newNodeID() string {
	host, _ := os.Hostname()
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// Node is cairn.Runner.Node (documented there).
func (r *Runner) Node() string { return r.node }

// lease is the lease a commit of events at now records: held while the
// turn runs, released (expired at once) when it pauses, ends, or this
// runner stopped driving it (turn_interrupted), so the next owner takes
// over at once.
func (r *Runner) lease(st *engine.State, events []session.Event, now time.Time) store.Lease {
	if st.Status == session.StatusRunning && events[len(events)-1].Type != session.EventTurnInterrupted {
		return store.Lease{Owner: r.node, Until: now.Add(r.leaseFor)}
	}
	return store.Lease{Owner: r.node, Until: now}
}

// renewWhile runs fn with the turn's lease renewed every third of its
// length. If the lease is lost, fn's context is cancelled. A cancel request
// noticed on renewal stops a model call at once (tools finish).
func (r *Runner) renewWhile(ctx context.Context, id string, t *turn, model bool, fn func(ctx context.Context)) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if model {
		t.mu.Lock()
		t.stopModel = cancel
		t.mu.Unlock()
		defer func() { t.mu.Lock(); t.stopModel = nil; t.mu.Unlock() }()
		if t.cancelRequested.Load() {
			cancel()
		}
	}
	// A timer that re-arms itself: an effect shorter than lease/3 (most
	// are) costs no goroutine and no store write.
	var mu sync.Mutex
	stopped := false
	var timer *time.Timer
	mu.Lock() // the callback reads timer
	timer = time.AfterFunc(r.leaseFor/3, func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		cancelled, err := r.store.RenewLease(ctx, id, store.Lease{Owner: r.node, Until: r.now().Add(r.leaseFor)})
		switch {
		case errors.Is(err, store.ErrConflict):
			r.log.Warn("lease lost: another process took the session over", "session", id)
			t.lost.Store(true)
			cancel()
			return
		case err != nil:
			r.log.Warn("lease renewal failed; retrying", "session", id, "err", err)
		case cancelled:
			t.requestCancel()
		}
		timer.Reset(r.leaseFor / 3)
	})
	mu.Unlock()
	fn(ctx)
	mu.Lock() // waits for a renewal in flight
	stopped = true
	timer.Stop()
	mu.Unlock()
}

// takeoverLoop takes over, at start and then every `every`, the running
// sessions whose lease expired: their owner crashed, was killed, or stopped
// without finishing (Interrupted).
func (r *Runner) takeoverLoop(every time.Duration) {
	defer r.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if _, err := r.Recover(r.background); err != nil && r.background.Err() == nil {
			r.log.Error("takeover", "err", err)
		}
		select {
		case <-r.background.Done():
			return
		case <-r.draining:
			return
		case <-t.C:
		}
	}
}

// Recover is cairn.Runner.Recover (documented there).
func (r *Runner) Recover(ctx context.Context) (int, error) {
	if r.driver != nil {
		return 0, nil // the driver owns its sessions' turns
	}
	due, err := r.store.List(ctx, store.ListOptions{LeaseExpiredAt: r.now()})
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, h := range due {
		if r.isDraining() || ctx.Err() != nil {
			break
		}
		sess, err := r.apply(ctx, h.ID, engine.Recover{})
		if err != nil {
			if !errors.Is(err, session.ErrConflict) && !errors.Is(err, session.ErrShuttingDown) {
				errs = append(errs, fmt.Errorf("take over %s: %w", h.ID, err))
			}
			continue
		}
		r.log.Info("took over session", "session", h.ID, "previous_owner", h.Lease.Owner, "status", sess.Status)
		n++
	}
	r.metrics.tookOver(ctx, n)
	return n, errors.Join(errs...)
}

func (r *Runner) isDraining() bool {
	select {
	case <-r.draining:
		return true
	default:
		return false
	}
}

// Shutdown is cairn.Runner.Shutdown (documented there).
func (r *Runner) Shutdown(ctx context.Context) error {
	r.drainOnce.Do(func() { close(r.draining) })
	done := make(chan struct{})
	go func() { r.active.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	r.halt.Store(true)
	for _, t := range r.active.all() {
		t.dropModelCall()
	}
	<-done
	return nil
}

// Cancel is cairn.Runner.Cancel (documented there).
func (r *Runner) Cancel(ctx context.Context, sessionID string, scope session.CancelScope, opts *TurnOptions) (*session.Session, error) {
	ctx, actor := opts.apply(ctx)
	if r.driver != nil {
		return r.driver.Cancel(ctx, sessionID, scope, actor)
	}
	cancel := engine.Cancel{Scope: scope, Actor: actor}
	h, err := r.store.Head(ctx, sessionID)
	if err != nil {
		return nil, storeError(err, sessionID)
	}
	if h.Status != session.StatusRunning || scope != session.CancelAll || !h.Lease.HeldBy("", r.now()) {
		return r.apply(ctx, sessionID, cancel)
	}
	// A live owner runs the turn: ask it to stop, and wait for the outcome.
	if t := r.active.get(sessionID); t != nil {
		t.requestCancelBy(actor)
	}
	if err := r.store.RequestCancel(ctx, sessionID, actor); err != nil && !errors.Is(err, store.ErrConflict) {
		return nil, storeError(err, sessionID)
	}
	wait, stop := context.WithTimeout(ctx, r.leaseFor+5*time.Second)
	defer stop()
	changes, err := r.store.Watch(wait)
	if err != nil {
		return nil, err
	}
	// The feed reports the owner's commits; the tick notices an owner that
	// died (its lease expires without any commit).
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		h, err := r.store.Head(ctx, sessionID)
		if err != nil {
			return nil, storeError(err, sessionID)
		}
		switch {
		case h.Status == session.StatusPaused: // it paused before it saw the request
			return r.apply(ctx, sessionID, cancel)
		case h.Status != session.StatusRunning:
			return sessionFromHead(h)
		case !h.Lease.HeldBy("", r.now()): // its owner died: cancel it here
			return r.apply(ctx, sessionID, cancel)
		}
		select {
		case <-wait.Done():
			return nil, &session.Error{Code: session.CodeConflict, Message: fmt.Sprintf("session %s: its owner %s has not stopped the turn yet; the cancel stays requested", sessionID, h.Lease.Owner)}
		case <-changes:
		case <-tick.C:
		}
	}
}
