package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/session"
)

// DefaultPreviewTimeout bounds a dry run whose tool sets no PreviewTimeout.
const DefaultPreviewTimeout = 10 * time.Second

// runPreviews computes the previews of a RunPreviews effect concurrently,
// at most maxParallel at once. Each is bounded by its tool's preview
// timeout; one that fails, panics or times out is reported as its error,
// so the pause it was computed for is never held up for longer.
func (r *Runner) runPreviews(ctx context.Context, c *compiled, eff engine.RunPreviews) []engine.PreviewOutcome {
	out := make([]engine.PreviewOutcome, len(eff.Previews))
	eachAtMost(len(eff.Previews), r.maxParallel, func(i int) {
		run := eff.Previews[i]
		out[i] = engine.PreviewOutcome{InterruptID: run.InterruptID, Preview: r.preview(ctx, c, run)}
	})
	return out
}

// preview runs one dry run: the tool's Preview with the call's arguments,
// bounded by its timeout, normalised (session.Preview.Normalize).
func (r *Runner) preview(ctx context.Context, c *compiled, run engine.PreviewRun) session.Preview {
	t := c.tools[run.Agent][run.Tool]
	if t == nil || t.Preview == nil {
		return session.Preview{Error: fmt.Sprintf("tool %q has no preview here (its toolset dropped it, or this process has another configuration)", run.Tool)}
	}
	timeout := t.PreviewTimeout
	if timeout <= 0 {
		timeout = DefaultPreviewTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	type result struct {
		p   session.Preview
		err error
	}
	done := make(chan result, 1)
	r.toolWorkers.do(func() {
		defer func() {
			if p := recover(); p != nil {
				done <- result{err: fmt.Errorf("the preview of tool %q panicked: %v", run.Tool, p)}
			}
		}()
		p, err := t.Preview(ctx, run.Args)
		done <- result{p, err}
	})
	var res result
	select {
	case res = <-done:
	case <-ctx.Done():
		// A dry run that ignores its context does not hold up the pause.
		res = result{err: ctx.Err()}
	}
	switch {
	case errors.Is(res.err, context.DeadlineExceeded) && ctx.Err() != nil:
		return session.Preview{Error: fmt.Sprintf("the preview of tool %q timed out after %s", run.Tool, timeout)}
	case res.err != nil:
		return session.PreviewFailed(res.err).Normalize()
	}
	return res.p.Normalize()
}

// Preview is cairn.Runner.Preview (documented there): a dry run of a
// pending approval's call with arguments a person may approve it with,
// computed now and recorded nowhere.
func (r *Runner) Preview(ctx context.Context, sessionID, interruptID string, args json.RawMessage, opts *TurnOptions) (*session.Preview, error) {
	_, actor := opts.apply(ctx)
	st, err := r.load(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	c, err := r.forSession(ctx, st)
	if err != nil {
		r.cache.put(st)
		return nil, err
	}
	run, err := c.machine.PreviewFor(st, interruptID, args, actor)
	r.cache.put(st) // read, not changed
	if err != nil {
		return nil, err
	}
	p := r.preview(ctx, c, run)
	return &p, nil
}

// withEditPreviews computes the dry runs of the edited arguments d
// carries for calls that will wait for more approvers (engine.EditPreviews)
// and returns d with them.
func (r *Runner) withEditPreviews(ctx context.Context, c *compiled, st *engine.State, d engine.Decide) engine.Decide {
	runs := c.machine.EditPreviews(st, d)
	if len(runs) == 0 {
		return d
	}
	d.Previews = map[string]session.Preview{}
	for _, o := range r.runPreviews(ctx, c, engine.RunPreviews{Session: st.SessionID, Previews: runs}) {
		d.Previews[o.InterruptID] = o.Preview
	}
	return d
}
