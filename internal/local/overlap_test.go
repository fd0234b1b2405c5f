package local_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/model/scripted"
	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/sqlite"
)

// heldResults is a SQLite store whose appends of a tool's result wait
// until the test releases them, then fail with refuse if set: a slow (or
// refused) durable write. It is durable, as SQLite is (store.Durable).
type heldResults struct {
	*sqlite.Store
	held    chan struct{} // closed when such an append waits
	release chan struct{}
	refuse  error
}

func (h *heldResults) Append(ctx context.Context, head store.Head, expectedSeq int64, events []session.Event) error {
	if slices.ContainsFunc(events, func(e session.Event) bool { return e.Type == session.EventToolResult }) {
		close(h.held)
		<-h.release
		if h.refuse != nil {
			return h.refuse
		}
	}
	return h.Store.Append(ctx, head, expectedSeq, events)
}

// secondCall closes called when the model's second call begins.
type secondCall struct {
	model.Model
	calls  atomic.Int32
	called chan struct{}
}

func (s *secondCall) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	if s.calls.Add(1) == 2 {
		close(s.called)
	}
	return s.Model.Generate(ctx, req)
}

// overlapRun starts a session on a store holding tool results, approves
// its call, waits until the model is called while the tool's result is
// written, and returns the session's id, the event types observed so far
// (in order) and the outcome of the approval once the write is released.
func overlapRun(t *testing.T, refuse error) (id string, types func() []string, finish func() (*cairn.Session, error), r *cairn.Runner) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "o.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	h := &heldResults{Store: st, held: make(chan struct{}), release: make(chan struct{}), refuse: refuse}
	m := &secondCall{Model: &scripted.Model{Stream: true, Replies: []scripted.Reply{
		{ToolCalls: []scripted.Call{{Name: "deploy", Arguments: `{}`}}}, {Text: "deployed and checked"}}}, called: make(chan struct{})}
	tool := &slowTool{}
	r = runnerFor(t, []*cairn.Agent{{Name: "main", Model: m, Tools: []*cairn.Tool{tool.tool()}}}, &cairn.RunnerOptions{Store: h})
	paused, err := r.Start(context.Background(), "main", "deploy", nil)
	if err != nil || paused.Status != cairn.StatusPaused {
		t.Fatalf("start: %v %+v", err, paused)
	}
	var mu sync.Mutex
	var seen []string
	type outcome struct {
		s   *cairn.Session
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		s, err := r.Resume(context.Background(), paused.ID, paused.Seq, []cairn.Decision{{InterruptID: paused.Interrupts[0].ID, Action: cairn.ActionApprove}},
			&cairn.TurnOptions{Observe: func(ev cairn.Event) {
				mu.Lock()
				seen = append(seen, string(ev.Type))
				mu.Unlock()
			}})
		done <- outcome{s, err}
	}()
	wait := func(c chan struct{}, what string) {
		select {
		case <-c:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s did not happen", what)
		}
	}
	wait(h.held, "the write of the tool's result")
	wait(m.called, "the model call after the tool, while its result is written")
	t.Cleanup(func() {
		if tool.runs.Load() != 1 {
			t.Errorf("the tool ran %d times; want 1", tool.runs.Load())
		}
	})
	types = func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}
	finish = func() (*cairn.Session, error) {
		close(h.release)
		o := <-done
		return o.s, o.err
	}
	return paused.ID, types, finish, r
}

// On a durable store, the model call after a tool runs while the tool's
// result is written; its text deltas wait for that write, so whoever
// follows sees the result first, and the log is in order.
func TestModelCallOverlapsTheWriteBeforeIt(t *testing.T) {
	_, types, finish, r := overlapRun(t, nil)
	if got := types(); slices.Contains(got, string(cairn.EventModelDelta)) || slices.Contains(got, string(cairn.EventToolResult)) {
		t.Fatalf("before the write ends, observed %v: no result and no delta yet", got)
	}
	s, err := finish()
	if err != nil || s.Status != cairn.StatusCompleted {
		t.Fatalf("approve: %v %+v", err, s)
	}
	got := strings.Join(types(), " ")
	result, delta := strings.Index(got, "tool_result"), strings.Index(got, "model_delta")
	if result < 0 || delta < result || !strings.HasSuffix(got, "model_response turn_completed") {
		t.Fatalf("observed %s: want the tool's result, then the model's deltas and answer", got)
	}
	evs, err := r.Events(context.Background(), s.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	var logged []string
	for i, ev := range evs {
		if ev.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d", i, ev.Seq)
		}
		logged = append(logged, string(ev.Type))
	}
	if l := strings.Join(logged, " "); !strings.Contains(l, "tool_started tool_result model_response turn_completed") {
		t.Fatalf("log: %s", l)
	}
	if answer := evs[len(evs)-2]; !json.Valid(answer.Data) || !strings.Contains(string(answer.Data), "deployed and checked") {
		t.Fatalf("model_response %s", answer.Data)
	}
}

// When that write is refused (the session changed: another process took
// it over), the model's answer and its deltas count for nothing: the
// approval fails with the store's refusal, and the log ends at the tool's
// start, its result in doubt as after a crash, never run again here.
func TestRefusedWriteDropsTheOverlappingModelCall(t *testing.T) {
	id, types, finish, r := overlapRun(t, store.ErrConflict)
	s, err := finish()
	if !errors.Is(err, cairn.ErrConflict) {
		t.Fatalf("approve: %v %+v; want ErrConflict", err, s)
	}
	if got := types(); slices.Contains(got, string(cairn.EventModelDelta)) || slices.Contains(got, string(cairn.EventToolResult)) {
		t.Fatalf("observed %v: the refused result and the model's deltas were shown", got)
	}
	evs, err := r.Events(context.Background(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	if last := evs[len(evs)-1].Type; last != cairn.EventToolStarted {
		t.Fatalf("the log ends with %s; want tool_started (nothing after the refused write)", last)
	}
}
