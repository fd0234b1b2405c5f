package local

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/store"
)

// purgeShare is the share of the time a retention sweep spends deleting:
// after each batch it rests nine times as long as the batch took, so the
// turns that commit meanwhile keep the store's writer nine tenths of the
// time (see store.PurgeAll). bench/scale measures the approval cycle's
// throughput during a sweep.
const purgeShare = 0.1

// DefaultTombstoneRetention is cairn.DefaultTombstoneRetention: a year.
const DefaultTombstoneRetention = 365 * 24 * time.Hour

// startRetention checks the retention settings and starts the sweep.
func (r *Runner) startRetention(keep map[session.Status]time.Duration, every time.Duration) error {
	if _, ok := r.store.(store.Purger); !ok {
		return fmt.Errorf("cairn: retention: the store %T does not purge (store.Purger)", r.store)
	}
	for _, st := range slices.Sorted(maps.Keys(keep)) {
		if err := (store.PurgeOptions{Status: st}).Check(); err != nil {
			return fmt.Errorf("cairn: retention: %w", err)
		}
		if keep[st] <= 0 {
			return fmt.Errorf("cairn: retention of %s sessions: %v is not a positive duration", st, keep[st])
		}
	}
	r.every(every, time.Minute, func(period time.Duration) {
		defer r.wg.Done()
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			r.retain(keep)
			select {
			case <-r.background.Done():
				return
			case <-t.C:
			}
		}
	})
	return nil
}

// retain deletes what keep says is past its time, and logs it.
func (r *Runner) retain(keep map[session.Status]time.Duration) {
	for _, st := range slices.Sorted(maps.Keys(keep)) {
		start := r.now()
		n, err := r.Purge(r.background, st, start.Add(-keep[st]))
		if err != nil && r.background.Err() == nil {
			r.log.Error("retention", "status", st, "deleted", n, "err", err)
		} else if n > 0 {
			r.log.Info("retention", "status", st, "deleted", n, "older_than", keep[st].String(), "took", r.now().Sub(start).Round(time.Millisecond).String())
		}
	}
}

// Purge is cairn.Runner.Purge (documented there).
func (r *Runner) Purge(ctx context.Context, status session.Status, before time.Time) (int, error) {
	p, ok := r.store.(store.Purger)
	if !ok {
		return 0, fmt.Errorf("cairn: purge: the store %T does not purge (store.Purger)", r.store)
	}
	now := r.now()
	opts := store.PurgeOptions{Status: status, Before: before, Now: now, TombstonesBefore: now.Add(-cmp.Or(r.tombstoneKeep, DefaultTombstoneRetention))}
	return store.PurgeAll(ctx, p, opts, purgeShare, func(done []store.Head) {
		for _, h := range done {
			r.cache.take(h.ID) // a state cached for it goes too
		}
		if r.metrics != nil {
			r.metrics.purged.Add(ctx, int64(len(done)), metric.WithAttributes(attribute.String("status", string(status))))
		}
	})
}
