package local

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/cairnhq/cairn/session"
)

// bulkParallel bounds the calls of one bulk decision decided at once.
const bulkParallel = 8

// bulkBusyFor is how long a bulk decision waits for a session that runs a
// turn to pause again before it reports the call busy (503, nothing
// recorded).
const bulkBusyFor = 20 * time.Second

// DecideMany is cairn.Runner.DecideMany (documented there).
func (r *Runner) DecideMany(ctx context.Context, req session.BulkRequest, opts *TurnOptions) (*session.BulkResponse, error) {
	_, actor := opts.apply(ctx)
	items, err := r.bulkItems(ctx, req, actor)
	if err != nil {
		return nil, err
	}
	var b [10]byte
	_, _ = rand.Read(b[:])
	out := &session.BulkResponse{Results: make([]session.BulkResult, len(items)), Batch: "bat_" + hex.EncodeToString(b[:])}
	eachAtMost(len(items), bulkParallel, func(i int) {
		out.Results[i] = r.decideOne(ctx, items[i], opts, out.Batch)
	})
	return out, nil
}

// bulkItems checks a bulk request and lists the decisions it makes: its
// own list, or one decision per selected interrupt.
func (r *Runner) bulkItems(ctx context.Context, req session.BulkRequest, actor session.Actor) ([]session.BulkDecision, error) {
	bad := func(format string, args ...any) error {
		return &session.Error{Code: session.CodeInvalidRequest, Message: fmt.Sprintf(format, args...)}
	}
	switch {
	case len(req.Decisions) > 0 && req.Select != nil:
		return nil, bad(`give "decisions" (a list) or "select" (with "action"), not both`)
	case len(req.Decisions) > 0:
		if req.Action != "" || req.Reason != "" || req.Limit != 0 {
			return nil, bad(`"action", "reason" and "limit" go with "select"; a listed decision has its own action`)
		}
		if len(req.Decisions) > session.MaxBulkLimit {
			return nil, bad("%d decisions: one request decides at most %d", len(req.Decisions), session.MaxBulkLimit)
		}
		seen := map[[2]string]bool{}
		for i, d := range req.Decisions {
			switch key := [2]string{d.SessionID, d.InterruptID}; {
			case d.SessionID == "" || d.InterruptID == "":
				return nil, bad("decisions[%d]: session_id and interrupt_id are required", i)
			case d.Action == "":
				return nil, bad("decisions[%d].action is required (%s)", i, actionList())
			case seen[key]:
				return nil, bad("decisions[%d]: interrupt %s of session %s is listed twice", i, d.InterruptID, d.SessionID)
			default:
				seen[key] = true
			}
		}
		return req.Decisions, nil
	case req.Select == nil:
		return nil, bad(`give "decisions" (a list of {session_id, interrupt_id, action, …}) or "select" ({kind, tool, agent, session_ids}) with "action"`)
	}
	if req.Action != session.ActionApprove && req.Action != session.ActionReject {
		return nil, bad(`"action" with "select" is approve or reject, not %q`, req.Action)
	}
	limit := req.Limit
	switch {
	case limit < 0 || limit > session.MaxBulkLimit:
		return nil, bad(`"limit" %d: use 1 to %d (default %d)`, limit, session.MaxBulkLimit, session.DefaultBulkLimit)
	case limit == 0:
		limit = session.DefaultBulkLimit
	}
	sel := *req.Select
	if sel.Kind == "" {
		sel.Kind = session.KindApproval
	}
	if !sel.Kind.Known() {
		return nil, bad("select.kind %q is not one of %s", sel.Kind, session.Kinds())
	}
	if len(sel.SessionIDs) > session.MaxBulkLimit {
		return nil, bad("select.session_ids: at most %d", session.MaxBulkLimit)
	}
	pending, err := r.selected(ctx, sel, actor, req.Action, limit)
	if err != nil {
		return nil, err
	}
	items := make([]session.BulkDecision, len(pending))
	for i, p := range pending {
		items[i] = session.BulkDecision{SessionID: p.SessionID, Decision: session.Decision{InterruptID: p.ID, Action: req.Action, Reason: req.Reason}}
	}
	return items, nil
}

// selected lists up to limit pending interrupts sel picks that actor may
// take action on, newest pause first.
func (r *Runner) selected(ctx context.Context, sel session.Selector, actor session.Actor, action session.Action, limit int) ([]session.PendingInterrupt, error) {
	var out []session.PendingInterrupt
	take := func(p session.PendingInterrupt) bool {
		in := p.Interrupt
		agent := ""
		if n := len(in.Path); n > 0 {
			agent = in.Path[n-1].Agent
		}
		switch {
		case in.Kind != sel.Kind, sel.Tool != "" && in.Tool != sel.Tool, sel.Agent != "" && agent != sel.Agent:
			return true
		}
		if _, err := r.engineOpts.Authority.MayDecide(actor, "", &in, action); err != nil {
			return true // what the actor may not do is not selected
		}
		out = append(out, p)
		return len(out) < limit
	}
	if len(sel.SessionIDs) > 0 {
		for _, id := range sel.SessionIDs {
			s, err := r.Session(ctx, id)
			if errors.Is(err, session.ErrNotFound) {
				continue
			}
			if err != nil {
				return nil, err
			}
			if s.Status != session.StatusPaused || r.engineOpts.Authority.MaySee(actor, s.ID, s.Tenant) != nil {
				continue
			}
			for _, in := range s.Interrupts {
				if !take(session.PendingInterrupt{Interrupt: in, SessionID: s.ID, Tenant: s.Tenant, Seq: s.Seq, PausedAt: s.UpdatedAt}) {
					return out, nil
				}
			}
		}
		return out, nil
	}
	page := Page{Limit: MaxPageSize, Kinds: []session.Kind{sel.Kind}, Viewer: actor}
	for {
		list, next, err := r.InterruptsPage(ctx, page)
		if err != nil {
			return nil, err
		}
		for _, p := range list {
			if !take(p) {
				return out, nil
			}
		}
		if next == "" {
			return out, nil
		}
		page.Cursor = next
	}
}

// decideOne decides one call of a bulk decision as its session's own
// decisions endpoint would, at the session's current seq. When the session
// moved on while it was being decided (another of its calls decided, a
// turn running), it is read and decided again; a call decided meanwhile
// is reported as such (already_decided), never decided twice.
func (r *Runner) decideOne(ctx context.Context, item session.BulkDecision, opts *TurnOptions, batch string) session.BulkResult {
	res := session.BulkResult{SessionID: item.SessionID, InterruptID: item.InterruptID}
	_, actor := opts.apply(ctx)
	fail := func(err error) session.BulkResult {
		code := session.CodeOf(err)
		res.Status = code.HTTPStatus()
		if res.Status == 0 {
			res.Status, code = 500, session.CodeInternal
		}
		res.Error = &session.ErrorBody{Code: code, Message: err.Error()}
		return res
	}
	deadline := time.Now().Add(bulkBusyFor)
	for attempt := 1; ; attempt++ {
		s, err := r.Session(ctx, item.SessionID)
		if err == nil {
			// A session the actor may not see answers as one that does not exist.
			if r.engineOpts.Authority.MaySee(actor, s.ID, s.Tenant) != nil {
				err = &session.Error{Code: session.CodeNotFound, Message: "no session " + item.SessionID, Err: session.ErrNotFound}
			}
		}
		if err != nil {
			return fail(err)
		}
		pending := slices.ContainsFunc(s.Interrupts, func(in session.Interrupt) bool { return in.ID == item.InterruptID })
		if s.Status == session.StatusRunning && !pending {
			// Its turn runs (another of its calls was just decided): the
			// call may be pending again once it pauses.
			if time.Now().After(deadline) || ctx.Err() != nil {
				return fail(&session.Error{Code: session.CodeSessionBusy, Interrupt: item.InterruptID,
					Message: fmt.Sprintf("session %s ran a turn for %s; nothing was recorded for interrupt %s: decide it again", s.ID, bulkBusyFor, item.InterruptID)})
			}
			sleepFor(ctx, attempt)
			continue
		}
		out, err := r.resume(ctx, s.ID, s.Seq, []session.Decision{item.Decision}, opts, batch)
		if err == nil {
			res.Status, res.SessionStatus = 200, out.Status
			return res
		}
		// A stale seq (the session moved on since it was read, with the
		// call pending) is read again; a call decided meanwhile is not
		// (already_decided), nor one of a session that waits for nothing.
		if session.CodeOf(err) == session.CodeConflict && !errors.Is(err, session.ErrLeaseLost) && (pending || s.Status == session.StatusRunning) &&
			time.Now().Before(deadline) && ctx.Err() == nil {
			sleepFor(ctx, attempt)
			continue
		}
		return fail(err)
	}
}

// sleepFor waits a little longer each attempt (at most half a second),
// with jitter so that the winners of each round differ, or until ctx ends:
// a retry of a decision that another's got in before.
func sleepFor(ctx context.Context, attempt int) {
	d := time.Duration(min(attempt, 20))*25*time.Millisecond + time.Duration(mrand.IntN(20))*time.Millisecond
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// actionList names the decision actions, for messages.
func actionList() string {
	var names []string
	for _, a := range session.AllActions() {
		names = append(names, string(a))
	}
	return strings.Join(names, ", ")
}
