package local

import (
	"context"
	"errors"
	"fmt"

	"github.com/cairnhq/cairn/driver"
	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/session"
)

// Fork is cairn.Runner.Fork (documented there).
func (r *Runner) Fork(ctx context.Context, sessionID string, seq int64, opts *TurnOptions) (*session.Session, error) {
	if r.isDraining() {
		return nil, session.ErrShuttingDown
	}
	_, actor := opts.apply(ctx)
	log, err := r.store.Events(ctx, sessionID, 0)
	if err != nil {
		return nil, storeError(err, sessionID)
	}
	if len(log) == 0 {
		return nil, &session.Error{Code: session.CodeNotFound, Message: "no session " + sessionID, Err: session.ErrNotFound}
	}
	if seq < 0 || seq > log[len(log)-1].Seq {
		return nil, &session.Error{Code: session.CodeInvalidRequest, Message: fmt.Sprintf("seq %d: session %s has events 1 to %d", seq, sessionID, log[len(log)-1].Seq)}
	}
	id, nonce := r.newID(), newNonce()
	events, st, err := engine.Fork(log, seq, id, nonce, r.now())
	if err != nil {
		return nil, err
	}
	if err := r.engineOpts.Authority.MaySee(actor, sessionID, st.Tenant); err != nil {
		return nil, &session.Error{Code: session.CodeNotFound, Message: "no session " + sessionID, Err: errors.Join(session.ErrNotFound, err)}
	}
	copied := len(events) - 1 // all but session_forked
	if r.driver != nil {
		// The workflow of the fork goes on from its state; the store, its
		// mirror, gets the log first (as the workflow's mirror would).
		head, err := Core{r: r}.Head(st, events)
		if err != nil {
			return nil, err
		}
		if err := r.appendStep(ctx, head, nonce, engine.Step{Events: events, Copied: copied}); err != nil {
			return nil, err
		}
		snap, err := engine.Snapshot(st)
		if err != nil {
			return nil, err
		}
		return r.driver.Fork(ctx, driver.Fork{ID: id, State: snap})
	}
	if err := r.commit(ctx, st, engine.Step{Events: events, Copied: copied}); err != nil {
		return nil, err
	}
	sess := r.sessionOf(st)
	r.cache.put(st)
	return sess, nil
}
