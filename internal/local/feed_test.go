package local_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testkit/check"
	"github.com/cairnhq/cairn/store/sqlite"
)

// Changes sees what another process records: two runners on two handles
// of one SQLite file; the watcher is on the one that does nothing.
func TestChangesAcrossProcesses(t *testing.T) {
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
	change := puller(t, watcher.Changes(ctx))

	// next returns the next change of session id with the given status.
	next := func(id string, status cairn.Status) *cairn.Session {
		t.Helper()
		for {
			if c := change(); c.Session != nil && (id == "" || c.Session.ID == id) && c.Session.Status == status {
				return c.Session
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

	// The sequence ends with its context, without an error.
	wctx, stop := context.WithCancel(ctx)
	short := watcher.Changes(wctx)
	stop()
	for _, err := range short {
		if err != nil {
			t.Fatalf("a watch whose context ended yielded %v", err)
		}
	}
}

// Follow and Changes end with ErrShuttingDown when the runner closes under
// them, and a second range over one sequence is an error, not a hang.
func TestFollowersHearTheRunnerClose(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var rec counter
	r, err := cairn.NewRunner([]*cairn.Agent{{Name: "main", Model: deleteScript(), Tools: []*cairn.Tool{deleteTool(&rec)}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := check.NoErr(t)(r.Start(ctx, "main", "Delete test.txt", nil))
	events := r.Follow(ctx, s.ID, 0)
	changes := r.Changes(ctx)
	var recorded int64
	for ev, err := range events {
		if err != nil {
			t.Fatal(err)
		}
		if recorded = ev.Seq; recorded == s.Seq {
			break
		}
	}
	if recorded != s.Seq {
		t.Fatalf("followed up to seq %d, want %d", recorded, s.Seq)
	}
	for _, err := range events {
		if err == nil || !strings.Contains(err.Error(), "already ranged over") {
			t.Fatalf("a second range yielded %v, want the already-ranged error", err)
		}
	}
	r.Close()
	var last error
	for _, err := range changes {
		last = err
	}
	if !errors.Is(last, cairn.ErrShuttingDown) {
		t.Fatalf("Changes ended with %v when the runner closed, want ErrShuttingDown", last)
	}
	last = nil
	for _, err := range r.Follow(ctx, s.ID, 0) {
		last = err
	}
	if !errors.Is(last, cairn.ErrShuttingDown) {
		t.Fatalf("Follow on a closed runner ended with %v, want ErrShuttingDown", last)
	}
}
