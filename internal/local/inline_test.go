package local_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testkit/check"
	"github.com/cairnhq/cairn/internal/testkit/testwait"
	"github.com/cairnhq/cairn/model/scripted"
	"github.com/cairnhq/cairn/store"
)

// stuckTool's first call blocks until release is closed and ignores its
// context on purpose; later calls answer at once.
func stuckTool(started, release chan struct{}, runs *atomic.Int32) *cairn.Tool {
	type args struct{}
	return cairn.NewTool(&cairn.Tool{Name: "stuck", Description: "Ignores its context."}, func(ctx context.Context, _ args) (string, error) {
		if runs.Add(1) == 1 {
			close(started)
			<-release
		}
		return "done", nil
	})
}

// A tool handler without a timeout runs on its turn's goroutine (no
// hand-off to a worker), yet one that ignores its context does not hold
// the session: when the caller's context ends, the turn is recorded as
// interrupted, the session released and the turn ended at once, while the
// handler still runs. Another runner takes the session over (the call is
// in doubt), Shutdown does not wait for the handler, and when it returns
// nothing more is recorded and Start answers the context's error.
func TestAHandlerThatIgnoresItsContextDoesNotHoldTheSession(t *testing.T) {
	st := store.NewMemory()
	started, release := make(chan struct{}), make(chan struct{})
	var runs atomic.Int32
	tool := stuckTool(started, release, &runs)
	agents := func() []*cairn.Agent {
		m := scripted.New(scripted.Reply{ToolCalls: []scripted.Call{{ID: "c1", Name: "stuck", Arguments: `{}`}}}, scripted.Reply{Text: "ok"})
		return []*cairn.Agent{{Name: "main", Model: m, Tools: []*cairn.Tool{tool}}}
	}
	a := runnerFor(t, agents(), &cairn.RunnerOptions{Store: st, Takeover: -1, NewID: func() string { return "ses_stuck" }})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := a.Start(ctx, "main", "go", nil)
		errc <- err
	}()
	<-started
	cancel()
	interrupted := func() int {
		n := 0
		for _, ev := range check.Events(t)(st.Events(context.Background(), "ses_stuck", 0)) {
			if ev.Type == cairn.EventTurnInterrupted {
				n++
			}
		}
		return n
	}
	testwait.For(t, 5*time.Second, "the turn recorded as interrupted while its handler runs", func() bool { return interrupted() == 1 })
	shut, stop := context.WithTimeout(context.Background(), 5*time.Second)
	defer stop()
	if err := a.Shutdown(shut); err != nil || shut.Err() != nil {
		t.Fatalf("Shutdown waited for a handler that ignores its context: %v %v", err, shut.Err())
	}
	b := runnerFor(t, agents(), &cairn.RunnerOptions{Store: st, Takeover: -1})
	if n, err := b.Recover(context.Background()); n != 1 || err != nil {
		t.Fatalf("another runner could not take the session over: %d %v", n, err)
	}
	s := check.NoErr(t)(b.Session(context.Background(), "ses_stuck"))
	if s.Status != cairn.StatusPaused || len(s.Interrupts) != 1 || !s.Interrupts[0].InDoubt {
		t.Fatalf("after the takeover: %s %+v, want the call in doubt", s.Status, s.Interrupts)
	}
	select {
	case err := <-errc:
		t.Fatalf("Start answered while its goroutine ran the handler: %v", err)
	default:
	}
	close(release)
	if err := <-errc; !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("Start answered %v, want the interruption", err)
	}
	if n := interrupted(); n != 1 {
		t.Fatalf("turn_interrupted recorded %d times", n)
	}
	if runs.Load() != 1 {
		t.Fatalf("the tool ran %d times", runs.Load())
	}
}

// The hand-off the inline handler saves: a handler runs on the goroutine
// that called Start, which a worker would not (its stack differs).
func TestHandlersRunOnTheCallersGoroutine(t *testing.T) {
	caller := make(chan string, 1)
	type args struct{}
	where := cairn.NewTool(&cairn.Tool{Name: "where", Description: "Reports its goroutine."}, func(ctx context.Context, _ args) (string, error) {
		caller <- goroutineStack()
		return "here", nil
	})
	m := scripted.New(scripted.Reply{ToolCalls: []scripted.Call{{Name: "where", Arguments: `{}`}}}, scripted.Reply{Text: "ok"})
	r := runnerFor(t, []*cairn.Agent{{Name: "main", Model: m, Tools: []*cairn.Tool{where}}}, nil)
	ctx, cancel := context.WithCancel(context.Background()) // cancellable: a worker before
	defer cancel()
	s := check.NoErr(t)(r.Start(ctx, "main", "go", nil))
	if s.Status != cairn.StatusCompleted {
		t.Fatalf("%s", s.Status)
	}
	if stack := <-caller; !strings.Contains(stack, "TestHandlersRunOnTheCallersGoroutine") {
		t.Fatalf("the handler ran on another goroutine:\n%s", stack)
	}
}

func goroutineStack() string {
	buf := make([]byte, 1<<16)
	return string(buf[:runtime.Stack(buf, false)])
}

// The in-memory store keeps the hashes of the engine's events as "derived"
// (store.Head.Chained) and reads back exactly the hashes the engine
// recorded, across a turn's commits, a pause and a resume.
func TestTheStoreReadsBackTheEnginesHashes(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	type args struct{}
	gated := cairn.NewTool(&cairn.Tool{Name: "deploy", Description: "Deploys.", Approval: cairn.Always()}, func(ctx context.Context, _ args) (string, error) { return "ok", nil })
	m := scripted.New(scripted.Reply{ToolCalls: []scripted.Call{{Name: "deploy", Arguments: `{}`}}}, scripted.Reply{Text: "done"})
	r := runnerFor(t, []*cairn.Agent{{Name: "main", Model: m, Tools: []*cairn.Tool{gated}}}, &cairn.RunnerOptions{Store: st})
	recorded := map[int64]string{}
	observe := func(ev cairn.Event) { recorded[ev.Seq] = ev.Hash }
	s := check.NoErr(t)(r.Start(ctx, "main", "go", &cairn.StartOptions{Observe: observe}))
	s = check.NoErr(t)(r.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove}}, &cairn.TurnOptions{Observe: observe}))
	if s.Status != cairn.StatusCompleted {
		t.Fatalf("%s", s.Status)
	}
	evs := check.Events(t)(st.Events(ctx, s.ID, 0))
	if len(evs) != len(recorded) || len(evs) < 8 {
		t.Fatalf("%d events stored, %d observed", len(evs), len(recorded))
	}
	for _, ev := range evs {
		if ev.Hash == "" || ev.Hash != recorded[ev.Seq] {
			t.Fatalf("event %d (%s): stored hash %q, the engine's %q", ev.Seq, ev.Type, ev.Hash, recorded[ev.Seq])
		}
	}
	if tail := check.Events(t)(st.Events(ctx, s.ID, evs[len(evs)-3].Seq)); len(tail) != 2 || tail[1].Hash != evs[len(evs)-1].Hash {
		t.Fatalf("a read from the middle: %+v", tail)
	}
}

// conflictingRenewals is a memory store on which every lease renewal
// finds the session taken over, counting them.
type conflictingRenewals struct {
	*store.Memory
	renewals atomic.Int32
}

func (s *conflictingRenewals) RenewLease(ctx context.Context, id string, lease store.Lease) (bool, error) {
	s.renewals.Add(1)
	return false, store.ErrConflict
}

// A lease lost while a handler that ignores its context still runs on the
// turn's goroutine is renewed (and warned about) once, not at every tick
// of the lease keeper for as long as the handler runs.
func TestALostLeaseIsNotRenewedAgain(t *testing.T) {
	st := &conflictingRenewals{Memory: store.NewMemory()}
	started, release := make(chan struct{}), make(chan struct{})
	var runs atomic.Int32
	tool := stuckTool(started, release, &runs)
	m := scripted.New(scripted.Reply{ToolCalls: []scripted.Call{{ID: "c1", Name: "stuck", Arguments: `{}`}}}, scripted.Reply{Text: "ok"})
	r := runnerFor(t, []*cairn.Agent{{Name: "main", Model: m, Tools: []*cairn.Tool{tool}}}, &cairn.RunnerOptions{Store: st, Takeover: -1, Lease: 300 * time.Millisecond})
	errc := make(chan error, 1)
	go func() {
		_, err := r.Start(context.Background(), "main", "go", nil)
		errc <- err
	}()
	<-started
	testwait.For(t, 5*time.Second, "the first renewal", func() bool { return st.renewals.Load() > 0 })
	time.Sleep(500 * time.Millisecond) // elapsed time: ten ticks of the lease keeper (every 50 ms) while the handler runs
	close(release)
	if err := <-errc; !errors.Is(err, cairn.ErrLeaseLost) {
		t.Fatalf("Start answered %v, want the lost lease", err)
	}
	if n := st.renewals.Load(); n != 1 {
		t.Fatalf("the lost lease was renewed %d times", n)
	}
}
