package cairn

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

// Driver runs a Runner's turns somewhere else than in its own process: a
// durable-execution engine (package driver/temporal). With
// RunnerOptions.Driver set, Start, Resume, Send and Cancel go through it,
// while every read (Session, Sessions, Events, Subscribe, the inbox) comes
// from the store, which the driver keeps as a mirror of each session's log.
// The runner then takes no sessions over and sweeps no expiries: the driver
// owns them.
type Driver interface {
	// Start opens session in.ID and runs its first turn; unless detach,
	// it answers once the turn ends or pauses.
	Start(ctx context.Context, in DriverStart, detach bool) (*Session, error)
	// Resume applies decisions (see Runner.Resume) and answers after the
	// resumed turn.
	Resume(ctx context.Context, id string, seq int64, decisions []Decision, actor Actor) (*Session, error)
	// Send gives the user's next message (see Runner.Send); actor is who
	// sent it.
	Send(ctx context.Context, id, text string, seq int64, actor Actor) (*Session, error)
	// Cancel cancels the top interactive agent or the whole turn (see
	// Runner.Cancel); actor is who cancelled.
	Cancel(ctx context.Context, id string, scope CancelScope, actor Actor) (*Session, error)
}

// DriverStart is a new session as a Driver gets it.
type DriverStart struct {
	ID, Agent, Input, Owner string
	Metadata                map[string]any
	// Actor is who sends the first message.
	Actor Actor
}

// startWith opens a session through the driver.
func (r *Runner) startWith(ctx context.Context, id, agent, input string, opts *StartOptions) (*Session, error) {
	if _, ok := r.agents[agent]; !ok {
		return nil, &session.Error{Code: session.CodeUnknownAgent, Message: fmt.Sprintf("unknown agent %q", agent)}
	}
	return r.observed(ctx, id, 0, func() (*Session, error) {
		return r.driver.Start(ctx, DriverStart{ID: id, Agent: agent, Input: input, Owner: opts.Owner, Metadata: opts.Metadata, Actor: opts.firstActor()}, opts.Detach)
	})
}

// observed runs a driver call and, when the call has an observer, hands it
// the session's events from after seq as the store's feed brings them, up
// to those of the session the call returns.
func (r *Runner) observed(ctx context.Context, id string, after int64, call func() (*Session, error)) (*Session, error) {
	obs, _ := ctx.Value(observerKey{}).(func(Event))
	if obs == nil {
		return call()
	}
	events, cancel := r.Subscribe(id, after)
	defer cancel()
	type answer struct {
		s   *Session
		err error
	}
	done := make(chan answer, 1)
	go func() {
		s, err := call()
		done <- answer{s, err}
	}()
	var last int64
	var a *answer
	// Forward events until the call has answered and its last event was
	// handed over (or the feed stops bringing them).
	for a == nil || (a.err == nil && last < a.s.Seq) {
		var late <-chan time.Time
		if a != nil {
			late = time.After(5 * time.Second)
		}
		select {
		case ev, ok := <-events:
			if !ok {
				if a == nil {
					got := <-done
					a = &got
				}
				return a.s, a.err
			}
			if ev.Seq != 0 {
				last = ev.Seq
			}
			obs(ev)
		case got := <-done:
			a = &got
		case <-late:
			r.log.Warn("events of a turn did not reach the observer", "session", id, "seq", a.s.Seq, "seen", last)
			return a.s, a.err
		}
	}
	return a.s, a.err
}

// DriverCore is the Runner's engine and effects, for a durable driver of
// this module (package driver/temporal) that keeps sessions in its own
// history: the same agents, tools, models, store mirror and webhooks as the
// in-process driver. Its methods take the engine's internal types, so code
// outside this module cannot call them.
type DriverCore struct{ r *Runner }

// DriverCore returns the runner's core for a durable driver.
func (r *Runner) DriverCore() DriverCore { return DriverCore{r} }

// Step applies one input to a session's state (deterministic: no I/O).
func (c DriverCore) Step(st *engine.State, in engine.Input, now time.Time) (engine.Step, error) {
	return c.r.compiled.Load().machine.Step(st, in, now)
}

// CallModel performs a CallModel effect of a session whose last event has
// seq after (the place of its text deltas among the session's events).
func (c DriverCore) CallModel(ctx context.Context, sessionID string, after int64, eff engine.CallModel) (*model.Response, error) {
	return c.r.callModel(ctx, sessionID, after, eff)
}

// RunTools performs a RunTools effect.
func (c DriverCore) RunTools(ctx context.Context, eff engine.RunTools) []engine.ToolOutcome {
	return c.r.runTools(ctx, eff)
}

// DriverLease is the lease a durable driver's mirror writes: an owner no
// runner has, until a time no clock reaches, so no Runner on the store
// takes these sessions over or appends to them.
var DriverLease = store.Lease{Owner: "driver", Until: time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)}

// Head is the store head a mirror writes with events just applied to st:
// the same summary, expiry index and snapshot policy as the Runner's own
// commits (headFor), under DriverLease. It does no I/O.
func (c DriverCore) Head(st *engine.State, events []Event) (store.Head, error) {
	head, log, err := headFor(st, engine.Step{Events: events}, DriverLease, c.r.snapshots)
	st.Log = log
	return head, err
}

// Mirror appends events to the store with head (from Head), as the
// Runner's own commits are written, once: a retry of a mirror that was
// written (its answer lost) finds the session at or past head.Seq and
// succeeds.
func (c DriverCore) Mirror(ctx context.Context, head store.Head, events []Event) error {
	if len(events) == 0 {
		return nil
	}
	err := c.r.appendStep(ctx, head, engine.Step{Events: events})
	if errors.Is(err, ErrConflict) {
		if h, herr := c.r.store.Head(ctx, head.ID); herr == nil && h.Seq >= head.Seq {
			return nil // written by an earlier attempt
		}
	}
	return err
}
