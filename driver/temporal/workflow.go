// Package temporal runs Cairn sessions on Temporal: one workflow per
// session runs the same deterministic engine as the in-process Runner;
// model and tool calls are activities; decisions, messages and cancels are
// Updates whose validators refuse what the engine would refuse (a stale
// seq, an unknown interrupt, invalid arguments) before it enters history;
// approval deadlines are durable timers. Every step's events are mirrored
// to Cairn's store, so listings, the inbox, event streams and the web page
// read the store as with any other driver and never query a workflow.
//
// The API side is a cairn.Runner with RunnerOptions.Driver set to a
// Driver (NewDriver); the worker side is NewWorker. See docs/temporal.md.
package temporal

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/session"
)

// Names in Temporal: the workflow type and its updates.
const (
	WorkflowName  = "cairn.Session"
	UpdateWait    = "wait"    // answers once the first turn ends or pauses (update-with-start)
	UpdateDecide  = "decide"  // DecideArgs
	UpdateMessage = "message" // MessageArgs
	UpdateCancel  = "cancel"  // CancelArgs
)

// params start a session's workflow: its first input, or (after
// continue-as-new) the state it goes on from.
type params struct {
	Start    *engine.Start `json:",omitempty"`
	Snapshot []byte        `json:",omitempty"`
}

// WaitArgs are the arguments of UpdateWait.
type WaitArgs struct {
	// Started answers once the first step is in the store, without waiting
	// for the turn (a detached start).
	Started bool
}

// DecideArgs are the arguments of UpdateDecide.
type DecideArgs struct {
	Seq       int64
	Decisions []session.Decision
	Actor     session.Actor
	// Batch is the bulk decision these are part of (absent in histories
	// written before bulk decisions).
	Batch string `json:",omitempty"`
}

// MessageArgs are the arguments of UpdateMessage.
type MessageArgs struct {
	Text  string
	Seq   int64
	Actor session.Actor // who sent it
	// Tools are tools the sender runs itself (UserMessage.Tools).
	Tools []model.ToolDefinition `json:",omitempty"`
}

// CancelArgs are the arguments of UpdateCancel.
type CancelArgs struct {
	Scope session.CancelScope
	Actor session.Actor // who cancelled
}

// sessionRun is one workflow run's state: the engine state and the step
// the main loop drives next.
type sessionRun struct {
	w         *workflows
	st        *engine.State
	pending   *engine.Step  // a step applied and not yet driven
	driving   bool          // the main loop is performing effects
	turns     int           // turns that ended or paused in this run
	mirrored  int           // steps written to the store in this run
	cancelled bool          // a cancel of the whole turn was asked while driving
	cancelBy  session.Actor // who asked for it
	stopTurn  workflow.CancelFunc
}

// Session is the workflow of one session.
func (w *workflows) Session(ctx workflow.Context, p params) error {
	r := &sessionRun{w: w, st: &engine.State{}}
	if p.Snapshot != nil {
		st, _, err := engine.Restore(p.Snapshot, nil, nil)
		if err != nil {
			return temporal.NewNonRetryableApplicationError("cairn: the snapshot carried across continue-as-new does not load", "internal", err)
		}
		r.st = st
	}
	if err := r.handleUpdates(ctx); err != nil {
		return err
	}
	if p.Start != nil {
		step, err := w.core.Step(r.st, *p.Start, workflow.Now(ctx))
		if err != nil {
			return refusal(err)
		}
		r.pending = &step
	}
	for {
		if r.pending != nil {
			if err := r.drive(ctx); err != nil {
				return err
			}
			continue
		}
		again, err := r.idleFor(ctx)
		if err != nil {
			return err // the workflow was cancelled (terminated from outside)
		}
		if again {
			// The history has grown: go on in a fresh run from a snapshot.
			snap, err := engine.Snapshot(r.st)
			if err != nil {
				return err
			}
			return workflow.NewContinueAsNewError(ctx, WorkflowName, params{Snapshot: snap})
		}
	}
}

// idleFor waits, with nothing to drive, until an update hands the loop a
// step, an approval's deadline passes (a durable timer: it fires even
// while no worker runs, and acts when one returns), or the run should
// continue as new (true).
func (r *sessionRun) idleFor(ctx workflow.Context) (bool, error) {
	expiry := r.st.NextExpiry()
	tctx, cancelTimer := workflow.WithCancel(ctx)
	defer cancelTimer()
	due := false
	if !expiry.IsZero() {
		wait := max(expiry.Sub(workflow.Now(ctx)), 0)
		timer := workflow.NewTimer(tctx, wait+time.Millisecond)
		workflow.Go(ctx, func(ctx workflow.Context) {
			if timer.Get(ctx, nil) == nil {
				due = true
			}
		})
	}
	long := func() bool {
		return r.w.opts.MaxHistory > 0 && workflow.GetInfo(ctx).GetCurrentHistoryLength() > r.w.opts.MaxHistory ||
			workflow.GetInfo(ctx).GetContinueAsNewSuggested()
	}
	if err := workflow.Await(ctx, func() bool {
		return r.pending != nil || due || (long() && workflow.AllHandlersFinished(ctx))
	}); err != nil {
		return false, err
	}
	if r.pending != nil {
		return false, nil
	}
	if due {
		step, err := r.w.core.Step(r.st, engine.Expire{}, workflow.Now(ctx))
		if err == nil {
			r.pending = &step
		}
		return false, nil
	}
	return true, nil
}

// handleUpdates registers the update handlers. Each validator applies the
// update to a copy of the state: what the engine refuses is refused there,
// before it enters history. The handler applies it for real and waits for
// the turn it starts to end or pause.
func (r *sessionRun) handleUpdates(ctx workflow.Context) error {
	wait := func(ctx workflow.Context, a WaitArgs) (*cairn.Session, error) {
		if err := workflow.Await(ctx, func() bool {
			return (a.Started && r.mirrored > 0) || (r.turns > 0 && r.pending == nil && !r.driving)
		}); err != nil {
			return nil, err
		}
		return r.st.View(), nil
	}
	if err := workflow.SetUpdateHandler(ctx, UpdateWait, wait); err != nil {
		return err
	}
	apply := func(ctx workflow.Context, in engine.Input) (*cairn.Session, error) {
		if r.pending != nil || r.driving {
			return nil, refusal(&session.Error{Code: session.CodeConflict, Message: "the session is running a turn; wait for it to pause or end"})
		}
		step, err := r.w.core.Step(r.st, in, workflow.Now(ctx))
		if err != nil {
			return nil, refusal(err)
		}
		r.pending = &step
		before := r.turns
		if err := workflow.Await(ctx, func() bool { return r.turns > before && r.pending == nil && !r.driving }); err != nil {
			return nil, err
		}
		return r.st.View(), nil
	}
	validate := func(ctx workflow.Context, in engine.Input) error {
		if r.pending != nil || r.driving {
			return refusal(&session.Error{Code: session.CodeConflict, Message: "the session is running a turn; wait for it to pause or end"})
		}
		snap, err := engine.Snapshot(r.st)
		if err != nil {
			return err
		}
		trial, _, err := engine.Restore(snap, nil, nil)
		if err != nil {
			return err
		}
		_, err = r.w.core.Step(trial, in, workflow.Now(ctx))
		return refusal(err)
	}
	decide := func(a DecideArgs) engine.Input {
		return engine.Decide{Seq: a.Seq, Decisions: a.Decisions, Actor: a.Actor, Batch: a.Batch}
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateDecide,
		func(ctx workflow.Context, a DecideArgs) (*cairn.Session, error) {
			d := decide(a).(engine.Decide)
			if runs := r.w.core.EditPreviews(r.st, d); len(runs) > 0 {
				// An edit of a call that waits for more approvers records
				// the preview of its new arguments: computed first.
				d.Previews = map[string]session.Preview{}
				for _, o := range r.previews(ctx, engine.RunPreviews{Session: r.st.SessionID, Previews: runs}) {
					d.Previews[o.InterruptID] = o.Preview
				}
			}
			return apply(ctx, d)
		},
		workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, a DecideArgs) error { return validate(ctx, decide(a)) }}); err != nil {
		return err
	}
	message := func(a MessageArgs) engine.Input {
		return engine.Message{Text: a.Text, Seq: a.Seq, Actor: a.Actor, Tools: a.Tools}
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateMessage,
		func(ctx workflow.Context, a MessageArgs) (*cairn.Session, error) { return apply(ctx, message(a)) },
		workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, a MessageArgs) error { return validate(ctx, message(a)) }}); err != nil {
		return err
	}
	return workflow.SetUpdateHandlerWithOptions(ctx, UpdateCancel,
		func(ctx workflow.Context, a CancelArgs) (*cairn.Session, error) {
			if r.pending == nil && !r.driving {
				return apply(ctx, engine.Cancel{Scope: a.Scope, Actor: a.Actor})
			}
			// A turn runs: stop it at its next step, dropping the call in flight.
			r.cancelled, r.cancelBy = true, a.Actor
			if r.stopTurn != nil {
				r.stopTurn()
			}
			before := r.turns
			if err := workflow.Await(ctx, func() bool { return r.turns > before && r.pending == nil && !r.driving }); err != nil {
				return nil, err
			}
			return r.st.View(), nil
		},
		workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, a CancelArgs) error {
			if a.Scope != session.CancelAll && a.Scope != session.CancelTop {
				return refusal(&session.Error{Code: session.CodeInvalidRequest, Message: fmt.Sprintf("scope %q: use top or all", a.Scope)})
			}
			if r.pending != nil || r.driving {
				if a.Scope != session.CancelAll {
					return refusal(&session.Error{Code: session.CodeConflict, Message: "a running turn can only be cancelled whole (scope all)"})
				}
				return nil
			}
			return validate(ctx, engine.Cancel{Scope: a.Scope})
		}})
}

// drive mirrors the pending step's events to the store and performs its
// effects, one step at a time, until the session needs a person or the
// turn ends.
func (r *sessionRun) drive(ctx workflow.Context) error {
	r.driving = true
	defer func() { r.driving = false }()
	step := *r.pending
	r.pending = nil
	for {
		if err := r.mirror(ctx, step.Events); err != nil {
			return err
		}
		if len(step.Effects) == 0 {
			r.turns++
			r.cancelled, r.cancelBy = false, session.Actor{}
			return nil
		}
		in, err := r.perform(ctx, step.Effects[0])
		if err != nil {
			return err
		}
		if step, err = r.w.core.Step(r.st, in, workflow.Now(ctx)); err != nil {
			// An engine fault: the state is unusable; fail the run loudly.
			return temporal.NewNonRetryableApplicationError(err.Error(), "internal", err)
		}
	}
}

// mirror writes events to Cairn's store (retried until it succeeds: the
// store must hold a step before its effects run).
func (r *sessionRun) mirror(ctx workflow.Context, events []cairn.Event) error {
	if len(events) == 0 {
		return nil
	}
	head, err := r.w.core.Head(r.st, events)
	if err != nil {
		return err
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: 200 * time.Millisecond, MaximumInterval: 10 * time.Second},
	})
	if err := workflow.ExecuteActivity(actx, ActivityMirror, mirrorArgs{Head: head, Nonce: r.st.Nonce, Events: events}).Get(ctx, nil); err != nil {
		return err
	}
	r.mirrored++
	return nil
}

// perform runs one effect as an activity and returns the input that
// reports it. A model call is safe to repeat and is retried; a tool batch
// is never retried by Temporal: a batch whose worker died (no heartbeat)
// is recovered by the engine, which pauses every started call that is
// not idempotent as an in-doubt approval.
func (r *sessionRun) perform(ctx workflow.Context, eff engine.Effect) (engine.Input, error) {
	if r.cancelled {
		return engine.Cancel{Scope: session.CancelAll, Actor: r.cancelBy}, nil
	}
	switch eff := eff.(type) {
	case engine.CallModel:
		// A cancel drops a model call in flight (it is safe to repeat);
		// tools in flight finish, as in the in-process driver.
		tctx, stop := workflow.WithCancel(ctx)
		r.stopTurn = stop
		defer func() { stop(); r.stopTurn = nil }()
		actx := workflow.WithActivityOptions(tctx, workflow.ActivityOptions{
			StartToCloseTimeout: r.w.opts.ModelTimeout, HeartbeatTimeout: r.w.opts.Heartbeat,
			RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 3},
		})
		var out modelResult
		err := workflow.ExecuteActivity(actx, ActivityModel, modelArgs{SessionID: r.st.SessionID, Seq: r.st.Seq, Effect: eff, Tenant: r.st.Tenant}).Get(tctx, &out)
		switch {
		case r.cancelled:
			return engine.Cancel{Scope: session.CancelAll, Actor: r.cancelBy}, nil
		case err != nil:
			return engine.ModelDone{Frame: eff.Frame, Err: fmt.Errorf("the model call did not complete: %w", err)}, nil
		}
		return engine.ModelDone{Frame: eff.Frame, Response: out.Response, Err: out.failure(), Rules: out.Rules}, nil
	case engine.RunTools:
		actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			StartToCloseTimeout: r.w.opts.ToolTimeout, HeartbeatTimeout: r.w.opts.Heartbeat,
			RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 1},
		})
		var out []engine.ToolOutcome
		err := workflow.ExecuteActivity(actx, ActivityTools, toolsArgs{Effect: eff}).Get(ctx, &out)
		if err == nil {
			return engine.ToolsDone{Frame: eff.Frame, Results: out}, nil
		}
		// Lost: the worker died or the batch timed out. Record why, then
		// recover as a takeover does (in-doubt approvals for started calls).
		why := fmt.Sprintf("the tool activity did not complete (its worker stopped, or it timed out): %v", err)
		step, serr := r.w.core.Step(r.st, engine.Interrupted{Reason: why}, workflow.Now(ctx))
		if serr != nil {
			return nil, temporal.NewNonRetryableApplicationError(serr.Error(), "internal", serr)
		}
		if err := r.mirror(ctx, step.Events); err != nil {
			return nil, err
		}
		if r.cancelled {
			return engine.Cancel{Scope: session.CancelAll, Actor: r.cancelBy}, nil
		}
		return engine.Recover{}, nil
	case engine.RunPreviews:
		return engine.PreviewsDone{Results: r.previews(ctx, eff)}, nil
	}
	return nil, fmt.Errorf("cairn: unknown effect %T", eff)
}

// previews computes dry runs as an activity. They are free of side
// effects, so a lost batch is computed again; one that keeps failing is
// reported as each preview's error rather than hold anything up.
func (r *sessionRun) previews(ctx workflow.Context, eff engine.RunPreviews) []engine.PreviewOutcome {
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: r.w.opts.ToolTimeout, HeartbeatTimeout: r.w.opts.Heartbeat,
		RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 3},
	})
	var out []engine.PreviewOutcome
	if err := workflow.ExecuteActivity(actx, ActivityPreviews, previewsArgs{Effect: eff}).Get(ctx, &out); err != nil {
		out = nil
		for _, p := range eff.Previews {
			out = append(out, engine.PreviewOutcome{InterruptID: p.InterruptID,
				Preview: session.Preview{Error: fmt.Sprintf("the preview activity did not complete: %v", err)}})
		}
	}
	return out
}

// refusal carries a refused input to the caller as an application error
// whose type is the error's code (conflict, unknown_interrupt, …).
func refusal(err error) error {
	if err == nil {
		return nil
	}
	var e *session.Error
	if errors.As(err, &e) {
		return temporal.NewNonRetryableApplicationError(e.Message, string(e.Code), nil, e.Interrupt)
	}
	return temporal.NewNonRetryableApplicationError(err.Error(), "internal", err)
}
