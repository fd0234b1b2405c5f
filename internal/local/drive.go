package local

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/store"
)

// apply loads a session, applies one input and drives the session until it
// needs a person or the turn ends. The state goes back to the cache only
// when everything it holds is recorded.
func (r *Runner) apply(ctx context.Context, id string, in engine.Input) (*session.Session, error) {
	if r.isDraining() {
		return nil, session.ErrShuttingDown
	}
	// The cached state is used without reading the store's head first:
	// the first commit, which writes only at the seq the state is at, is
	// the check (one store read fewer a request). When the cache was
	// behind (another process wrote) or a request here won a race, that
	// commit is refused having written and run nothing, and the input is
	// applied again to the state read from the store; so is an input the
	// cached state refused or took without a change.
	if st := r.cache.take(id); st != nil {
		r.metrics.cacheLoad(ctx, true)
		sess, behind, err := r.applyTo(ctx, st, in, true)
		if !behind {
			return sess, err
		}
	}
	st, err := r.load(ctx, id)
	if err != nil {
		return nil, err
	}
	sess, _, err := r.applyTo(ctx, st, in, false)
	return sess, err
}

// applyTo applies in to st and drives the turn. unchecked: st is the
// cached state, not checked against the store's head; behind says that
// the outcome may come from it being behind the store, and that nothing
// was written or run (apply reads the session and tries again).
func (r *Runner) applyTo(ctx context.Context, st *engine.State, in engine.Input, unchecked bool) (sess *session.Session, behind bool, err error) {
	c, err := r.forSession(ctx, st)
	if err != nil {
		r.cache.put(st) // read, not changed
		return nil, false, err
	}
	if d, ok := in.(engine.Decide); ok {
		in = r.withEditPreviews(ctx, c, st, d)
	}
	machine := c.machine
	step, err := machine.Step(st, in, r.now())
	switch {
	case err != nil && unchecked:
		return nil, true, err
	case err != nil:
		if session.CodeOf(err) != session.CodeInternal {
			r.cache.put(st) // a refused input leaves the state as it was
		}
		return nil, false, err
	case unchecked && len(step.Events) == 0:
		machine.Recycle(&step)
		return nil, true, nil
	}
	sess, err = r.runTurn(ctx, st, step, false)
	var refused *firstCommitRefused
	if errors.As(err, &refused) {
		return nil, unchecked, refused.err
	}
	return sess, false, err
}

// firstCommitRefused is the store's refusal (conflict, or no such session)
// of a turn's first commit: nothing of the turn was written or run.
type firstCommitRefused struct{ err error }

func (e *firstCommitRefused) Error() string { return e.err.Error() }
func (e *firstCommitRefused) Unwrap() error { return e.err }

// withoutFirstCommit is err as the store gave it, for callers other than
// apply.
func withoutFirstCommit(err error) error {
	if refused, ok := err.(*firstCommitRefused); ok {
		return refused.err
	}
	return err
}

// runTurn drives a step inside the turn's span and, once everything is
// recorded, returns the session and caches its state. unseen: the session
// is new and its id known to no one yet (see driveIn).
func (r *Runner) runTurn(ctx context.Context, st *engine.State, step engine.Step, unseen bool) (sess *session.Session, err error) {
	ctx, span := r.startTurnSpan(ctx, st.SessionID, st.Agent)
	defer func() { endTurnSpan(span, sess, err) }()
	last, err := r.driveIn(ctx, r.store, st, step, unseen)
	if err != nil {
		if errors.Is(err, errHalted) {
			// Released for another process, which goes on with the turn.
			return r.sessionOf(st), nil
		}
		return nil, err
	}
	sess = last // the view the last commit's summary was written from
	if sess == nil || sess.Status == session.StatusRunning {
		sess = r.sessionOf(st) // before the state is shared again
	} else {
		r.markCurrent(sess)
	}
	r.cache.put(st)
	return sess, nil
}

// sessionOf is the Session of a state this runner just recorded.
func (r *Runner) sessionOf(st *engine.State) *session.Session {
	s := st.View()
	r.markCurrent(s)
	if s.Status == session.StatusRunning && !r.halt.Load() {
		until := r.now().Add(r.leaseFor)
		s.LeaseOwner, s.LeaseExpiresAt = r.node, &until
	}
	return s
}

// drive commits a step and performs its effects until the session needs a
// person or the turn ends.
func (r *Runner) drive(ctx context.Context, st *engine.State, step engine.Step) error {
	_, err := r.driveIn(ctx, r.store, st, step, false)
	return withoutFirstCommit(err)
}

// errHalted: the runner stopped the turn at a step boundary (Close, or
// Shutdown past its grace) and released the session for another process.
var errHalted = errors.New("cairn: the turn was handed over: this runner is stopping")

// driveIn is drive with the events going to store to (the stateless mode
// keeps a session in a scratch store and hands it out as a token). On the
// runner's store the turn holds a lease: it is renewed while effects run, a
// cancel request stops the turn at its next step, and a turn stopped early
// (ctx cancelled, Close) records turn_interrupted and releases the session.
//
// With unseen (a new session whose id no one knows yet), a first step
// followed by a model call is not written before the call but with the
// step that records its answer: a model call is safe to repeat, and nobody
// can observe the session in between. A crash in that call leaves no
// session, and the caller, who got no answer, no id to miss.
//
// last is the session as of the last commit, when that commit wrote the
// summary from it (nil otherwise, and on the stateless mode's store).
func (r *Runner) driveIn(ctx context.Context, to store.Store, st *engine.State, step engine.Step, unseen bool) (last *session.Session, err error) {
	owned := to == r.store
	var t *turn
	if owned {
		t = r.active.begin(st.SessionID)
		defer r.active.end(st.SessionID, t)
		defer t.end()
		// On every way out no write outlives its turn (the way out of a
		// failed one already returned its error).
		defer func() { _ = t.awaitWrite(st) }()
		t.guardTools = ctx.Value(runnerGoroutineKey{}) == nil
	}
	// Each step's memory goes back to its machine once nothing reads it
	// (engine.Machine.Recycle): once its events are written and the next
	// step is made, or, for a first step held unwritten, once written.
	c, err := r.forSession(ctx, st) // the machine of the session's definition
	if err != nil {
		return nil, err
	}
	recycle := func(step *engine.Step) { c.machine.Recycle(step) }
	for first := true; ; {
		if _, model := firstEffect(step).(engine.CallModel); owned && unseen && model && step.Events[0].Seq == 1 {
			t.unwritten = step
			for _, ev := range step.Events {
				observe(ctx, ev) // in order, before the model's deltas
			}
		} else {
			var held engine.Step
			if t != nil {
				held = t.unwritten // commitTo writes it, and clears it
			}
			if _, model := firstEffect(step).(engine.CallModel); owned && r.overlapWrites && !first && model && len(held.Events) == 0 &&
				!t.cancelRequested.Load() && ctx.Err() == nil && !r.halt.Load() {
				// The model call that follows is safe to repeat: it runs
				// while the step is written, and its answer (and its
				// deltas) count only once the write succeeded.
				c, err := r.prepareCommit(ctx, to, st, t, step)
				if err != nil {
					return nil, err
				}
				t.startWrite(ctx, r, c)
			} else if err := r.commitTo(ctx, to, st, t, step); err != nil {
				if first && owned && (errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound)) {
					err = &firstCommitRefused{err} // see apply
				}
				return nil, err
			}
			recycle(&held)
		}
		first = false
		if len(step.Effects) == 0 {
			recycle(&step)
			if t != nil {
				last = t.view
			}
			return last, nil
		}
		var in engine.Input
		if owned && (t.cancelRequested.Load() || ctx.Err() != nil || r.halt.Load()) {
			// What follows writes: after the step in flight, if any.
			if err := t.awaitWrite(st); err != nil {
				return nil, err
			}
		}
		switch {
		case owned && t.cancelRequested.Load():
			in = r.cancelInput(ctx, st.SessionID, t)
		case ctx.Err() != nil:
			return nil, r.interrupt(ctx, to, st, t, fmt.Sprintf("the turn's context ended: %v", ctx.Err()), ctx.Err())
		case owned && r.halt.Load():
			return nil, r.interrupt(ctx, to, st, t, "the runner stopped (shutdown); another process continues the turn", errHalted)
		default:
			var err error
			if in, err = r.perform(ctx, to, c, st, t, step.Effects[0]); err != nil {
				return nil, err
			}
		}
		done := step
		if step, err = c.machine.Step(st, in, r.now()); err != nil {
			return nil, err
		}
		if t == nil || len(t.unwritten.Events) == 0 { // else done is held unwritten
			recycle(&done)
		}
	}
}

// firstEffect is a step's first effect, or nil.
func firstEffect(step engine.Step) engine.Effect {
	if len(step.Effects) == 0 {
		return nil
	}
	return step.Effects[0]
}

// perform runs one effect and returns the input that reports it. t is nil
// for a turn outside the runner's store (stateless mode).
func (r *Runner) perform(ctx context.Context, to store.Store, c *compiled, st *engine.State, t *turn, eff engine.Effect) (engine.Input, error) {
	run := func(ctx context.Context, isModel bool, fn func(ctx context.Context)) {
		if t == nil {
			fn(ctx)
			return
		}
		if len(t.unwritten.Events) > 0 { // no lease to renew: nothing is stored yet
			t.makeContexts(ctx)
			fn(t.modelCtx) // only a model call waits unwritten
			return
		}
		r.renewWhile(ctx, t, isModel, fn)
	}
	var in engine.Input
	switch eff := eff.(type) {
	case engine.CallModel:
		var resp *model.Response
		var err error
		run(ctx, true, func(ctx context.Context) { resp, err = r.callModel(ctx, st.SessionID, st.Seq, eff, t) })
		done := engine.ModelDone{Frame: eff.Frame, Response: resp, Err: err}
		if err == nil && resp != nil {
			done.Rules = r.rulesFor(ctx, st.Tenant, eff.Agent, resp.Message.ToolCalls)
		}
		in = done
		if err != nil && t != nil && (t.cancelRequested.Load() || r.halt.Load()) {
			in = nil // dropped on purpose: the caller decides again
		}
	case engine.RunTools:
		var results []engine.ToolOutcome
		inline := t != nil && t.guardTools
		if inline {
			r.guard(ctx, to, st, t)
		}
		run(ctx, false, func(ctx context.Context) { results = r.runTools(ctx, c, eff, inline) })
		if rescued, err := t.rescued(); rescued {
			return nil, err
		}
		in = engine.ToolsDone{Frame: eff.Frame, Results: results}
	case engine.RunPreviews:
		var results []engine.PreviewOutcome
		run(ctx, false, func(ctx context.Context) { results = r.runPreviews(ctx, c, eff) })
		in = engine.PreviewsDone{Results: results}
	default:
		return nil, fmt.Errorf("cairn: unknown effect %T", eff)
	}
	if err := t.awaitWrite(st); err != nil {
		return nil, err // the step before the effect was not written
	}
	switch {
	case t != nil && t.lost.Load():
		return nil, fmt.Errorf("session %s: %w", st.SessionID, session.ErrLeaseLost)
	case ctx.Err() != nil:
		// Nothing of this effect is recorded: a started tool stays in doubt.
		return nil, r.interrupt(ctx, to, st, t, fmt.Sprintf("the turn's context ended while it ran: %v", ctx.Err()), ctx.Err())
	case in == nil && t.cancelRequested.Load():
		return r.cancelInput(ctx, st.SessionID, t), nil
	case in == nil:
		return nil, r.interrupt(ctx, to, st, t, "the runner stopped (shutdown) during a model call; another process continues the turn", errHalted)
	}
	return in, nil
}

// interrupt records that the turn stopped early and releases the session.
func (r *Runner) interrupt(ctx context.Context, to store.Store, st *engine.State, t *turn, reason string, cause error) error {
	step, err := r.compiled.Load().machine.Step(st, engine.Interrupted{Reason: reason}, r.now())
	if err != nil {
		return errors.Join(cause, err)
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := r.commitTo(wctx, to, st, t, step); err != nil {
		return errors.Join(cause, err)
	}
	if errors.Is(cause, errHalted) {
		return cause
	}
	return fmt.Errorf("session %s: turn interrupted (recorded; another runner takes it over): %w", st.SessionID, cause)
}
