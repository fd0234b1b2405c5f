package local_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testkit/testwait"
	"github.com/cairnhq/cairn/model/scripted"
	"github.com/cairnhq/cairn/store/sqlite"
)

// Retention deletes finished sessions past their time, whole, on its own;
// a paused session and a newer finished one stay.
func TestRetentionDeletesFinishedSessions(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "cairn.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	var runs counter
	tool := deleteTool(&runs)
	done := scripted.New(scripted.Reply{Text: "done"})
	agents := []*cairn.Agent{{Name: "main", Model: deleteScript(), Tools: []*cairn.Tool{tool}}, {Name: "quick", Model: done}}
	r := runnerFor(t, agents, &cairn.RunnerOptions{Store: st, Now: clk.now, ExpirySweep: -1,
		Retention: map[cairn.Status]time.Duration{cairn.StatusCompleted: time.Hour}, RetentionSweep: 10 * time.Millisecond})

	old, err := r.Start(ctx, "quick", "hi", nil)
	if err != nil || old.Status != cairn.StatusCompleted {
		t.Fatalf("%v %v", old, err)
	}
	paused, err := r.Start(ctx, "main", "delete it", nil)
	if err != nil || paused.Status != cairn.StatusPaused {
		t.Fatalf("%v %v", paused, err)
	}
	clk.add(61 * time.Minute)
	fresh, err := r.Start(ctx, "quick", "hi again", nil)
	if err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 10*time.Second, "the old session to be deleted", func() bool {
		_, err := r.Session(ctx, old.ID)
		return errors.Is(err, cairn.ErrNotFound)
	})
	if evs, _ := st.Events(ctx, old.ID, 0); len(evs) != 0 {
		t.Fatalf("the old session left %d events", len(evs))
	}
	for _, id := range []string{paused.ID, fresh.ID} {
		if _, err := r.Session(ctx, id); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
	}
	// The paused one, decided, goes on as ever.
	s, err := r.Resume(ctx, paused.ID, paused.Seq, []cairn.Decision{{InterruptID: paused.Interrupts[0].ID, Action: cairn.ActionApprove}}, nil)
	if err != nil || s.Status != cairn.StatusCompleted || len(runs.runs()) != 1 {
		t.Fatalf("%v %v, runs %d", s, err, len(runs.runs()))
	}
}

// Retention refuses a paused or running status, and a store that cannot
// purge; Purge refuses them too.
func TestRetentionNeverDeletesUnfinishedSessions(t *testing.T) {
	agents := []*cairn.Agent{{Name: "quick", Model: scripted.New(scripted.Reply{Text: "done"})}}
	for _, status := range []cairn.Status{cairn.StatusPaused, cairn.StatusRunning} {
		_, err := cairn.NewRunner(agents, &cairn.RunnerOptions{Retention: map[cairn.Status]time.Duration{status: time.Hour}})
		if err == nil || !strings.Contains(err.Error(), "only completed, failed or cancelled") {
			t.Errorf("retention of %s: %v", status, err)
		}
	}
	r := runnerFor(t, agents, nil)
	if _, err := r.Purge(context.Background(), cairn.StatusPaused, time.Now()); err == nil {
		t.Error("Purge of paused sessions")
	}
}
