package local

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
	id              string
	cancelRequested atomic.Bool
	// cancelBy is who asked for the cancel in this process; nil when the
	// request came through the store (see cancelInput).
	cancelBy  atomic.Pointer[session.Actor]
	lost      atomic.Bool
	mu        sync.Mutex
	stopModel context.CancelFunc // cancels the turn's model calls, once there is one
	// The turn's contexts, made at its first effect (effectCtx, cancelled
	// when the lease is lost; modelCtx, also cancelled by a cancel
	// request) and cancelled when it ends: one pair per turn, not per
	// effect. Both are children of the turn's context, not one of the
	// other (endEffects stops both): a context with a child keeps a map of
	// its children. Only the turn's goroutine sets them.
	effectCtx, modelCtx context.Context
	endEffects          context.CancelFunc
	// renewMu guards inEffect and renewedAt (wall time): the lease keeper
	// renews the lease of a turn whose effect has run for a third of the
	// lease since the last renewal, and an effect does not end while it
	// does.
	renewMu   sync.Mutex
	inEffect  bool
	renewedAt time.Time
	// unwritten holds a new session's first step (its events) until the
	// turn's next commit (driveIn, commitTo); only the turn's goroutine
	// uses it.
	unwritten engine.Step
	// modelDeadline times the turn's model calls, and deltas (with
	// onDelta, its send) passes on their text deltas: set by the turn's
	// goroutine before each call (callModel).
	modelDeadline modelDeadline
	deltas        deltaSink
	onDelta       func(string)
	// writing is the commit of the turn's last step while it is written
	// and the model call after it runs (driveIn); nil otherwise. Only the
	// turn's goroutine sets it.
	writing *inFlightWrite
	// view is the session as of the turn's last commit, if that commit
	// wrote the summary from it (nil otherwise): what the turn answers
	// with when it ends there (runTurn).
	view *session.Session
	// Tool handlers of a turn that runs on its caller's goroutine run on
	// that goroutine, guarded (see rescue): stopRescue, set at the turn's
	// first tool effect, unregisters the guard; effect is its state
	// (effectIdle, effectRunning, effectRescued); rescueMu is held while
	// a rescue records the interrupt, and rescueErr is its outcome.
	guardTools bool
	stopRescue func() bool
	effect     atomic.Int32
	rescueMu   sync.Mutex
	rescueErr  error
	// ended: the turn left the runner's turns (turns.end), by its own
	// goroutine or by a rescue.
	ended atomic.Bool
}

// The states of a guarded tool effect (turn.effect).
const (
	effectIdle int32 = iota
	effectRunning
	effectRescued
)

// runnerGoroutineKey marks the runner's own context (Runner.background):
// a turn driven by the runner's goroutines (detached turns, takeovers,
// expiries) keeps its tool handlers on workers, so that Close never waits
// for a handler that ignores its context.
type runnerGoroutineKey struct{}

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
	t := &turn{id: id}
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
	if !t.ended.CompareAndSwap(false, true) {
		return // a rescue ended it (see Runner.rescue)
	}
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

// renewWhile runs fn while the lease keeper renews the turn's lease every
// third of its length. If the lease is lost, fn's context is cancelled. A
// cancel request noticed on renewal stops a model call at once (tools
// finish). An effect shorter than a third of the lease (most are) costs no
// timer, no goroutine and no store write: the keeper is one loop for the
// runner, and the contexts are made once per turn.
func (r *Runner) renewWhile(ctx context.Context, t *turn, model bool, fn func(ctx context.Context)) {
	t.makeContexts(ctx)
	t.renewMu.Lock()
	t.inEffect, t.renewedAt = true, time.Now() // elapsed time, whatever clock Options.Now keeps
	t.renewMu.Unlock()
	switch {
	case model:
		fn(t.modelCtx)
	case t.stopRescue != nil:
		// After inEffect is set, so that a rescue's clearing it stays.
		t.effect.Store(effectRunning)
		if ctx.Err() == nil { // ended: perform records the interrupt, not a rescue
			fn(t.effectCtx)
		}
		if !t.effect.CompareAndSwap(effectRunning, effectIdle) {
			return // rescued: the rescue ended the effect (see turn.rescued)
		}
	default:
		fn(t.effectCtx)
	}
	t.renewMu.Lock() // waits for a renewal in flight
	t.inEffect = false
	t.renewMu.Unlock()
}

// guard arms, once per turn, the rescue of t's tool effects: when ctx
// ends while one runs, rescue interrupts the turn. Only for a turn on its
// caller's goroutine (guardTools) whose context can end.
func (r *Runner) guard(ctx context.Context, to store.Store, st *engine.State, t *turn) {
	if t.stopRescue == nil && ctx.Done() != nil {
		t.stopRescue = context.AfterFunc(ctx, func() { r.rescue(ctx, to, st, t) })
	}
}

// rescue interrupts, from another goroutine, a turn whose context ended
// while its tool handlers run on its goroutine: it records
// turn_interrupted (the calls stay in doubt, as at the turn's next step),
// releases the session and ends the turn, at once. The turn's goroutine,
// once its handlers return, finds the effect rescued and returns the
// rescue's error. So a handler that ignores its context holds the
// goroutine that called it, as any Go function does, but never the
// session: another runner takes it over. Handlers run on the caller's
// goroutine because a hand-off to a worker and back was a quarter of a
// turn's time (BenchmarkTurn, docs/performance.md).
func (r *Runner) rescue(ctx context.Context, to store.Store, st *engine.State, t *turn) {
	t.rescueMu.Lock()
	defer t.rescueMu.Unlock()
	if !t.effect.CompareAndSwap(effectRunning, effectRescued) {
		return // between effects: the turn stops at its next step
	}
	t.renewMu.Lock() // waits for a renewal in flight; no more after this
	t.inEffect = false
	t.renewMu.Unlock()
	// Its caller, who observed the turn, is gone (its context ended) and
	// its goroutine is the one in the handler: nobody to tell.
	quiet := context.WithValue(ctx, observerKey{}, nil)
	t.rescueErr = r.interrupt(quiet, to, st, t, fmt.Sprintf("the turn's context ended while it ran: %v", ctx.Err()), ctx.Err())
	r.active.end(t.id, t)
}

// rescued reports whether a rescue ended the turn's last effect, and
// with what error, once the rescue recorded the interrupt (it holds
// rescueMu until then). Only the turn's goroutine calls it, after the
// effect.
func (t *turn) rescued() (bool, error) {
	if t == nil || t.effect.Load() != effectRescued {
		return false, nil
	}
	t.rescueMu.Lock()
	defer t.rescueMu.Unlock()
	return true, t.rescueErr
}

// makeContexts makes the turn's effect contexts under ctx, once: also
// for a new session's first model call, which holds no lease, so that
// the turn's model calls share one parent and so one deadline context
// and timer (modelDeadline).
func (t *turn) makeContexts(ctx context.Context) {
	if t.effectCtx != nil {
		return
	}
	effectCtx, endEffects := context.WithCancel(ctx)
	modelCtx, stop := context.WithCancel(ctx)
	t.effectCtx, t.modelCtx = effectCtx, modelCtx
	t.endEffects = func() { endEffects(); stop() }
	t.mu.Lock()
	t.stopModel = stop
	t.mu.Unlock()
	if t.cancelRequested.Load() {
		stop()
	}
}

// endEffects ends the turn's effect contexts, if it made them.
func (t *turn) end() {
	if t.stopRescue != nil {
		t.stopRescue()
	}
	t.modelDeadline.close()
	if t.endEffects != nil {
		t.endEffects()
	}
}

// keepLeases renews, every sixth of the lease, the lease of each turn of
// this runner whose effect has run for a third of the lease since its
// last renewal (or since the commit before it).
func (r *Runner) keepLeases(every time.Duration) {
	defer r.wg.Done()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-r.background.Done():
			return
		case <-tick.C:
		}
		now := time.Now()
		for _, t := range r.active.all() {
			t.renewMu.Lock()
			due := t.inEffect && now.Sub(t.renewedAt) >= r.leaseFor/3
			t.renewMu.Unlock()
			if due {
				go r.renew(t)
			}
		}
	}
}

// renew renews t's lease, unless its effect ended meanwhile: a renewal
// after the turn released the session would hold other processes off.
func (r *Runner) renew(t *turn) {
	t.renewMu.Lock()
	defer t.renewMu.Unlock()
	if !t.inEffect || t.lost.Load() {
		// A lost lease stays lost: an effect that outlives it (a handler
		// on the turn's goroutine that ignores its context) is not renewed,
		// nor warned about, again.
		return
	}
	cancelled, err := r.store.RenewLease(r.background, t.id, store.Lease{Owner: r.node, Until: r.now().Add(r.leaseFor)})
	switch {
	case errors.Is(err, store.ErrConflict):
		r.log.Warn("lease lost: another process took the session over", "session", t.id)
		t.lost.Store(true)
		t.endEffects()
		return
	case err != nil:
		r.log.Warn("lease renewal failed; retrying", "session", t.id, "err", err)
		return
	case cancelled:
		t.requestCancel()
	}
	t.renewedAt = time.Now()
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
			return r.sessionFromHead(h)
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

// inFlightWrite is a step's commit written on another goroutine while
// the turn's next model call runs. written is closed once it is done; err
// is its outcome.
type inFlightWrite struct {
	ctx     context.Context
	c       preparedCommit
	written chan struct{}
	err     error
	told    bool // the caller's observer has its events (see tell)
}

// tell gives the caller's observer the written events, once, on the
// turn's goroutine (TurnOptions.Observe): before the first delta of the
// model call, or when the turn waits for the write.
func (w *inFlightWrite) tell() {
	if !w.told {
		w.told = true
		w.c.tell(w.ctx)
	}
}

// startWrite writes c on another goroutine; awaitWrite waits for it. A
// failed write drops the model call running meanwhile: its answer would
// not count.
func (t *turn) startWrite(ctx context.Context, r *Runner, c preparedCommit) {
	w := &inFlightWrite{ctx: ctx, c: c, written: make(chan struct{})}
	t.writing = w
	go func() {
		defer close(w.written)
		if w.err = r.writeCommit(ctx, &w.c); w.err != nil {
			t.dropModelCall()
		}
	}()
}

// awaitWrite waits for the write in flight, if any, and records it in st
// and the turn (preparedCommit.done); its error, if it failed. t may be
// nil (a turn outside the runner's store).
func (t *turn) awaitWrite(st *engine.State) error {
	if t == nil || t.writing == nil {
		return nil
	}
	w := t.writing
	<-w.written
	t.writing = nil
	if w.err != nil {
		return w.err
	}
	w.c.done(st, t)
	w.tell()
	return nil
}
