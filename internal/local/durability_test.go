package local_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testkit/check"
	"github.com/cairnhq/cairn/internal/testkit/testwait"
	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/model/scripted"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/postgres"
	"github.com/cairnhq/cairn/store/sqlite"
)

// clock is a settable time source.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }
func newClock() *clock               { return &clock{t: time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)} }

func TestApprovalExpiry(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	var rec counter
	m := &recordingModel{inner: deleteScript()}
	tool := deleteTool(&rec)
	tool.ApprovalTTL = time.Second
	r := runnerFor(t, []*cairn.Agent{{Name: "main", Model: m, Tools: []*cairn.Tool{tool}}}, &cairn.RunnerOptions{Now: clk.now, ExpirySweep: -1})
	s := check.NoErr(t)(r.Start(ctx, "main", "Delete test.txt", nil))
	in := s.Interrupts[0]
	if in.ExpiresAt == nil || !in.ExpiresAt.Equal(clk.now().Add(time.Second)) {
		t.Fatalf("expires_at = %v", in.ExpiresAt)
	}
	if n, _ := r.ExpireDue(ctx); n != 0 {
		t.Fatal("expired too early")
	}
	clk.add(1100 * time.Millisecond)
	// A late decision is refused and changes nothing.
	if _, err := r.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: in.ID, Action: cairn.ActionApprove}}, nil); !errors.Is(err, cairn.ErrExpired) {
		t.Fatalf("late approval: %v, want ErrExpired", err)
	}
	if n, err := r.ExpireDue(ctx); n != 1 || err != nil {
		t.Fatalf("ExpireDue = %d, %v", n, err)
	}
	s = check.NoErr(t)(r.Session(ctx, s.ID))
	if s.Status != cairn.StatusCompleted || !strings.Contains(s.Output, "approval expired") || len(rec.runs()) != 0 {
		t.Fatalf("%s %q runs %v", s.Status, s.Output, rec.runs())
	}
	evs := check.Events(t)(r.Events(ctx, s.ID, 0))
	var actor string
	for _, ev := range evs {
		if ev.Type == "decision" {
			actor = string(ev.Data)
		}
	}
	if !strings.Contains(actor, `"role":"expiry"`) || !strings.Contains(actor, `"reason":"approval expired"`) {
		t.Fatalf("expiry decision = %s", actor)
	}
}

func TestExpirySweeperActsOnItsOwn(t *testing.T) {
	ctx := context.Background()
	var rec counter
	tool := deleteTool(&rec)
	tool.ApprovalTTL = 200 * time.Millisecond
	r := runnerFor(t, []*cairn.Agent{{Name: "main", Model: deleteScript(), Tools: []*cairn.Tool{tool}}}, &cairn.RunnerOptions{ExpirySweep: 20 * time.Millisecond})
	s := check.NoErr(t)(r.Start(ctx, "main", "Delete test.txt", nil))
	testwait.For(t, 10*time.Second, "the expired approval to end the turn", func() bool {
		s = check.NoErr(t)(r.Session(ctx, s.ID))
		return s.Status == cairn.StatusCompleted
	})
	if s.Status != cairn.StatusCompleted || !strings.Contains(s.Output, "approval expired") {
		t.Fatalf("%s %q", s.Status, s.Output)
	}
}

func TestRememberedApproval(t *testing.T) {
	ctx := context.Background()
	var rec counter
	m := scripted.New(
		scripted.Reply{ToolCalls: []scripted.Call{{Name: "delete_file", Arguments: `{"filename":"a.txt"}`}}},
		scripted.Reply{ToolCalls: []scripted.Call{{Name: "delete_file", Arguments: `{"filename":"b.txt"}`}}},
		scripted.Reply{Text: "done"},
	)
	r := newRunner(t, m, deleteTool(&rec))
	s := check.NoErr(t)(r.Start(ctx, "main", "delete two", nil))
	if _, err := r.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove, Remember: "forever"}}, nil); !errors.Is(err, cairn.ErrInvalidRequest) {
		t.Fatalf("remember forever: %v", err)
	}
	s, err := r.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove, Remember: cairn.RememberSession}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != cairn.StatusCompleted || strings.Join(rec.runs(), ",") != "a.txt,b.txt" {
		t.Fatalf("second call paused or did not run: %s %v", s.Status, rec.runs())
	}
	if len(s.Remembered) != 1 || s.Remembered[0].Tool != "delete_file" || s.Remembered[0].Agent != "main" {
		t.Fatalf("remembered = %+v", s.Remembered)
	}
}

func TestDecisionEventsAreAnAuditTrail(t *testing.T) {
	ctx := context.Background()
	var rec counter
	r := newRunner(t, deleteScript(), deleteTool(&rec))
	s := check.NoErr(t)(r.Start(ctx, "main", "Delete test.txt", nil))
	s, err := r.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove, Arguments: json.RawMessage(`{"filename":"b.txt"}`)}},
		&cairn.TurnOptions{Actor: cairn.Actor{Name: "ops-lead", Role: "approver"}})
	if err != nil {
		t.Fatal(err)
	}
	evs := check.Events(t)(r.Events(ctx, s.ID, 0))
	for _, ev := range evs {
		if ev.Type != "decision" {
			continue
		}
		var d map[string]any
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			t.Fatal(err)
		}
		actor := d["actor"].(map[string]any)
		if actor["name"] != "ops-lead" || actor["role"] != "approver" || d["action"] != "approve" || ev.Time.IsZero() ||
			len(d["arguments_sha256"].(string)) != 64 || len(d["new_arguments_sha256"].(string)) != 64 || d["arguments_sha256"] == d["new_arguments_sha256"] {
			t.Fatalf("decision event = %s", ev.Data)
		}
		return
	}
	t.Fatal("no decision event")
}

// stores returns every backend to run a test against; PostgreSQL when
// CAIRN_TEST_POSTGRES is set (.ci/run sets it).
func stores(t *testing.T) map[string]store.Store {
	ctx := context.Background()
	out := map[string]store.Store{"memory": store.NewMemory()}
	sq, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sq.Close() })
	out["sqlite"] = sq
	if url := os.Getenv("CAIRN_TEST_POSTGRES"); url != "" {
		pg, err := postgres.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { pg.Close() })
		out["postgres"] = pg
	}
	return out
}

// Concurrent resumes of one pause, on every store: one wins, the tool runs once.
func TestExactlyOnceOnEveryStore(t *testing.T) {
	for name, st := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			var rec counter
			r := runnerFor(t, []*cairn.Agent{{Name: "main", Model: deleteScript(), Tools: []*cairn.Tool{deleteTool(&rec)}}}, &cairn.RunnerOptions{Store: st})
			s, err := r.Start(ctx, "main", "Delete test.txt", nil)
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			errs := make([]error, 6)
			for i := range errs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, errs[i] = r.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove}}, nil)
				}()
			}
			wg.Wait()
			ok := 0
			for _, err := range errs {
				if err == nil {
					ok++
				} else if !errors.Is(err, cairn.ErrConflict) {
					t.Fatal(err)
				}
			}
			if ok != 1 || len(rec.runs()) != 1 {
				t.Fatalf("%d resumes won, the tool ran %d times", ok, len(rec.runs()))
			}
			got := check.NoErr(t)(r.Session(ctx, s.ID))
			if got.Status != cairn.StatusCompleted {
				t.Fatalf("status %s", got.Status)
			}
		})
	}
}

// Two runners share a store: each sees the other's writes, whatever it cached.
func TestCachedStateNeverStale(t *testing.T) {
	ctx := context.Background()
	var rec counter
	sq, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer sq.Close()
	agents := func() []*cairn.Agent {
		return []*cairn.Agent{{Name: "main", Model: deleteScript(), Tools: []*cairn.Tool{deleteTool(&rec)}}}
	}
	r1 := runnerFor(t, agents(), &cairn.RunnerOptions{Store: sq})
	r2 := runnerFor(t, agents(), &cairn.RunnerOptions{Store: sq})
	defer r1.Close()
	defer r2.Close()
	s := check.NoErr(t)(r1.Start(ctx, "main", "Delete test.txt", nil)) // r1 caches the paused state
	if _, err := r2.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove}}, nil); err != nil {
		t.Fatal(err)
	}
	// r1 must not act on its cached (paused) state.
	if _, err := r1.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove}}, nil); !errors.Is(err, cairn.ErrConflict) {
		t.Fatalf("stale resume: %v", err)
	}
	after, err := r1.Send(ctx, s.ID, "Delete test.txt", 0, nil)
	if err != nil || after.Status != cairn.StatusPaused || len(rec.runs()) != 1 {
		t.Fatalf("r1 after r2's write: %v %+v runs %v", err, after, rec.runs())
	}
}

// A long session gets snapshots; a cold runner resumes from the latest
// snapshot plus the log after it, and carries on correctly. The snapshot
// names sealed chunks of messages, so its root stays small and the log
// replayed after it stays bounded however long the session grows.
func TestSnapshotsOnLongSessions(t *testing.T) {
	ctx := context.Background()
	sq, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer sq.Close()
	for _, tc := range []struct {
		name    string
		store   store.Store
		chunked bool
	}{{"chunked", sq, true}, {"whole (a store without Blobs)", struct{ store.Store }{sq}, false}} {
		t.Run(tc.name, func(t *testing.T) {
			m := &recordingModel{inner: scripted.New(scripted.Reply{Text: "echo: {{.Input}}"})}
			r1 := runnerFor(t, []*cairn.Agent{{Name: "main", Model: m}}, &cairn.RunnerOptions{Store: tc.store})
			long := strings.Repeat("a fairly long user message. ", 40)
			s := check.NoErr(t)(r1.Start(ctx, "main", long, nil))
			const turns = 200
			for i := range turns {
				if s, err = r1.Send(ctx, s.ID, fmt.Sprint(i, long), 0, nil); err != nil {
					t.Fatal(err)
				}
			}
			warm := m.last().Messages
			seq, root, err := sq.LatestSnapshot(ctx, s.ID)
			if err != nil || seq < 2 || len(root) == 0 {
				t.Fatalf("no snapshot after a long session: %d %v", seq, err)
			}
			all := check.Events(t)(sq.Events(ctx, s.ID, 0))
			tail := check.Events(t)(sq.Events(ctx, s.ID, seq))
			logBytes, tailBytes := 0, 0
			for _, e := range all {
				logBytes += len(e.Data)
			}
			for _, e := range tail {
				tailBytes += len(e.Data)
			}
			if chunks := strings.Count(string(root), "msgs-sha256-"); tc.chunked != (chunks > 0) {
				t.Fatalf("the root names %d chunks (chunked: %v)", chunks, tc.chunked)
			}
			if tc.chunked {
				// The root holds fewer than engine.ChunkMessages messages of
				// ~1.1 KB; the tail at most that plus one step.
				if len(root) > 80<<10 || tailBytes > len(root)+16<<10 {
					t.Fatalf("root %d bytes, tail %d bytes after it, of a %d-byte log", len(root), tailBytes, logBytes)
				}
			}
			t.Logf("log %d bytes, root %d, tail %d (%d events)", logBytes, len(root), tailBytes, len(tail))
			r2 := runnerFor(t, []*cairn.Agent{{Name: "main", Model: m}}, &cairn.RunnerOptions{Store: tc.store, CachedSessions: -1})
			s, err = r2.Send(ctx, s.ID, "last one", 0, nil)
			if err != nil || s.Output != "echo: last one" {
				t.Fatalf("%v %q", err, s.Output)
			}
			cold := m.last().Messages
			if n := len(cold); n != 2*(turns+2)-1 || !reflect.DeepEqual(cold[:len(warm)], warm) {
				t.Fatalf("the cold runner's model saw %d messages, want %d, the warm runner's first", n, 2*(turns+2)-1)
			}
		})
	}
}

func TestAutoApproveIsRecorded(t *testing.T) {
	ctx := context.Background()
	var rec counter
	r := runnerFor(t, []*cairn.Agent{{Name: "main", Model: deleteScript(), Tools: []*cairn.Tool{deleteTool(&rec)}}}, &cairn.RunnerOptions{AutoApprove: true})
	s := check.NoErr(t)(r.Start(ctx, "main", "Delete test.txt", nil))
	if s.Status != cairn.StatusCompleted || len(rec.runs()) != 1 {
		t.Fatalf("%s runs %v", s.Status, rec.runs())
	}
	evs := check.Events(t)(r.Events(ctx, s.ID, 0))
	for _, ev := range evs {
		if ev.Type == "decision" && strings.Contains(string(ev.Data), `"role":"auto-approve"`) {
			return
		}
	}
	t.Fatal("the auto-approval is not in the log")
}

// appendCounter records the first seq of each Append.
type appendCounter struct {
	store.Store
	mu     sync.Mutex
	firsts []int64
}

func (a *appendCounter) Append(ctx context.Context, h store.Head, expected int64, evs []cairn.Event) error {
	a.mu.Lock()
	a.firsts = append(a.firsts, evs[0].Seq)
	a.mu.Unlock()
	return a.Store.Append(ctx, h, expected, evs)
}

// A session started with an id of Cairn's making writes its first step
// with the model's answer (nobody knows the id before Start answers): a
// pause and resume is four commits. With the caller's id it is five, the
// first before the model is called.
func TestStartMergesTheFirstCommit(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		id      string
		commits int
	}{{"", 4}, {"chosen-by-the-client", 5}} {
		st := &appendCounter{Store: store.NewMemory()}
		var rec counter
		r := runnerFor(t, []*cairn.Agent{{Name: "main", Model: deleteScript(), Tools: []*cairn.Tool{deleteTool(&rec)}}}, &cairn.RunnerOptions{Store: st})
		s, err := r.Start(ctx, "main", "Delete test.txt", &cairn.StartOptions{ID: tc.id})
		if err != nil || s.Status != cairn.StatusPaused {
			t.Fatalf("%v %+v", err, s)
		}
		s, err = r.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove}}, nil)
		if err != nil || s.Status != cairn.StatusCompleted || len(rec.runs()) != 1 {
			t.Fatalf("%v %+v runs %v", err, s, rec.runs())
		}
		if len(st.firsts) != tc.commits || st.firsts[0] != 1 {
			t.Fatalf("id %q: commits start at seqs %v, want %d commits", tc.id, st.firsts, tc.commits)
		}
		evs := check.Events(t)(r.Events(ctx, s.ID, 0))
		if evs[0].Type != "session_started" || evs[1].Type != "user_message" {
			t.Fatalf("log starts %s %s", evs[0].Type, evs[1].Type)
		}
		r.Close()
	}
}

// A Start whose first model call is cut short (the caller's context ends)
// still records the session: its deferred first step goes in the commit
// that records the interruption, so another runner can take the turn over.
// The runner itself may do so at once (it then answers), so the log is
// read up to the interruption.
func TestStartInterruptedInItsFirstModelCallIsRecorded(t *testing.T) {
	st := store.NewMemory()
	calling := make(chan struct{})
	var calls atomic.Int32
	m := model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		if calls.Add(1) > 1 {
			return &model.Response{Message: model.Message{Role: model.RoleAssistant, Content: "taken over"}}, nil
		}
		close(calling)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	r := runnerFor(t, []*cairn.Agent{{Name: "main", Model: m}}, &cairn.RunnerOptions{Store: st, NewID: func() string { return "ses_fixed" }})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-calling; cancel() }()
	if _, err := r.Start(ctx, "main", "hello", nil); err == nil {
		t.Fatal("a Start whose context ended answered without an error")
	}
	evs, err := st.Events(context.Background(), "ses_fixed", 0)
	if err != nil {
		t.Fatalf("the session was not recorded: %v", err)
	}
	var types []string
	for _, ev := range evs {
		types = append(types, string(ev.Type))
	}
	// Beside a second test suite, the runner's takeover once continued the
	// turn before this read (its second model call then failed the turn).
	if got := strings.Join(types, " "); !strings.HasPrefix(got+" ", "session_started user_message turn_interrupted ") {
		t.Fatalf("log: %s", got)
	}
}
