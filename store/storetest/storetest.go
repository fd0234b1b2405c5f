// Package storetest is the conformance suite every store.Store backend must pass.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cairnhq/cairn/store"
)

// Run runs the suite against stores made by open; each subtest gets a fresh one.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	ctx := context.Background()
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	ev := func(seq int64) store.Event {
		return store.Event{Seq: seq, Type: "user_message", Time: t0.Add(time.Duration(seq) * time.Millisecond), Frame: "f1", Agent: "main", Data: json.RawMessage(fmt.Sprintf(`{"text":"m%d"}`, seq))}
	}
	head := func(id string, seq int64, status string) store.Head {
		return store.Head{ID: id, Agent: "main", Status: status, Seq: seq, CreatedAt: t0, UpdatedAt: t0.Add(time.Duration(seq) * time.Second), Summary: json.RawMessage(fmt.Sprintf(`{"seq":%d}`, seq))}
	}

	t.Run("AppendAndRead", func(t *testing.T) {
		s := open(t)
		if err := s.Append(ctx, head("s1", 2, "running"), 0, []store.Event{ev(1), ev(2)}); err != nil {
			t.Fatal(err)
		}
		if err := s.Append(ctx, head("s1", 3, "paused"), 2, []store.Event{ev(3)}); err != nil {
			t.Fatal(err)
		}
		got, err := s.Events(ctx, "s1", 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 3 || got[0].Seq != 1 || got[2].Seq != 3 || string(got[2].Data) != `{"text":"m3"}` || !got[1].Time.Equal(ev(2).Time) || got[0].Frame != "f1" || got[0].Agent != "main" {
			t.Fatalf("events = %+v", got)
		}
		after, _ := s.Events(ctx, "s1", 2)
		if len(after) != 1 || after[0].Seq != 3 {
			t.Fatalf("events after 2 = %+v", after)
		}
		h, err := s.Head(ctx, "s1")
		if err != nil || h.Seq != 3 || h.Status != "paused" || string(h.Summary) != `{"seq":3}` || !h.CreatedAt.Equal(t0) {
			t.Fatalf("head = %+v, %v", h, err)
		}
	})

	t.Run("StaleSeqConflictsAndWritesNothing", func(t *testing.T) {
		s := open(t)
		must(t, s.Append(ctx, head("s1", 1, "running"), 0, []store.Event{ev(1)}))
		must(t, s.Append(ctx, head("s1", 2, "paused"), 1, []store.Event{ev(2)}))
		err := s.Append(ctx, head("s1", 2, "completed"), 1, []store.Event{ev(2)})
		if !errors.Is(err, store.ErrConflict) {
			t.Fatalf("stale append: err = %v, want ErrConflict", err)
		}
		if err := s.Append(ctx, head("s1", 1, "running"), 0, []store.Event{ev(1)}); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("re-create: err = %v, want ErrConflict", err)
		}
		h, _ := s.Head(ctx, "s1")
		got, _ := s.Events(ctx, "s1", 0)
		if h.Status != "paused" || h.Seq != 2 || len(got) != 2 {
			t.Fatalf("after conflicts: head %+v, %d events", h, len(got))
		}
	})

	t.Run("ConcurrentAppendsOneWinner", func(t *testing.T) {
		s := open(t)
		must(t, s.Append(ctx, head("s1", 1, "paused"), 0, []store.Event{ev(1)}))
		var wg sync.WaitGroup
		var mu sync.Mutex
		wins, conflicts := 0, 0
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := s.Append(ctx, head("s1", 2, "running"), 1, []store.Event{ev(2)})
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					wins++
				case errors.Is(err, store.ErrConflict):
					conflicts++
				default:
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if wins != 1 || conflicts != 7 {
			t.Fatalf("wins %d conflicts %d, want 1 and 7", wins, conflicts)
		}
	})

	t.Run("NotFound", func(t *testing.T) {
		s := open(t)
		if _, err := s.Head(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Head: %v", err)
		}
		if _, err := s.Events(ctx, "nope", 0); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Events: %v", err)
		}
		if err := s.Append(ctx, head("nope", 2, "x"), 1, []store.Event{ev(2)}); !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrConflict) {
			t.Fatalf("Append to unknown: %v", err)
		}
	})

	t.Run("NilSummaryKeepsThePrevious", func(t *testing.T) {
		s := open(t)
		must(t, s.Append(ctx, head("s1", 1, "running"), 0, []store.Event{ev(1)}))
		h := head("s1", 2, "paused")
		h.Summary = nil
		must(t, s.Append(ctx, h, 1, []store.Event{ev(2)}))
		got, err := s.Head(ctx, "s1")
		if err != nil || string(got.Summary) != `{"seq":1}` || got.Seq != 2 || got.Status != "paused" {
			t.Fatalf("head = %+v %s, %v", got, got.Summary, err)
		}
	})

	t.Run("Snapshots", func(t *testing.T) {
		s := open(t)
		must(t, s.Append(ctx, head("s1", 1, "running"), 0, []store.Event{ev(1)}))
		if _, _, err := s.LatestSnapshot(ctx, "s1"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("no snapshot yet: %v", err)
		}
		h := head("s1", 2, "running")
		h.Snapshot = []byte(`{"at":2}`)
		must(t, s.Append(ctx, h, 1, []store.Event{ev(2)}))
		must(t, s.Append(ctx, head("s1", 3, "paused"), 2, []store.Event{ev(3)}))
		seq, data, err := s.LatestSnapshot(ctx, "s1")
		if err != nil || seq != 2 || string(data) != `{"at":2}` {
			t.Fatalf("snapshot = %d %q %v", seq, data, err)
		}
		if got, _ := s.Head(ctx, "s1"); got.Snapshot != nil {
			t.Fatal("Head returned the snapshot")
		}
		// A conflicting append writes no snapshot either.
		h = head("s1", 3, "x")
		h.Snapshot = []byte(`{"at":"stale"}`)
		if err := s.Append(ctx, h, 2, []store.Event{ev(3)}); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("stale append: %v", err)
		}
		if _, data, _ := s.LatestSnapshot(ctx, "s1"); string(data) != `{"at":2}` {
			t.Fatalf("a refused append replaced the snapshot: %s", data)
		}
	})

	t.Run("SecretFirstWriterWins", func(t *testing.T) {
		s := open(t)
		a, err := s.Secret(ctx, "hmac", []byte("first"))
		if err != nil || string(a) != "first" {
			t.Fatalf("first: %q %v", a, err)
		}
		b, err := s.Secret(ctx, "hmac", []byte("second"))
		if err != nil || string(b) != "first" {
			t.Fatalf("second: %q %v", b, err)
		}
	})

	t.Run("MarkUsedOnce", func(t *testing.T) {
		s := open(t)
		var wg sync.WaitGroup
		var mu sync.Mutex
		wins := 0
		for range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := s.MarkUsed(ctx, "tok_1")
				mu.Lock()
				defer mu.Unlock()
				if err == nil {
					wins++
				} else if !errors.Is(err, store.ErrConflict) {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if wins != 1 {
			t.Fatalf("wins = %d, want 1", wins)
		}
		if err := s.MarkUsed(ctx, "tok_2"); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("ListByStatus", func(t *testing.T) {
		s := open(t)
		must(t, s.Append(ctx, head("a", 1, "paused"), 0, []store.Event{ev(1)}))
		must(t, s.Append(ctx, head("b", 2, "completed"), 0, []store.Event{ev(1), ev(2)}))
		must(t, s.Append(ctx, head("c", 3, "paused"), 0, []store.Event{ev(1), ev(2), ev(3)}))
		paused, err := s.List(ctx, store.ListOptions{Status: "paused"})
		if err != nil {
			t.Fatal(err)
		}
		if len(paused) != 2 || paused[0].ID != "c" || paused[1].ID != "a" {
			t.Fatalf("paused = %+v", paused)
		}
		all, _ := s.List(ctx, store.ListOptions{})
		if len(all) != 3 {
			t.Fatalf("all = %d", len(all))
		}
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
