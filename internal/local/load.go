package local

import (
	"context"
	"errors"
	"fmt"

	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/store"
)

// load returns a session's state: from the cache when the store's head is
// still at the cached seq (no other writer since), else replayed from the log.
func (r *Runner) load(ctx context.Context, id string) (*engine.State, error) {
	h, err := r.store.Head(ctx, id)
	if err != nil {
		return nil, storeError(err, id)
	}
	if st := r.cache.take(id); st != nil && st.Seq == h.Seq {
		r.metrics.cacheLoad(ctx, true)
		return st, nil
	}
	r.metrics.cacheLoad(ctx, false)
	seq, snap, err := r.store.LatestSnapshot(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound): // no snapshot yet: replay the log
	case err != nil:
		return nil, fmt.Errorf("session %s: read snapshot: %w", id, storeError(err, id))
	default:
		tail, err := r.store.Events(ctx, id, seq)
		if err != nil {
			return nil, storeError(err, id)
		}
		var chunks func([]string) ([][]byte, error)
		if blobs, ok := r.store.(store.Blobs); ok {
			chunks = func(keys []string) ([][]byte, error) { return blobs.GetBlobs(ctx, keys) }
		}
		st, size, err := engine.Restore(snap, chunks, tail)
		if err == nil {
			st.Log = engine.LogStats{SnapshotBytes: size, RootBytes: len(snap), TailBytes: eventBytes(tail)}
			return st, nil
		}
		r.log.Warn("unusable snapshot; replaying the whole log", "session", id, "err", err)
	}
	evs, err := r.store.Events(ctx, id, 0)
	if err != nil {
		return nil, storeError(err, id)
	}
	st, err := engine.Replay(evs)
	if err != nil {
		return nil, err
	}
	st.Log = engine.LogStats{TailBytes: eventBytes(evs)}
	return st, nil
}
