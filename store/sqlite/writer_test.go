package sqlite

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/store"
)

// Concurrent appends share commits (group commit); a conflicting append in
// a shared commit is refused alone, and every other one is there.
func TestGroupCommit(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "g.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const n = 64
	head := func(id string, seq int64) store.Head {
		at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
		return store.Head{ID: id, Agent: "main", Status: "paused", Seq: seq, CreatedAt: at, UpdatedAt: at, Summary: []byte(`{}`)}
	}
	ev := func(seq int64) []session.Event {
		return []session.Event{{Seq: seq, Type: "user_message", Time: time.Now(), Data: []byte(`{}`)}}
	}
	var wg sync.WaitGroup
	errs := make([]error, 2*n)
	for i := range n {
		wg.Add(2)
		go func() { defer wg.Done(); errs[i] = s.Append(ctx, head(fmt.Sprintf("s%d", i), 1), 0, ev(1)) }()
		go func() { defer wg.Done(); errs[n+i] = s.Append(ctx, head("shared", 1), 0, ev(1)) }() // one wins
	}
	wg.Wait()
	won := 0
	for i, err := range errs {
		switch {
		case i < n && err != nil:
			t.Fatalf("append %d: %v", i, err)
		case i >= n && err == nil:
			won++
		case i >= n && !errors.Is(err, store.ErrConflict):
			t.Fatalf("a losing append: %v, want ErrConflict", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d appends created the shared session, want 1", won)
	}
	for i := range n {
		if evs, err := s.Events(ctx, fmt.Sprintf("s%d", i), 0); err != nil || len(evs) != 1 {
			t.Fatalf("session s%d: %v %v", i, evs, err)
		}
	}
	batches, writes := s.w.batches.Load(), s.w.writes.Load()
	// writes counts the appends of committed batches: every distinct one
	// and the shared winner, and the losers that shared a batch with
	// others (a batch of lone losers rolls back and is not counted).
	if writes < n+1 || batches >= writes {
		t.Fatalf("%d writes in %d commits: no commit was shared", writes, batches)
	}
	t.Logf("%d appends in %d commits", writes, batches)
}
