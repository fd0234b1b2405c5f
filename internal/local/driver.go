package local

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/cairnhq/cairn/driver"
	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/internal/suggest"
	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/store"
)

// startWith opens a session through the driver.
func (r *Runner) startWith(ctx context.Context, id, agent, input string, opts *StartOptions) (*session.Session, error) {
	if _, ok := r.agents[agent]; !ok {
		names := slices.Sorted(maps.Keys(r.agents))
		return nil, &session.Error{Code: session.CodeUnknownAgent, Message: fmt.Sprintf("unknown agent %q; configured agents: %s%s", agent, strings.Join(names, ", "), suggest.Hint(agent, names))}
	}
	c := r.compiled.Load()
	if err := r.keepDefinition(ctx, c, agent); err != nil {
		return nil, err
	}
	return r.observed(ctx, id, 0, func() (*session.Session, error) {
		return r.driver.Start(ctx, driver.Start{ID: id, Nonce: newNonce(), Agent: agent, Input: input, Owner: opts.Owner, Metadata: opts.Metadata, Actor: opts.firstActor(), Call: opts.Call, Tools: opts.ClientTools,
			Definition: c.versions[agent].hash}, opts.Detach)
	})
}

// observed runs a driver call and, when the call has an observer, hands it
// the session's events from after seq as the store's feed brings them, up
// to those of the session the call returns.
func (r *Runner) observed(ctx context.Context, id string, after int64, call func() (*session.Session, error)) (*session.Session, error) {
	obs, _ := ctx.Value(observerKey{}).(func(session.Event))
	if obs == nil {
		return call()
	}
	events, cancel := r.Subscribe(id, after)
	defer cancel()
	type answer struct {
		s   *session.Session
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

// Core is the Runner's engine and effects, for a durable driver of this
// module (package driver/temporal) that keeps sessions in its own history:
// the same agents, tools, models, store mirror and webhooks as the
// in-process driver.
type Core struct{ r *Runner }

// CoreHandle carries a Runner's core inside a public type without naming
// it in that type's API. Embedded in the public type under an unexported
// alias, it gives it the unexported method driverCore, which only this
// package can name, and CoreOf finds it: the durable drivers of this module
// reach the engine of a *cairn.Runner, and no one else sees a way to.
type CoreHandle struct{ r *Runner }

// Handle returns the runner's CoreHandle, for the public type that wraps it.
func (r *Runner) Handle() CoreHandle { return CoreHandle{r} }

func (h CoreHandle) driverCore() Core { return Core(h) }

// CoreOf returns the core of v, a public type that embeds a CoreHandle
// (the root package's *Runner), or false if v carries none.
func CoreOf(v any) (Core, bool) {
	h, ok := v.(interface{ driverCore() Core })
	if !ok {
		return Core{}, false
	}
	c := h.driverCore()
	return c, c.r != nil
}

// Step applies one input to a session's state with the machine of the
// definition the session runs under (a new session's, engine.Start's
// Definition): the deployed one, or the one rebuilt from the store — the
// same, on a replay under another deployment, as when the step was first
// made. A durable driver always pins: on_new_version: latest would make a
// replay differ from its history. Deterministic: a definition is
// immutable, so reading it from the store is not an outcome to record.
func (c Core) Step(st *engine.State, in engine.Input, now time.Time) (engine.Step, error) {
	hash := st.Definition
	if start, ok := in.(engine.Start); ok {
		hash = start.Definition
	}
	m, err := c.r.compiledFor(context.Background(), hash)
	if err != nil {
		return engine.Step{}, err
	}
	return m.machine.Step(st, in, now)
}

// CallModel performs a CallModel effect of a session whose last event has
// seq after (the place of its text deltas among the session's events).
func (c Core) CallModel(ctx context.Context, sessionID string, after int64, eff engine.CallModel) (*model.Response, error) {
	return c.r.callModel(ctx, sessionID, after, eff, nil) // an outside driver's calls: each its own deadline
}

// RulesFor reads the standing rules live now for the tools calls name
// that a rule may decide, in tenant (engine.ModelDone.Rules).
func (c Core) RulesFor(ctx context.Context, tenant, agent string, calls []model.ToolCall) []session.Rule {
	return c.r.rulesFor(ctx, tenant, agent, calls)
}

// RunTools performs a RunTools effect.
func (c Core) RunTools(ctx context.Context, eff engine.RunTools) []engine.ToolOutcome {
	m, err := c.r.compiledFor(ctx, eff.Definition)
	if err != nil {
		return failAll(eff, err)
	}
	return c.r.runTools(ctx, m, eff, false)
}

// RunPreviews performs a RunPreviews effect (never fails: a preview that
// cannot be computed is reported as its error).
func (c Core) RunPreviews(ctx context.Context, eff engine.RunPreviews) []engine.PreviewOutcome {
	m, err := c.r.compiledFor(ctx, eff.Definition)
	if err != nil {
		out := make([]engine.PreviewOutcome, len(eff.Previews))
		for i, run := range eff.Previews {
			out[i] = engine.PreviewOutcome{InterruptID: run.InterruptID, Preview: session.Preview{Error: err.Error()}}
		}
		return out
	}
	return c.r.runPreviews(ctx, m, eff)
}

// EditPreviews names the dry runs to compute before Decide d applies
// (engine.Machine.EditPreviews): deterministic, no I/O.
func (c Core) EditPreviews(st *engine.State, d engine.Decide) []engine.PreviewRun {
	m, err := c.r.compiledFor(context.Background(), st.Definition)
	if err != nil {
		return nil // Step refuses the decision, saying why
	}
	return m.machine.EditPreviews(st, d)
}

// failAll is the outcome of calls none of which could run: err for each.
func failAll(eff engine.RunTools, err error) []engine.ToolOutcome {
	out := make([]engine.ToolOutcome, len(eff.Calls))
	for i, call := range eff.Calls {
		out[i] = engine.ToolOutcome{CallID: call.CallID, Content: "the call did not run: " + err.Error(), IsError: true}
	}
	return out
}

// driverLease is the lease a durable driver's mirror writes: an owner no
// runner has, until a time no clock reaches, so no Runner on the store
// takes these sessions over or appends to them.
var driverLease = store.Lease{Owner: "driver", Until: time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)}

// Head is the store head a mirror writes with events just applied to st:
// the same summary, expiry index and snapshot policy as the Runner's own
// commits (headFor), under driverLease. It does no I/O.
func (c Core) Head(st *engine.State, events []session.Event) (store.Head, error) {
	head, log, err := headFor(st, engine.Step{Events: events}, driverLease, c.r.snapshots)
	st.Log = log
	return head, err
}

// Mirror appends events to the store with head (from Head), as the
// Runner's own commits are written, once: a retry of a mirror that was
// written (its answer lost) finds the session at or past head.Seq and
// succeeds. nonce is the session's (engine.State.Nonce).
func (c Core) Mirror(ctx context.Context, head store.Head, nonce string, events []session.Event) error {
	if len(events) == 0 {
		return nil
	}
	err := c.r.appendStep(ctx, head, nonce, engine.Step{Events: events})
	if errors.Is(err, session.ErrConflict) {
		if h, herr := c.r.store.Head(ctx, head.ID); herr == nil && h.Seq >= head.Seq {
			return nil // written by an earlier attempt
		}
	}
	return err
}
