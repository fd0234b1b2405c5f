package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/store"
)

// testPurge: finished sessions older than the cutoff go whole, oldest
// first, a batch at a time; paused and running ones, newer ones and blobs
// another session still refers to stay.
func testPurge(t *testing.T, open func(t *testing.T) store.Store) {
	ctx := context.Background()
	s := open(t)
	p, ok := s.(store.Purger)
	if !ok {
		t.Skip("the store does not purge (store.Purger)")
	}
	b := s.(store.Blobs)
	// seq n: updated at epoch + n s; the cutoff is at 10 s.
	for _, c := range []struct {
		id     string
		seq    int64
		status session.Status
		blobs  []string
	}{
		{"old-done", 2, "completed", []string{"only-old", "shared"}},
		{"older-done", 1, "completed", nil},
		{"old-failed", 3, "failed", nil},
		{"old-paused", 4, "paused", nil},
		{"old-running", 5, "running", nil},
		{"new-done", 20, "completed", []string{"shared"}},
	} {
		var evs []session.Event
		for i := int64(1); i <= c.seq; i++ {
			evs = append(evs, event(i))
		}
		h := headAt(c.id, c.seq, c.status)
		if c.blobs != nil {
			h.Snapshot = []byte(`{"snap":1}`)
			for _, k := range c.blobs {
				h.Blobs = append(h.Blobs, store.Blob{Key: k, Data: []byte(k)})
			}
		}
		must(t, s.Append(ctx, h, 0, evs))
	}
	cutoff := epoch().Add(10 * time.Second)

	if _, err := p.Purge(ctx, store.PurgeOptions{Status: "paused", Before: cutoff}); err == nil || !strings.Contains(err.Error(), "only completed, failed or cancelled") {
		t.Fatalf("a purge of paused sessions: %v", err)
	}
	var order []string
	for {
		got, err := p.Purge(ctx, store.PurgeOptions{Status: "completed", Before: cutoff, Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 {
			break
		}
		for _, h := range got {
			order = append(order, h.ID)
		}
	}
	if strings.Join(order, ",") != "older-done,old-done" {
		t.Fatalf("purged %v, want older-done then old-done", order)
	}
	got, err := p.Purge(ctx, store.PurgeOptions{Status: "failed", Before: cutoff})
	if err != nil || len(got) != 1 || got[0].ID != "old-failed" || got[0].Status != "failed" {
		t.Fatalf("purge failed: %+v %v", got, err)
	}
	for _, id := range []string{"old-done", "older-done", "old-failed"} {
		if _, err := s.Head(ctx, id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s's head after the purge: %v", id, err)
		}
		if evs, _ := s.Events(ctx, id, 0); len(evs) != 0 {
			t.Errorf("%s's events after the purge: %d", id, len(evs))
		}
		if _, _, err := s.LatestSnapshot(ctx, id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s's snapshot after the purge: %v", id, err)
		}
	}
	for _, id := range []string{"old-paused", "old-running", "new-done"} {
		if h, err := s.Head(ctx, id); err != nil {
			t.Errorf("%s is gone: %v", id, err)
		} else if evs, _ := s.Events(ctx, id, 0); int64(len(evs)) != h.Seq {
			t.Errorf("%s kept %d of its %d events", id, len(evs), h.Seq)
		}
	}
	if _, err := blob(ctx, b, "only-old"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the blob only old-done wrote: %v", err)
	}
	if got, err := blob(ctx, b, "shared"); err != nil || string(got) != "shared" {
		t.Errorf("the blob new-done refers to as well: %q %v", got, err)
	}
	// Nothing is left to purge before the cutoff.
	if got, _ := p.Purge(ctx, store.PurgeOptions{Status: "completed", Before: cutoff}); len(got) != 0 {
		t.Errorf("a second sweep purged %+v", got)
	}
}

// testPurgeLeavesTombstones: a purge leaves each session's tombstone (its
// id, nonce, last seq, when) in the same commit; a session of the same id
// created again and purged again replaces it; a pre-nonce session's has
// none; tombstones go once older than TombstonesBefore, and not before.
func testPurgeLeavesTombstones(t *testing.T, open func(t *testing.T) store.Store) {
	ctx := context.Background()
	s := open(t)
	p, ok := s.(store.Purger)
	if !ok {
		t.Skip("the store does not purge (store.Purger)")
	}
	appendDone := func(id, nonce string, seq int64) {
		t.Helper()
		h := headAt(id, seq, session.StatusCompleted)
		if nonce != "" {
			h.Summary = json.RawMessage(`{"id":"` + id + `","nonce":"` + nonce + `"}`)
		}
		var evs []session.Event
		for i := int64(1); i <= seq; i++ {
			evs = append(evs, event(i))
		}
		must(t, s.Append(ctx, h, 0, evs))
	}
	purge := func(now, tombstonesBefore time.Time) []store.Head {
		t.Helper()
		got, err := p.Purge(ctx, store.PurgeOptions{Status: session.StatusCompleted, Before: epoch().Add(time.Hour), Now: now, TombstonesBefore: tombstonesBefore})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	check := func(id string, want store.Tombstone) {
		t.Helper()
		got, err := p.Tombstone(ctx, id)
		if err != nil || got.ID != want.ID || got.Nonce != want.Nonce || got.Seq != want.Seq || !got.PurgedAt.Equal(want.PurgedAt) {
			t.Errorf("tombstone of %s: %+v %v; want %+v", id, got, err, want)
		}
	}
	if _, err := p.Tombstone(ctx, "chat-42"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the tombstone of a session never purged: %v", err)
	}
	day := epoch().Add(24 * time.Hour)
	appendDone("chat-42", "n1", 3)
	appendDone("old-style", "", 2)
	appendDone("other", "n9", 1)
	if got := purge(day, time.Time{}); len(got) != 3 {
		t.Fatalf("purged %+v, want 3 sessions", got)
	}
	check("chat-42", store.Tombstone{ID: "chat-42", Nonce: "n1", Seq: 3, PurgedAt: day})
	check("old-style", store.Tombstone{ID: "old-style", Nonce: "", Seq: 2, PurgedAt: day})

	// The id is used again, by a session with another nonce: the
	// tombstone stays while it lives, and its purge replaces it.
	appendDone("chat-42", "n2", 4)
	check("chat-42", store.Tombstone{ID: "chat-42", Nonce: "n1", Seq: 3, PurgedAt: day})
	later := day.Add(48 * time.Hour)
	if got := purge(later, day); len(got) != 1 || got[0].ID != "chat-42" {
		t.Fatalf("purged %+v, want chat-42", got)
	}
	check("chat-42", store.Tombstone{ID: "chat-42", Nonce: "n2", Seq: 4, PurgedAt: later})
	check("other", store.Tombstone{ID: "other", Nonce: "n9", Seq: 1, PurgedAt: day}) // purged at day: not before it

	// A sweep with nothing to purge still lets old tombstones go.
	if got := purge(later, day.Add(time.Second)); len(got) != 0 {
		t.Fatalf("purged %+v", got)
	}
	for _, id := range []string{"other", "old-style"} {
		if _, err := p.Tombstone(ctx, id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("the tombstone of %s, purged before TombstonesBefore: %v", id, err)
		}
	}
	check("chat-42", store.Tombstone{ID: "chat-42", Nonce: "n2", Seq: 4, PurgedAt: later})
}
