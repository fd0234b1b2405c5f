package local

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/store"
)

// hasTTL reports whether some wait may expire: a tool has an approval TTL
// or a wait timeout, or an agent's tools may change to include one.
func (r *Runner) hasTTL() bool {
	for _, a := range r.agents {
		if a.Notify != nil {
			return true
		}
	}
	for _, tools := range r.compiled.Load().tools {
		for _, t := range tools {
			if t.Engine.ApprovalTTL > 0 || (t.Engine.Wait != nil && t.Engine.Wait.Timeout > 0) || t.Engine.Escalation != nil {
				return true
			}
		}
	}
	return false
}

func (r *Runner) sweep(every time.Duration) {
	defer r.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-r.background.Done():
			return
		case <-t.C:
			if _, err := r.ExpireDue(r.background); err != nil && r.background.Err() == nil {
				r.log.Error("approval expiry", "err", err)
			}
		}
	}
}

// ExpireDue is cairn.Runner.ExpireDue (documented there).
func (r *Runner) ExpireDue(ctx context.Context) (int, error) {
	if r.driver != nil {
		return 0, nil // the driver's timers expire its sessions
	}
	now := r.now()
	n := 0
	var errs []error
	var after store.Position
	for {
		// The store's index of due times: sessions with nothing due are not read.
		due, err := r.store.List(ctx, store.ListOptions{ExpiredAt: now, After: after, Limit: 100})
		if err != nil {
			return n, errors.Join(append(errs, err)...)
		}
		for _, h := range due {
			_, err := r.apply(ctx, h.ID, engine.Expire{})
			switch {
			case err == nil:
				n++
			case errors.Is(err, session.ErrConflict): // decided or expired by someone else meanwhile
			default:
				errs = append(errs, fmt.Errorf("expire %s: %w", h.ID, err))
			}
		}
		if len(due) < 100 {
			return n, errors.Join(errs...)
		}
		after = due[len(due)-1].Position()
	}
}
