package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/store"
)

// testCheckpointsKeepTheLast: Head.Checkpoint is stored with the append
// that carries it, a nil one keeps the stored one, a later one replaces
// it, and a purge keeps the last in the tombstone, which Tombstones lists
// by id, a page at a time.
func testCheckpointsKeepTheLast(t *testing.T, open func(t *testing.T) store.Store) {
	ctx := context.Background()
	s := open(t)
	cps, ok := s.(store.Checkpoints)
	if !ok {
		t.Skip("the store keeps no checkpoints (store.Checkpoints)")
	}
	cp := func(seq int64) *session.Checkpoint {
		return &session.Checkpoint{Seq: seq, Hash: "h" + string(rune('0'+seq)), At: epoch().Add(time.Duration(seq) * time.Microsecond), Key: "k1", Sig: "c2ln"}
	}
	read := func(id string) (session.Checkpoint, error) {
		t.Helper()
		return cps.Checkpoint(ctx, id)
	}
	if _, err := read("s1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the checkpoint of no session: %v", err)
	}
	must(t, s.Append(ctx, headAt("s1", 1, "running"), 0, []session.Event{event(1)}))
	if _, err := read("s1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the checkpoint of a session never signed: %v", err)
	}
	h := headAt("s1", 2, "paused")
	h.Checkpoint = cp(2)
	must(t, s.Append(ctx, h, 1, []session.Event{event(2)}))
	must(t, s.Append(ctx, headAt("s1", 3, "running"), 2, []session.Event{event(3)}))
	if got, err := read("s1"); err != nil || got != *cp(2) {
		t.Fatalf("after an append without one: %+v %v, want %+v", got, err, *cp(2))
	}
	h = headAt("s1", 4, "completed")
	h.Checkpoint = cp(4)
	must(t, s.Append(ctx, h, 3, []session.Event{event(4)}))
	if got, err := read("s1"); err != nil || !got.At.Equal(cp(4).At) || got.Seq != 4 || got.Hash != "h4" || got.Key != "k1" || got.Sig != "c2ln" {
		t.Fatalf("replaced: %+v %v, want %+v", got, err, *cp(4))
	}
	created := headAt("s2", 1, "completed")
	created.Checkpoint = cp(1)
	must(t, s.Append(ctx, created, 0, []session.Event{event(1)}))
	must(t, s.Append(ctx, headAt("s3", 1, "completed"), 0, []session.Event{event(1)}))

	p, ok := s.(store.Purger)
	if !ok {
		return
	}
	day := epoch().Add(24 * time.Hour)
	if got, err := p.Purge(ctx, store.PurgeOptions{Status: session.StatusCompleted, Before: epoch().Add(time.Hour), Now: day}); err != nil || len(got) != 3 {
		t.Fatalf("purged %+v %v, want 3", got, err)
	}
	if _, err := read("s1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the checkpoint of a purged session: %v", err)
	}
	first, err := p.Tombstones(ctx, "", 2)
	if err != nil || len(first) != 2 || first[0].ID != "s1" || first[1].ID != "s2" {
		t.Fatalf("the first page of tombstones: %+v %v", first, err)
	}
	if c := first[0].Checkpoint; c == nil || c.Seq != 4 || c.Hash != "h4" || c.Sig != "c2ln" || !c.At.Equal(cp(4).At) || first[0].Seq != 4 {
		t.Fatalf("s1's tombstone: %+v, checkpoint %+v", first[0], c)
	}
	if c := first[1].Checkpoint; c == nil || c.Seq != 1 {
		t.Fatalf("s2's tombstone: checkpoint %+v", c)
	}
	rest, err := p.Tombstones(ctx, "s2", 2)
	if err != nil || len(rest) != 1 || rest[0].ID != "s3" || rest[0].Checkpoint != nil {
		t.Fatalf("the second page: %+v %v, want s3 without a checkpoint", rest, err)
	}
	if one, err := p.Tombstone(ctx, "s1"); err != nil || one.Checkpoint == nil || one.Checkpoint.Seq != 4 {
		t.Fatalf("Tombstone(s1) = %+v %v", one, err)
	}
	if all, err := p.Tombstones(ctx, "", 0); err != nil || len(all) != 3 {
		t.Fatalf("every tombstone: %+v %v", all, err)
	}
}
