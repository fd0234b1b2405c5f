package audit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/store"
)

// eachSession calls fn with the heads of st's sessions updated at or
// after since (zero: all), most recently updated first, a page at a time:
// a walk of any store holds one page at once.
func eachSession(ctx context.Context, st store.Store, since time.Time, fn func(store.Head) error) error {
	var after store.Position
	for {
		page, err := st.List(ctx, store.ListOptions{After: after, Limit: pageSize})
		if err != nil {
			return fmt.Errorf("audit: list the sessions: %w", err)
		}
		for _, h := range page {
			if !since.IsZero() && h.UpdatedAt.Before(since) {
				return nil // most recently updated first: the rest are older
			}
			if err := fn(h); err != nil {
				return err
			}
		}
		if len(page) < pageSize {
			return nil
		}
		after = page[len(page)-1].Position()
	}
}

// eachTombstone calls fn with st's tombstones, by id, a page at a time;
// none when st does not purge.
func eachTombstone(ctx context.Context, st store.Store, fn func(store.Tombstone) error) error {
	p, ok := st.(store.Purger)
	if !ok {
		return nil
	}
	for last := ""; ; {
		page, err := p.Tombstones(ctx, last, pageSize)
		if err != nil {
			return fmt.Errorf("audit: list the tombstones: %w", err)
		}
		for _, t := range page {
			if err := fn(t); err != nil {
				return err
			}
		}
		if len(page) < pageSize {
			return nil
		}
		last = page[len(page)-1].ID
	}
}

// checkpointOf reads session id's last signed checkpoint: nil when it has
// none; unreadable when the stored one cannot be read (a break, not a
// failure of the walk); err when the store cannot be read.
func checkpointOf(ctx context.Context, st store.Store, id string) (cp *session.Checkpoint, unreadable, err error) {
	cps, ok := st.(store.Checkpoints)
	if !ok {
		return nil, nil, nil
	}
	c, err := cps.Checkpoint(ctx, id)
	switch {
	case err == nil:
		return &c, nil, nil
	case errors.Is(err, store.ErrNotFound):
		return nil, nil, nil
	case errors.Is(err, store.ErrUnreadable):
		return nil, err, nil
	}
	return nil, nil, fmt.Errorf("audit: read the checkpoint of %s: %w", id, err)
}

// unreadableBreak is the break of a session whose checkpoint cannot be read.
func unreadableBreak(id string, headSeq int64, err error) *Break {
	return &Break{Session: id, Seq: headSeq, What: fmt.Sprintf("its signed checkpoint cannot be read: %v", err)}
}
