package local

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"time"

	"github.com/cairnhq/cairn/driver"
	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/internal/schema"
	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/store"
)

// StartOptions are cairn.StartOptions (documented there), which convert to
// them.
type StartOptions struct {
	Metadata    map[string]any
	Detach      bool
	Owner       string
	Actor       session.Actor
	Observe     func(session.Event)
	ID          string
	Call        *session.CallRequest
	ClientTools []model.ToolDefinition
}

// checkClientTools checks that the tools a caller declares have argument
// schemas that compile (the engine checks the rest): refused, nothing is
// recorded.
func checkClientTools(tools []model.ToolDefinition) error {
	for i, t := range tools {
		if len(t.Parameters) == 0 {
			continue
		}
		if _, err := schema.Compile(t.Parameters); err != nil {
			return &session.Error{Code: session.CodeInvalidRequest, Message: fmt.Sprintf("tools[%d].parameters: %q's JSON Schema: %v", i, t.Name, err)}
		}
	}
	return nil
}

// firstActor is who sends the first message: Actor, or else Owner.
func (o *StartOptions) firstActor() session.Actor {
	if o.Actor.IsZero() {
		return session.Actor{Name: o.Owner}
	}
	return o.Actor
}

var sessionIDPattern = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

// Start is cairn.Runner.Start (documented there).
func (r *Runner) Start(ctx context.Context, agent, input string, opts *StartOptions) (*session.Session, error) {
	if r.isDraining() {
		return nil, session.ErrShuttingDown
	}
	if opts == nil {
		var none StartOptions // on the stack, as long as opts does not escape
		opts = &none
	}
	ctx = withObserver(ctx, opts.Observe)
	if err := checkClientTools(opts.ClientTools); err != nil {
		return nil, err
	}
	id := opts.ID
	if id == "" {
		id = r.newID()
	} else if !sessionIDPattern.MatchString(id) {
		return nil, &session.Error{Code: session.CodeInvalidRequest, Message: fmt.Sprintf("session id %q: use 1–128 letters, digits and . _ - :", id)}
	}
	if r.driver != nil {
		o := *opts // a copy escapes, not opts
		return r.startWith(ctx, id, agent, input, &o)
	}
	st := &engine.State{}
	in := engine.Start{SessionID: id, Nonce: newNonce(), Agent: agent, Text: input, Metadata: opts.Metadata, Owner: opts.Owner, Actor: opts.firstActor(), Call: opts.Call, Tools: opts.ClientTools}
	if opts.Call != nil {
		in.Rules = r.rulesFor(ctx, in.Actor.Tenant, agent, []model.ToolCall{{Name: opts.Call.Tool}})
	}
	c := r.compiled.Load()
	if err := r.keepDefinition(ctx, c, agent); err != nil {
		return nil, err
	}
	step, err := c.machine.Step(st, in, r.now())
	if err != nil {
		return nil, err
	}
	if opts.Detach {
		if err := r.commit(ctx, st, step); err != nil {
			return nil, err
		}
		sess := r.sessionOf(st)
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			if err := r.drive(r.background, st, engine.Step{Effects: step.Effects}); err != nil {
				r.log.Error("detached turn stopped", "session", st.SessionID, "err", err)
				return
			}
			r.cache.put(st)
		}()
		return sess, nil
	}
	// With an id of its own making, nobody can read, follow or cancel the
	// session before this call answers, so its first step (session start,
	// user message) guards nothing and is written with the model's answer:
	// one commit fewer per session. A client-chosen id is written at once.
	sess, err := r.runTurn(ctx, st, step, opts.ID == "")
	return sess, withoutFirstCommit(err)
}

// Resume is cairn.Runner.Resume (documented there). A lone completion
// (complete or fail) refused for the session's state, not for the call's
// (the session runs, is being taken over, or moved on since seq), is
// taken as Complete takes one: completions are first-wins by call, and
// a result is never refused as final while nothing decided the call.
func (r *Runner) Resume(ctx context.Context, sessionID string, seq int64, decisions []session.Decision, opts *TurnOptions) (*session.Session, error) {
	out, err := r.resume(ctx, sessionID, seq, decisions, opts, "")
	if len(decisions) == 1 && decisions[0].Action.Completes() && session.CodeOf(err) == session.CodeConflict && !errors.Is(err, session.ErrLeaseLost) {
		return r.complete(ctx, sessionID, decisions[0], opts)
	}
	return out, err
}

// resume applies decisions at seq, once: Resume without its second
// chance for completions. batch names the bulk decision they are part of.
func (r *Runner) resume(ctx context.Context, sessionID string, seq int64, decisions []session.Decision, opts *TurnOptions, batch string) (*session.Session, error) {
	ctx, actor := opts.apply(ctx)
	var out *session.Session
	var err error
	if r.driver != nil {
		for attempt := 1; ; attempt++ {
			out, err = r.observed(ctx, sessionID, seq, func() (*session.Session, error) {
				return r.driver.Resume(ctx, sessionID, driver.Decide{Seq: seq, Decisions: decisions, Actor: actor, Batch: batch})
			})
			// The workflow applies one update at a time and refuses one
			// that comes while it drives another's (the approval before
			// this one of a call that needs several): an approval as it is
			// is sent again, as the local driver applies it again, until
			// it counts (stillApproves) or the call was decided.
			if session.CodeOf(err) != session.CodeConflict || errors.Is(err, session.ErrLeaseLost) || !approvesOnly(decisions) || attempt == approvalRetries {
				break
			}
			if decided := r.decidedBefore(ctx, sessionID, 0, decisions); decided != nil {
				return nil, decided
			}
			if sleepFor(ctx, attempt); ctx.Err() != nil {
				return nil, ctx.Err()
			}
		}
	} else {
		for attempt := 1; ; attempt++ {
			out, err = r.apply(ctx, sessionID, engine.Decide{Seq: seq, Actor: actor, Decisions: decisions, Batch: batch})
			// People approving one call that needs several approvals do so
			// independently: when another's approval was committed first
			// (the store refused this one's commit), this one is applied
			// again to the session as it is now, where the engine still
			// takes it if the arguments are the same (stillApproves).
			if !errors.Is(err, store.ErrConflict) || !approvesOnly(decisions) || attempt == approvalRetries {
				break
			}
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			time.Sleep(time.Duration(rand.IntN(attempt*2)+1) * time.Millisecond) // jitter: the winners of each round differ
		}
	}
	if code := session.CodeOf(err); (code == session.CodeConflict || code == session.CodeUnknownInterrupt) && !errors.Is(err, session.ErrLeaseLost) {
		if decided := r.decidedBefore(ctx, sessionID, 0, decisions); decided != nil {
			return nil, decided
		}
		if r.driver != nil {
			if decided := r.decidedInMirror(ctx, sessionID, decisions); decided != nil {
				return nil, decided
			}
		}
	}
	return out, err
}

// decidedInMirror waits a little for a durable driver's store mirror: its
// workflow refused a decision because another was just applied, which the
// mirror writes a moment later. It says so as decidedBefore does; nil
// once the mirror shows the session waiting on none of the interrupts
// named without such a decision (the refusal was for another reason), or
// after two seconds.
func (r *Runner) decidedInMirror(ctx context.Context, sessionID string, decisions []session.Decision) error {
	deadline := time.Now().Add(2 * time.Second)
	for {
		if decided := r.decidedBefore(ctx, sessionID, 0, decisions); decided != nil {
			return decided
		}
		sess, err := r.Session(ctx, sessionID)
		lagging := err == nil && (sess.Status == session.StatusRunning || slices.ContainsFunc(sess.Interrupts, func(in session.Interrupt) bool {
			return slices.ContainsFunc(decisions, func(d session.Decision) bool { return d.InterruptID == in.ID })
		}))
		if !lagging || !time.Now().Before(deadline) {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(25 * time.Millisecond):
		}
	}
}

// MayDecide is cairn.Runner.MayDecide (documented there).
func (r *Runner) MayDecide(a session.Actor, sess *session.Session, d session.Decision) error {
	if err := r.engineOpts.Authority.MaySee(a, sess.ID, sess.Tenant); err != nil {
		return err
	}
	for i := range sess.Interrupts {
		if in := &sess.Interrupts[i]; in.ID == d.InterruptID {
			_, err := r.engineOpts.Authority.MayDecide(a, sess.Owner, in, d.Action)
			return err
		}
	}
	return nil
}

// Decides is cairn.Runner.Decides (documented there).
func (r *Runner) Decides(a session.Actor, owner string, in *session.Interrupt) bool {
	return r.engineOpts.Authority.Decides(a, owner, in)
}

// approvalRetries bounds how often a request of approvals is applied again
// after other approvals of the same calls won the race to the store.
const approvalRetries = 32

// approvesOnly reports whether every decision approves as it is (no new
// arguments): the requests that may be applied again after a lost race.
func approvesOnly(decisions []session.Decision) bool {
	for _, d := range decisions {
		if d.Action != session.ActionApprove || len(d.Arguments) > 0 && string(d.Arguments) != "null" {
			return false
		}
	}
	return len(decisions) > 0
}

// Send is cairn.Runner.Send (documented there).
func (r *Runner) Send(ctx context.Context, sessionID, text string, seq int64, opts *TurnOptions) (*session.Session, error) {
	ctx, actor := opts.apply(ctx)
	var tools []model.ToolDefinition
	if opts != nil {
		tools = opts.ClientTools
	}
	if err := checkClientTools(tools); err != nil {
		return nil, err
	}
	if r.driver != nil {
		after := seq
		if after == 0 {
			h, err := r.store.Head(ctx, sessionID)
			if err != nil {
				return nil, storeError(err, sessionID)
			}
			after = h.Seq
		}
		return r.observed(ctx, sessionID, after, func() (*session.Session, error) {
			return r.driver.Send(ctx, sessionID, driver.Message{Text: text, Seq: seq, Actor: actor, Tools: tools})
		})
	}
	return r.apply(ctx, sessionID, engine.Message{Text: text, Seq: seq, Actor: actor, Tools: tools})
}

// Session is cairn.Runner.Session (documented there).
func (r *Runner) Session(ctx context.Context, id string) (*session.Session, error) {
	h, err := r.store.Head(ctx, id)
	if err != nil {
		return nil, storeError(err, id)
	}
	return r.sessionFromHead(h)
}

// Sessions is cairn.Runner.Sessions (documented there).
func (r *Runner) Sessions(ctx context.Context, status session.Status) ([]*session.Session, error) {
	return all(func(p Page) ([]*session.Session, string, error) { return r.SessionsPage(ctx, status, p) })
}

// PendingInterrupts is cairn.Runner.PendingInterrupts (documented there).
func (r *Runner) PendingInterrupts(ctx context.Context) ([]session.PendingInterrupt, error) {
	return all(func(p Page) ([]session.PendingInterrupt, string, error) { return r.InterruptsPage(ctx, p) })
}

// Events is cairn.Runner.Events (documented there).
func (r *Runner) Events(ctx context.Context, id string, after int64) ([]session.Event, error) {
	// The event at after too, whose hash is the first one's prev.
	from := max(after-1, 0)
	evs, err := r.store.Events(ctx, id, from)
	if err != nil {
		return nil, storeError(err, id)
	}
	prev := ""
	if after > 0 && len(evs) > 0 && evs[0].Seq == after {
		prev, evs = evs[0].Hash, evs[1:]
	}
	chainPrev(evs, prev)
	return evs, nil
}

// chainPrev fills in the Prev of events read from a store (which keeps
// Hash only): prev is the hash of the event before the first.
func chainPrev(evs []session.Event, prev string) {
	for i := range evs {
		if evs[i].Hash != "" && evs[i].Prev == "" {
			evs[i].Prev = prev
		}
		prev = evs[i].Hash
	}
}

// Subscribe follows a session's events from after, as a channel (the
// driver's wait for a turn's end); cairn.Runner.Follow is the public form.
func (r *Runner) Subscribe(sessionID string, after int64) (events <-chan session.Event, cancel func()) {
	return r.hub.subscribe(sessionID, after)
}
