package local_test

import (
	"context"
	"encoding/json"
	"errors"
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
	"github.com/cairnhq/cairn/model/scripted"
	"github.com/cairnhq/cairn/store/sqlite"
)

// slowTool needs approval and takes d to run; it counts its runs and the
// runs in progress, to catch a second, concurrent execution.
type slowTool struct {
	d                     time.Duration
	runs, inFlight, overl atomic.Int32
	started               chan struct{}
}

func (s *slowTool) tool() *cairn.Tool {
	return &cairn.Tool{Name: "deploy", Description: "Deploy.", Parameters: json.RawMessage(`{"type":"object"}`),
		Approval: cairn.Always(), Timeout: time.Minute,
		Handler: func(ctx context.Context, _ json.RawMessage) (string, error) {
			s.runs.Add(1)
			if s.inFlight.Add(1) > 1 {
				s.overl.Add(1)
			}
			defer s.inFlight.Add(-1)
			if s.started != nil {
				select {
				case s.started <- struct{}{}:
				default:
				}
			}
			select {
			case <-time.After(s.d):
				return "deployed", nil
			case <-ctx.Done():
				return "", ctx.Err()
			}
		}}
}

// node opens a runner on its own handle of the SQLite file at path: what a
// second `cairn serve` on the same file has.
func node(t *testing.T, path string, lease time.Duration, tool *cairn.Tool) *cairn.Runner {
	t.Helper()
	st, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	m := scripted.New(scripted.Reply{ToolCalls: []scripted.Call{{Name: "deploy", Arguments: `{}`}}}, scripted.Reply{Text: "{{.LastResult}}"})
	r := runnerFor(t, []*cairn.Agent{{Name: "main", Model: m, Tools: []*cairn.Tool{tool}}}, &cairn.RunnerOptions{Store: st, Lease: lease, Takeover: 100 * time.Millisecond})
	t.Cleanup(func() { r.Close(); st.Close() })
	return r
}

// While node A runs an approved tool for longer than its lease, node B's
// takeover loop (running every 100ms) never touches the session: A renews
// its lease. The tool runs once, A's request answers 200, nothing is in doubt.
func TestLiveOwnerIsNeverTakenOver(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "c.db")
	slow := &slowTool{d: 2 * time.Second}
	a := node(t, path, time.Second, slow.tool())
	b := node(t, path, time.Second, slow.tool())
	s, err := a.Start(ctx, "main", "deploy", nil)
	if err != nil || s.Status != cairn.StatusPaused {
		t.Fatalf("%v %+v", err, s)
	}
	if n, err := b.Recover(ctx); n != 0 || err != nil {
		t.Fatalf("B took over a paused session: %d %v", n, err)
	}
	done, err := a.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove}}, nil)
	if err != nil || done.Status != cairn.StatusCompleted || done.Output != "deployed" {
		t.Fatalf("A's own request: %v %+v", err, done)
	}
	if slow.runs.Load() != 1 {
		t.Fatalf("the tool ran %d times", slow.runs.Load())
	}
	evs := check.Events(t)(b.Events(ctx, s.ID, 0))
	for _, ev := range evs {
		if strings.Contains(string(ev.Data), `"in_doubt":true`) || ev.Type == "turn_interrupted" {
			t.Fatalf("unexpected %s: %s", ev.Type, ev.Data)
		}
	}
}

// A running session shows who owns it; B cancels it while A runs a tool:
// A stops at its next step (the tool finishes), the session ends cancelled
// and the model is not called again. The cancel records who asked for it,
// although A, not B, writes it.
func TestCancelRunningSessionFromAnotherNode(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "c.db")
	slow := &slowTool{d: 700 * time.Millisecond, started: make(chan struct{}, 1)}
	a := node(t, path, 3*time.Second, slow.tool())
	b := node(t, path, 3*time.Second, slow.tool())
	s := check.NoErr(t)(a.Start(ctx, "main", "deploy", nil))
	go func() { // a's answer does not matter: the session is read from b below
		_, _ = a.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove}}, nil)
	}()
	<-slow.started
	running, err := b.Session(ctx, s.ID)
	if err != nil || running.Status != cairn.StatusRunning || running.LeaseOwner != a.Node() || running.LeaseExpiresAt == nil {
		t.Fatalf("running session as B sees it: %v %+v", err, running)
	}
	if _, err := b.Cancel(ctx, s.ID, "top", nil); !errors.Is(err, cairn.ErrConflict) {
		t.Fatalf("cancel top of a running session: %v", err)
	}
	bob := cairn.Actor{Name: "bob", Role: "admin"}
	got, err := b.Cancel(ctx, s.ID, "all", &cairn.TurnOptions{Actor: bob})
	if err != nil || got.Status != cairn.StatusCancelled {
		t.Fatalf("cancel: %v %+v", err, got)
	}
	evs := check.Events(t)(b.Events(ctx, s.ID, 0))
	var typesSeen []string
	for _, ev := range evs {
		typesSeen = append(typesSeen, string(ev.Type))
	}
	if got := strings.Join(typesSeen[len(typesSeen)-2:], " "); got != "tool_result turn_cancelled" || slow.runs.Load() != 1 {
		t.Fatalf("log ends %q, runs %d", got, slow.runs.Load())
	}
	var cancelled struct {
		Reason string      `json:"reason"`
		Actor  cairn.Actor `json:"actor"`
	}
	if err := json.Unmarshal(evs[len(evs)-1].Data, &cancelled); err != nil || !reflect.DeepEqual(cancelled.Actor, bob) || cancelled.Reason != "cancelled by bob (admin)" {
		t.Fatalf("turn_cancelled = %s (%v)", evs[len(evs)-1].Data, err)
	}
}

// A turn whose context ends (the client went away, the runner closes)
// records turn_interrupted and releases the session; another node takes it
// over at once and finishes it. A call that was running is in doubt, never
// re-run silently.
func TestInterruptedTurnIsRecordedAndTakenOver(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "c.db")
	slow := &slowTool{d: 10 * time.Second, started: make(chan struct{}, 1)}
	a := node(t, path, 3*time.Second, slow.tool())
	s := check.NoErr(t)(a.Start(ctx, "main", "deploy", nil))
	cctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		_, err := a.Resume(cctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove}}, nil)
		errc <- err
	}()
	<-slow.started
	cancelled := time.Now()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted resume: %v", err)
	}
	h := check.NoErr(t)(a.Session(ctx, s.ID))
	switch {
	case h.Status == cairn.StatusRunning && h.LeaseExpiresAt != nil && !h.LeaseExpiresAt.After(time.Now()):
		// Released: running, with a lease anyone may take.
	case h.Status == cairn.StatusPaused && time.Since(cancelled) < 2*time.Second:
		// Already taken over by A's own sweep (every second). The lease
		// (3 s, renewed every second until the cancel) could not have
		// expired before 2 s after it: so it was released.
	default:
		t.Fatalf("after the interruption: %+v (want running with a released lease)", h)
	}
	b := node(t, path, 3*time.Second, slow.tool())
	var got *cairn.Session
	testwait.For(t, 5*time.Second, "B to take the session over", func() bool {
		got = check.NoErr(t)(b.Session(ctx, s.ID))
		return got.Status == cairn.StatusPaused
	})
	if got.Status != cairn.StatusPaused || !got.Interrupts[0].InDoubt || slow.runs.Load() != 1 {
		t.Fatalf("taken over: %+v, runs %d", got, slow.runs.Load())
	}
	evs := check.Events(t)(b.Events(ctx, s.ID, 0))
	found := false
	for _, ev := range evs {
		found = found || ev.Type == "turn_interrupted"
	}
	if !found {
		t.Fatal("no turn_interrupted event")
	}
}

// A follower on node B receives every event of a turn that node A runs,
// in order, none twice, without polling anything itself.
func TestFollowSeesAnotherNodesTurn(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "c.db")
	slow := &slowTool{d: 300 * time.Millisecond}
	a := node(t, path, 3*time.Second, slow.tool())
	b := node(t, path, 3*time.Second, slow.tool())
	s := check.NoErr(t)(a.Start(ctx, "main", "deploy", nil))
	fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	next := puller(t, b.Follow(fctx, s.ID, 2)) // from seq 3: a resumed follower
	done, err := a.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var seqs []int64
	for len(seqs) == 0 || seqs[len(seqs)-1] < done.Seq {
		seqs = append(seqs, next().Seq)
	}
	for i, seq := range seqs {
		if seq != int64(i+3) {
			t.Fatalf("seqs %v: want 3..%d in order, none twice", seqs, done.Seq)
		}
	}
}

// Many concurrent decisions on one pause from several nodes: one wins, the
// others get a conflict, the tool runs once.
func TestConcurrentDecisionsAcrossNodes(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "c.db")
	slow := &slowTool{d: 10 * time.Millisecond}
	nodes := []*cairn.Runner{node(t, path, 3*time.Second, slow.tool()), node(t, path, 3*time.Second, slow.tool()), node(t, path, 3*time.Second, slow.tool())}
	for round := range 5 {
		s, err := nodes[0].Start(ctx, "main", "deploy", nil)
		if err != nil {
			t.Fatal(err)
		}
		var wins, conflicts atomic.Int32
		var wg sync.WaitGroup
		for i := range 12 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := nodes[i%3].Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove}}, nil)
				switch {
				case err == nil:
					wins.Add(1)
				case errors.Is(err, cairn.ErrConflict):
					conflicts.Add(1)
				default:
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if wins.Load() != 1 || conflicts.Load() != 11 || slow.runs.Load() != int32(round+1) {
			t.Fatalf("round %d: %d wins, %d conflicts, %d runs", round, wins.Load(), conflicts.Load(), slow.runs.Load())
		}
	}
}

// A runner applies a request to its cached state without reading the
// store's head first; the commit, written only at the cached seq, is the
// check. When another node moved the session on, the request is applied
// again to the session as stored: one valid now succeeds although the
// cache refused it, and one the cache took but that is spent now (its
// interrupt was decided elsewhere) is refused, its tool not run again.
func TestCachedStateBehindAnotherNode(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "c.db")
	tool := &slowTool{}
	a, b := node(t, path, time.Minute, tool.tool()), node(t, path, time.Minute, tool.tool())
	approve := func(s *cairn.Session) []cairn.Decision {
		return []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove}}
	}

	paused, err := a.Start(ctx, "main", "deploy", nil) // a caches the pause
	if err != nil {
		t.Fatal(err)
	}
	done, err := b.Resume(ctx, paused.ID, paused.Seq, approve(paused), nil)
	if err != nil || done.Status != cairn.StatusCompleted {
		t.Fatalf("b approves: %v %+v", err, done)
	}
	// a's cache is at the pause; the message names the stored seq.
	again, err := a.Send(ctx, paused.ID, "deploy again", done.Seq, nil)
	if err != nil || again.Status != cairn.StatusPaused || again.Seq <= done.Seq {
		t.Fatalf("a sends at the stored seq with its cache behind: %v %+v", err, again)
	}
	done, err = b.Resume(ctx, again.ID, again.Seq, approve(again), nil)
	if err != nil || done.Status != cairn.StatusCompleted {
		t.Fatalf("b approves the second call: %v %+v", err, done)
	}
	// a's cache holds the second pause, whose approval is spent now.
	if _, err := a.Resume(ctx, again.ID, again.Seq, approve(again), nil); !errors.Is(err, cairn.ErrAlreadyDecided) {
		t.Fatalf("a approves what b approved, with its cache behind: %v; want ErrAlreadyDecided", err)
	}
	if n := tool.runs.Load(); n != 2 {
		t.Fatalf("the tool ran %d times; want 2 (once per approved call)", n)
	}
	got, err := a.Session(ctx, again.ID)
	if err != nil || got.Seq != done.Seq || got.Status != cairn.StatusCompleted {
		t.Fatalf("a reads %+v (%v); want b's completed session at seq %d", got, err, done.Seq)
	}

	// a's cache is current (the refusal read the session); b moves it on
	// to another completed turn. A message at "whatever is current" is
	// taken by a's cache, refused at its commit, and taken again as stored.
	third, err := b.Send(ctx, again.ID, "deploy a third time", 0, nil)
	if err == nil {
		done, err = b.Resume(ctx, third.ID, third.Seq, approve(third), nil)
	}
	if err != nil || done.Status != cairn.StatusCompleted {
		t.Fatalf("b's third turn: %v %+v", err, done)
	}
	fourth, err := a.Send(ctx, again.ID, "and a fourth", 0, nil)
	if err != nil || fourth.Status != cairn.StatusPaused || fourth.Seq <= done.Seq {
		t.Fatalf("a sends at seq 0 with its cache behind: %v %+v", err, fourth)
	}
	if n := tool.runs.Load(); n != 3 {
		t.Fatalf("the tool ran %d times; want 3", n)
	}
}
