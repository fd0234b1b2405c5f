package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"

	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/internal/schema"
	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/session"
)

// callModel runs one model call; after is the seq of the session's last
// event, which its text deltas follow.
// t, when not nil, is the turn the call is part of: its model calls, one
// at a time, share a deadline (modelDeadline) and a delta sink.
func (r *Runner) callModel(ctx context.Context, sessionID string, after int64, eff engine.CallModel, t *turn) (*model.Response, error) {
	agent := r.agents[eff.Agent]
	ctx, span := r.startModelSpan(ctx, agent.Model, eff.Agent, eff.Frame)
	req := eff.Request // the engine makes a request per effect: this call's own
	var deadline *modelDeadline
	if t != nil {
		t.deltas = deltaSink{r: r, ctx: ctx, session: sessionID, after: after, frame: eff.Frame, agent: eff.Agent, gate: t.writing}
		deadline = &t.modelDeadline
		if t.onDelta == nil {
			t.onDelta = t.deltas.send // a method value allocates: once a turn
		}
		req.OnTextDelta = t.onDelta
	} else {
		deltas := &deltaSink{r: r, ctx: ctx, session: sessionID, after: after, frame: eff.Frame, agent: eff.Agent}
		req.OnTextDelta = deltas.send
	}
	start := time.Now()
	resp, err := limitedGenerate(ctx, agent.Model, r.limits[eff.Agent], req, deadline)
	if r.log.Enabled(ctx, slog.LevelDebug) { // its arguments cost allocations even when nobody reads it
		r.log.Debug("model call", "session", sessionID, "agent", eff.Agent, "duration", time.Since(start), "err", err)
	}
	r.metrics.modelCall(ctx, eff.Agent, time.Since(start), err != nil)
	if err == nil && resp == nil {
		err = errors.New("model returned no response")
	}
	if err == nil && span != noSpan {
		span.SetAttributes(attribute.Int64(attrInputTokens, resp.Usage.InputTokens), attribute.Int64(attrOutputTokens, resp.Usage.OutputTokens))
	}
	endSpan(span, err)
	return resp, err
}

// deltaSink passes a model call's text deltas to the session's followers
// and observers. One struct rather than a closure over callModel's
// variables, which moved them all to the heap; a turn keeps one for its
// calls, which run one at a time (a model calls OnTextDelta only while
// its Generate runs: model.Request).
type deltaSink struct {
	r              *Runner
	ctx            context.Context
	session        string
	after          int64 // the seq the deltas come after
	frame, agent   string
	sentFirstDelta bool
	// gate is the write of the step before the call, while it is in
	// flight: the deltas follow its events, and are dropped if it failed.
	gate *inFlightWrite
}

func (d *deltaSink) send(delta string) {
	if d.gate != nil {
		<-d.gate.written
		if d.gate.err != nil {
			return
		}
		d.gate.tell()
		d.gate = nil
	}
	data, _ := json.Marshal(session.ModelDelta{Text: delta})
	ev := session.Event{Type: session.EventModelDelta, Time: d.r.now(), Frame: d.frame, Agent: d.agent, Data: data}
	d.r.hub.delta(d.session, d.after, !d.sentFirstDelta, ev)
	d.sentFirstDelta = true
	observe(d.ctx, ev)
}

// modelLimits are a model's limits (model.LimitsOf), and the cause a call
// past its timeout ends with, made once per model rather than per call.
type modelLimits struct {
	model.Limits
	timedOut error
}

func limitsOf(m model.Model) modelLimits {
	lim := model.LimitsOf(m)
	return modelLimits{Limits: lim, timedOut: model.TimedOut("timeout", lim.Timeout)}
}

// limitedGenerate calls the model under its limits: the whole call within
// Timeout, and a reply of at most MaxReplyBytes, whatever the model. A
// call a limit ends is a ProviderError with its Code; the caller's own
// cancellation is returned as is.
func limitedGenerate(ctx context.Context, m model.Model, lim modelLimits, req *model.Request, deadline *modelDeadline) (*model.Response, error) {
	callCtx := ctx
	switch {
	case lim.Timeout > 0 && deadline != nil:
		callCtx = deadline.begin(ctx, lim.Timeout, lim.timedOut)
		defer deadline.end()
	case lim.Timeout > 0:
		var cancel context.CancelFunc
		callCtx, cancel = context.WithTimeoutCause(ctx, lim.Timeout, lim.timedOut)
		defer cancel()
	}
	resp, err := generate(callCtx, m, req)
	var limit *model.LimitError
	switch {
	case err != nil && ctx.Err() == nil && errors.As(context.Cause(callCtx), &limit):
	case err == nil && resp != nil && lim.MaxReplyBytes > 0 && model.ReplySize(resp.Message) > lim.MaxReplyBytes:
		limit = model.ReplyTooLarge(lim.MaxReplyBytes)
	default:
		return resp, err
	}
	provider, name := "model", "?"
	if d, ok := m.(describer); ok {
		provider, name = d.Describe()
	}
	return nil, model.NewProviderError(provider, name, limit, 0, "", "", 0)
}

// modelDeadline bounds a turn's model calls, which run one at a time,
// with one context and one timer for the turn instead of a context and a
// timer per call (five allocations each, and a timer-heap insertion).
// A timer that fires, or whose call's parent context differs (a tracing
// span's), is replaced with its context, so a timer only ever cancels the
// call it was armed for. Only the turn's goroutine calls begin and end.
type modelDeadline struct {
	parent context.Context
	ctx    context.Context
	cancel context.CancelCauseFunc
	timer  *time.Timer
	mu     sync.Mutex
	cause  error // what the armed timer cancels with; guarded by mu
}

// begin returns the context of a call that must end within timeout, with
// cause when it does not.
func (d *modelDeadline) begin(parent context.Context, timeout time.Duration, cause error) context.Context {
	d.mu.Lock()
	d.cause = cause
	d.mu.Unlock()
	// A parent of a type == cannot compare (a caller's own context type)
	// is never taken for the last one: comparing it would panic.
	if d.ctx == nil || !reflect.TypeOf(parent).Comparable() || d.parent != parent {
		d.close()
		d.parent = parent
		d.ctx, d.cancel = context.WithCancelCause(parent)
		cancel := d.cancel
		d.timer = time.AfterFunc(timeout, func() {
			d.mu.Lock()
			cause := d.cause
			d.mu.Unlock()
			cancel(cause)
		})
		return d.ctx
	}
	d.timer.Reset(timeout) // stopped by end, so not running
	return d.ctx
}

// end stops the timer after a call; if it fired (or is firing), its
// context is done with and the next call gets new ones.
func (d *modelDeadline) end() {
	if !d.timer.Stop() {
		d.close()
	}
}

// close releases the context and the timer: at the end of the turn.
func (d *modelDeadline) close() {
	if d.timer != nil {
		d.timer.Stop()
		d.cancel(context.Canceled)
	}
	d.parent, d.ctx, d.cancel, d.timer = nil, nil, nil, nil
}

// generate calls the model; a model that panics is a model error, not a
// dead process.
func generate(ctx context.Context, m model.Model, req *model.Request) (resp *model.Response, err error) {
	defer func() {
		if p := recover(); p != nil {
			resp, err = nil, fmt.Errorf("the model panicked: %v", p)
		}
	}()
	return m.Generate(ctx, req)
}

// handle runs t's handler on call; a handler that panics is a tool error,
// not a dead process.
func handle(ctx context.Context, t *Tool, call engine.ToolRun) (res toolResult) {
	defer func() {
		if p := recover(); p != nil {
			res = toolResult{err: fmt.Errorf("tool %q panicked: %v", call.Tool, p)}
		}
	}()
	out, err := t.Handler(ctx, call.Args)
	return toolResult{out, err}
}

// runTools runs the calls concurrently, at most maxParallel at once, and
// returns the outcomes in the model's call order. inline: the turn is
// guarded (Runner.rescue), so a handler without a timeout may run on the
// calling goroutine.
//
// c is the compiled agents the session runs under (Runner.forSession).
func (r *Runner) runTools(ctx context.Context, c *compiled, eff engine.RunTools, inline bool) []engine.ToolOutcome {
	out := make([]engine.ToolOutcome, len(eff.Calls))
	if len(eff.Calls) == 1 { // the common case: no goroutine to start and wait for
		out[0] = r.runTool(ctx, eff.Session, eff.Nonce, c.tools[eff.Agent][eff.Calls[0].Tool], eff.Calls[0], inline)
		return out
	}
	eachAtMost(len(eff.Calls), r.maxParallel, func(i int) {
		call := eff.Calls[i]
		out[i] = r.runTool(ctx, eff.Session, eff.Nonce, c.tools[eff.Agent][call.Tool], call, inline)
	})
	return out
}

type toolResult struct {
	out string
	err error
}

func (r *Runner) runTool(ctx context.Context, sessionID, nonce string, t *Tool, call engine.ToolRun, inline bool) (outcome engine.ToolOutcome) {
	ctx, span := r.startToolSpan(ctx, call.Tool, call.CallID)
	if span != noSpan {
		defer func() {
			if outcome.IsError {
				span.SetStatus(codes.Error, outcome.Content)
				span.SetAttributes(attribute.String(attrErrorType, "tool_error"))
			}
			span.End()
		}()
	}
	outcome = engine.ToolOutcome{CallID: call.CallID}
	if r.metrics != nil {
		began := time.Now()
		defer func() { r.metrics.toolCall(ctx, call.Tool, time.Since(began), outcome.IsError) }()
	}
	if t == nil { // its toolset dropped it since the engine started the call
		outcome.Content, outcome.IsError = fmt.Sprintf("tool %q is no longer available; the call did not run", call.Tool), true
		return outcome
	}
	ctx = &callContext{Context: ctx, call: Call{Key: call.IdempotencyKey, ask: askState{answers: call.Answers},
		session: sessionID, nonce: nonce, waits: call.Waits, reruns: call.Reruns, r: r}}
	if t.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t.Timeout)
		defer cancel()
	}
	var res toolResult
	if ctx.Done() == nil || inline && t.Timeout == 0 {
		// Nothing can cancel the call, or the turn is guarded: run it here.
		res = handle(ctx, t, call)
	} else {
		done := make(chan toolResult, 1)
		r.toolWorkers.do(func() { done <- handle(ctx, t, call) })
		select {
		case res = <-done:
		case <-ctx.Done():
			// A handler that ignores its context does not hold up the session.
			res = toolResult{err: ctx.Err()}
		}
	}
	if res.err == nil {
		outcome.Content = res.out
	} else {
		outcome = r.toolError(call, t, res.err)
	}
	if r.log.Enabled(ctx, slog.LevelDebug) {
		r.log.Debug("tool call", "tool", call.Tool, "call_id", call.CallID, "error", outcome.IsError)
	}
	return outcome
}

// toolError is the outcome of a call whose handler returned err: a wait
// on a system (Pending), a question (Ask), in doubt, a timeout or a
// failure the model reads. Kept out of runTool's way so that a call that
// succeeds allocates nothing for the errors it did not return.
func (r *Runner) toolError(call engine.ToolRun, t *Tool, err error) engine.ToolOutcome {
	outcome := engine.ToolOutcome{CallID: call.CallID}
	var q *askError
	var pending *PendingError
	switch {
	case errors.As(err, &pending):
		outcome.Pending = &engine.Pending{Handle: pending.Handle, Message: pending.Message}
	case errors.As(err, &q):
		outcome.Question, outcome.Schema, outcome.URL, outcome.Held = q.q.Text, q.q.Schema, q.q.URL, q.q.Held
		outcome.State, outcome.Remote, outcome.Path, outcome.Approval = q.q.State, q.q.Remote, q.q.Path, q.q.Approval
		if len(q.q.State) > 0 && !json.Valid(q.q.State) {
			outcome = engine.ToolOutcome{CallID: call.CallID, IsError: true,
				Content: fmt.Sprintf("tool %q asked a question whose state is not JSON", call.Tool)}
		}
		if len(q.q.Schema) > 0 {
			if _, err := schema.Compile(q.q.Schema); err != nil {
				outcome = engine.ToolOutcome{CallID: call.CallID, IsError: true,
					Content: fmt.Sprintf("tool %q asked a question with a schema Cairn cannot use: %v", call.Tool, err)}
			}
		}
	case errors.Is(err, session.ErrInDoubt):
		outcome.InDoubt = true
	case errors.Is(err, context.DeadlineExceeded) && t.Timeout > 0:
		outcome.Content, outcome.IsError = fmt.Sprintf("tool %q timed out after %s", call.Tool, t.Timeout), true
	default:
		outcome.Content, outcome.IsError = fmt.Sprintf("tool %q failed: %v", call.Tool, err), true
	}
	return outcome
}
