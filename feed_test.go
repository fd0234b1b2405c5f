package cairn_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/store/sqlite"
)

// WatchSessions sees what another process records: two runners on two
// handles of one SQLite file; the watcher is on the one that does nothing.
func TestWatchSessionsAcrossProcesses(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	path := filepath.Join(t.TempDir(), "cairn.db")
	var rec counter
	runner := func() *cairn.Runner {
		st, err := sqlite.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		r := runnerFor(t, []*cairn.Agent{{Name: "main", Model: deleteScript(), Tools: []*cairn.Tool{deleteTool(&rec)}}}, &cairn.RunnerOptions{Store: st})
		return r
	}
	watcher, worker := runner(), runner()
	feed := watcher.WatchSessions(ctx)

	// next returns the next change of session id with the given status.
	next := func(id string, status cairn.Status) *cairn.Session {
		t.Helper()
		for {
			select {
			case c, ok := <-feed:
				if !ok {
					t.Fatal("the feed closed")
				}
				if c.Session != nil && (id == "" || c.Session.ID == id) && c.Session.Status == status {
					return c.Session
				}
			case <-ctx.Done():
				t.Fatalf("no %s change of session %q", status, id)
			}
		}
	}
	s, err := worker.Start(ctx, "main", "Delete test.txt", nil)
	if err != nil {
		t.Fatal(err)
	}
	paused := next(s.ID, cairn.StatusPaused)
	if len(paused.Interrupts) != 1 || paused.Interrupts[0].Tool != "delete_file" {
		t.Fatalf("paused: %+v", paused)
	}
	if _, err := worker.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove}}, nil); err != nil {
		t.Fatal(err)
	}
	if done := next(s.ID, cairn.StatusCompleted); len(done.Interrupts) != 0 {
		t.Fatalf("completed: %+v", done)
	}

	// The channel closes with its context.
	wctx, stop := context.WithCancel(ctx)
	short := watcher.WatchSessions(wctx)
	stop()
	for range short {
	}
}
