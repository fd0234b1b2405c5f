package local_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testkit/check"
	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/model/scripted"
)

type deleteArgs struct {
	Filename string `json:"filename" jsonschema:"the file to delete"`
}

// counter records every run of a tool.
type counter struct {
	mu   sync.Mutex
	args []string
}

func (c *counter) add(s string) { c.mu.Lock(); c.args = append(c.args, s); c.mu.Unlock() }
func (c *counter) runs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.args...)
}

func deleteTool(c *counter) *cairn.Tool {
	return cairn.NewTool(&cairn.Tool{Name: "delete_file", Description: "Delete a file.", Approval: cairn.Always(), Confirmation: "Delete file '{{.filename}}'? This cannot be undone."}, func(ctx context.Context, a deleteArgs) (string, error) {
		c.add(a.Filename)
		return "Deleted " + a.Filename, nil
	})
}

// recordingModel wraps a model and keeps a copy of every request it gets.
type recordingModel struct {
	inner model.Model
	mu    sync.Mutex
	reqs  []*model.Request
}

func (m *recordingModel) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	m.mu.Lock()
	cp := *req
	cp.Messages = append([]model.Message(nil), req.Messages...)
	m.reqs = append(m.reqs, &cp)
	m.mu.Unlock()
	return m.inner.Generate(ctx, req)
}

func (m *recordingModel) calls() int { m.mu.Lock(); defer m.mu.Unlock(); return len(m.reqs) }

func (m *recordingModel) requests() []*model.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]*model.Request(nil), m.reqs...)
}
func (m *recordingModel) last() *model.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.reqs[len(m.reqs)-1]
}

func newRunner(t *testing.T, m model.Model, tools ...*cairn.Tool) *cairn.Runner {
	t.Helper()
	r := runnerFor(t, []*cairn.Agent{{Name: "main", Instructions: "Help manage files.", Model: m, Tools: tools}}, nil)
	return r
}

func deleteScript() *scripted.Model {
	return scripted.New(
		scripted.Reply{ToolCalls: []scripted.Call{{Name: "delete_file", Arguments: `{"filename": "test.txt"}`}}},
		scripted.Reply{Text: "Result: {{.LastResult}}"},
	)
}

func TestApprovedCallRunsOnceAndTheModelSeesItsOutput(t *testing.T) {
	ctx := context.Background()
	var runs counter
	m := &recordingModel{inner: deleteScript()}
	r := newRunner(t, m, deleteTool(&runs))

	s, err := r.Start(ctx, "main", "Delete the file named 'test.txt'", nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != cairn.StatusPaused || len(s.Interrupts) != 1 {
		t.Fatalf("status %s, %d interrupts; want paused with 1", s.Status, len(s.Interrupts))
	}
	in := s.Interrupts[0]
	if in.Message != "Delete file 'test.txt'? This cannot be undone." || in.Kind != "approval" || in.Tool != "delete_file" {
		t.Fatalf("interrupt = %+v", in)
	}
	if len(in.Path) != 1 || in.Path[0].Agent != "main" || in.Path[0].Tool != "delete_file" || in.Path[0].CallID == "" {
		t.Fatalf("path = %+v", in.Path)
	}
	if len(runs.runs()) != 0 {
		t.Fatal("tool ran before approval")
	}
	s, err = r.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: in.ID, Action: cairn.ActionApprove}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != cairn.StatusCompleted || s.Output != "Result: Deleted test.txt" {
		t.Fatalf("after approve: %s %q", s.Status, s.Output)
	}
	if got := runs.runs(); len(got) != 1 || got[0] != "test.txt" {
		t.Fatalf("runs = %v, want exactly one with test.txt", got)
	}
	// The same decision again: the session is no longer paused.
	_, err = r.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: in.ID, Action: cairn.ActionApprove}}, nil)
	if !errors.Is(err, cairn.ErrConflict) {
		t.Fatalf("second resume: %v, want ErrConflict", err)
	}
	if len(runs.runs()) != 1 {
		t.Fatal("tool ran twice")
	}
}

func TestRejectedCallNeverRunsAndTheModelSeesTheReason(t *testing.T) {
	ctx := context.Background()
	var runs counter
	m := &recordingModel{inner: deleteScript()}
	r := newRunner(t, m, deleteTool(&runs))
	s := check.NoErr(t)(r.Start(ctx, "main", "Delete test.txt", nil))
	s, err := r.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionReject, Reason: "I don't want to delete that file"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs.runs()) != 0 {
		t.Fatal("rejected tool ran")
	}
	msgs := m.last().Messages
	tm := msgs[len(msgs)-1]
	if tm.Role != model.RoleTool || !tm.IsError || !strings.Contains(tm.Content, "I don't want to delete that file") {
		t.Fatalf("model saw %+v", tm)
	}
	if s.Status != cairn.StatusCompleted || !strings.Contains(s.Output, "I don't want to delete that file") {
		t.Fatalf("session %s %q", s.Status, s.Output)
	}
}

func TestApprovalWithEditedArgumentsRunsThem(t *testing.T) {
	ctx := context.Background()
	var runs counter
	r := newRunner(t, deleteScript(), deleteTool(&runs))
	s := check.NoErr(t)(r.Start(ctx, "main", "Delete test.txt", nil))
	id := s.Interrupts[0].ID

	// Invalid replacements are refused and change nothing.
	for _, bad := range []string{`{"filename": 42}`, `{}`, `[1]`, `"x"`} {
		_, err := r.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: id, Action: cairn.ActionApprove, Arguments: json.RawMessage(bad)}}, nil)
		if !errors.Is(err, cairn.ErrInvalidArguments) {
			t.Fatalf("arguments %s: err = %v, want ErrInvalidArguments", bad, err)
		}
	}
	after := check.NoErr(t)(r.Session(ctx, s.ID))
	if after.Seq != s.Seq || after.Status != cairn.StatusPaused || len(runs.runs()) != 0 {
		t.Fatalf("refused requests changed the session: %+v, runs %v", after, runs.runs())
	}

	s, err := r.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: id, Action: cairn.ActionApprove, Arguments: json.RawMessage(`{"filename": "other.txt"}`)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := runs.runs(); len(got) != 1 || got[0] != "other.txt" {
		t.Fatalf("runs = %v, want [other.txt]", got)
	}
	// The model is told which arguments ran: its own call and the result
	// of another one would mislead its next step.
	if want := `Result: [A person approved this call with other arguments than you asked for. You asked for {"filename":"test.txt"}; it ran with {"filename":"other.txt"}.]` + "\nDeleted other.txt"; s.Output != want {
		t.Fatalf("output %q\nwant   %q", s.Output, want)
	}
	evs := check.Events(t)(r.Events(ctx, s.ID, 0))
	var found bool
	for _, ev := range evs {
		if ev.Type == "decision" {
			var d struct {
				Arguments    json.RawMessage `json:"arguments"`
				NewArguments json.RawMessage `json:"new_arguments"`
			}
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				t.Fatal(err)
			}
			found = string(d.Arguments) == `{"filename":"test.txt"}` && string(d.NewArguments) == `{"filename":"other.txt"}`
		}
	}
	if !found {
		t.Fatal("decision event does not record the arguments before and after")
	}
}

func TestParallelCallsPartialDecisions(t *testing.T) {
	ctx := context.Background()
	var auto, gated counter
	autoTool := cairn.NewTool(&cairn.Tool{Name: "lookup", Description: "Look up."}, func(ctx context.Context, a struct {
		Q string `json:"q"`
	}) (string, error) {
		auto.add(a.Q)
		return "found " + a.Q, nil
	})
	gatedTool := cairn.NewTool(&cairn.Tool{Name: "deploy", Description: "Deploy.", Approval: cairn.ApprovalIf(func(a struct {
		Env string `json:"env"`
	}) bool {
		return a.Env != "dev"
	})}, func(ctx context.Context, a struct {
		Env string `json:"env"`
	}) (string, error) {
		gated.add(a.Env)
		return "deployed " + a.Env, nil
	})
	m := &recordingModel{inner: scripted.New(
		scripted.Reply{ToolCalls: []scripted.Call{
			{ID: "c1", Name: "deploy", Arguments: `{"env":"staging"}`},
			{ID: "c2", Name: "lookup", Arguments: `{"q":"x"}`},
			{ID: "c3", Name: "deploy", Arguments: `{"env":"production"}`},
		}},
		scripted.Reply{Text: "done"},
	)}
	r := newRunner(t, m, autoTool, gatedTool)
	s, err := r.Start(ctx, "main", "go", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(auto.runs()) != 1 || len(gated.runs()) != 0 {
		t.Fatalf("before the pause: auto %v gated %v", auto.runs(), gated.runs())
	}
	if len(s.Interrupts) != 2 || s.Interrupts[0].ID == s.Interrupts[1].ID || s.Interrupts[0].Path[0].CallID != "c1" || s.Interrupts[1].Path[0].CallID != "c3" {
		t.Fatalf("interrupts = %+v", s.Interrupts)
	}
	if m.calls() != 1 {
		t.Fatalf("model calls = %d", m.calls())
	}
	// Decide the first only: it runs; the other stays pending; no model call.
	s, err = r.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != cairn.StatusPaused || len(s.Interrupts) != 1 || s.Interrupts[0].Path[0].CallID != "c3" {
		t.Fatalf("after partial decision: %s %+v", s.Status, s.Interrupts)
	}
	if got := gated.runs(); len(got) != 1 || got[0] != "staging" || m.calls() != 1 {
		t.Fatalf("gated runs %v, model calls %d", got, m.calls())
	}
	s, err = r.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionReject, Reason: "not today"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != cairn.StatusCompleted || m.calls() != 2 || len(gated.runs()) != 1 || len(auto.runs()) != 1 {
		t.Fatalf("final: %s, model calls %d, gated %v auto %v", s.Status, m.calls(), gated.runs(), auto.runs())
	}
	// The model saw all three results, in its call order.
	msgs := m.last().Messages
	tail := msgs[len(msgs)-3:]
	want := []struct{ id, content string }{{"c1", "deployed staging"}, {"c2", "found x"}, {"c3", "not today"}}
	for i, w := range want {
		if tail[i].ToolCallID != w.id || !strings.Contains(tail[i].Content, w.content) {
			t.Fatalf("result %d = %+v, want %s ~ %q", i, tail[i], w.id, w.content)
		}
	}
}

func TestAutoApprovedCallsRunConcurrently(t *testing.T) {
	ctx := context.Background()
	var inFlight, maxInFlight atomic.Int32
	var arrived sync.WaitGroup // all three calls in flight at once: the barrier they wait at
	arrived.Add(3)
	slow := cairn.NewTool(&cairn.Tool{Name: "slow", Description: "Slow."}, func(ctx context.Context, a struct {
		N int `json:"n"`
	}) (int, error) {
		n := inFlight.Add(1)
		for {
			m := maxInFlight.Load()
			if n <= m || maxInFlight.CompareAndSwap(m, n) {
				break
			}
		}
		// Wait until all three are in flight, proving they overlap (calls
		// that ran one by one would never all arrive: bounded, and then
		// the max below says so).
		arrived.Done()
		all := make(chan struct{})
		go func() { arrived.Wait(); close(all) }()
		select {
		case <-all:
		case <-time.After(5 * time.Second):
		}
		inFlight.Add(-1)
		return a.N * 10, nil
	})
	m := &recordingModel{inner: scripted.New(
		scripted.Reply{ToolCalls: []scripted.Call{{ID: "a", Name: "slow", Arguments: `{"n":1}`}, {ID: "b", Name: "slow", Arguments: `{"n":2}`}, {ID: "c", Name: "slow", Arguments: `{"n":3}`}}},
		scripted.Reply{Text: "ok"},
	)}
	r := newRunner(t, m, slow)
	s, err := r.Start(ctx, "main", "go", nil)
	if err != nil || s.Status != cairn.StatusCompleted {
		t.Fatalf("%v %+v", err, s)
	}
	if maxInFlight.Load() != 3 {
		t.Fatalf("max in flight = %d, want 3", maxInFlight.Load())
	}
	msgs := m.last().Messages
	for i, want := range []string{"10", "20", "30"} {
		if got := msgs[len(msgs)-3+i].Content; got != want {
			t.Fatalf("result %d = %q, want %q (call order)", i, got, want)
		}
	}
}

func TestBadCallsBecomeErrorResults(t *testing.T) {
	ctx := context.Background()
	type args struct {
		N int `json:"n"`
	}
	failing := cairn.NewTool(&cairn.Tool{Name: "failing", Description: "Fails."}, func(ctx context.Context, a args) (string, error) { return "", errors.New("disk full") })
	panicking := cairn.NewTool(&cairn.Tool{Name: "panicking", Description: "Panics."}, func(ctx context.Context, a args) (string, error) { panic("boom") })
	hanging := cairn.NewTool(&cairn.Tool{Name: "hanging", Description: "Hangs.", Timeout: 50 * time.Millisecond}, func(ctx context.Context, a args) (string, error) {
		select {} // ignores its context on purpose
	})
	m := &recordingModel{inner: scripted.New(
		scripted.Reply{ToolCalls: []scripted.Call{
			{ID: "1", Name: "failng", Arguments: `{}`},
			{ID: "2", Name: "failing", Arguments: `{"n":`},
			{ID: "3", Name: "failing", Arguments: `{"n":"x"}`},
			{ID: "4", Name: "failing", Arguments: `{"n":1}`},
			{ID: "5", Name: "panicking", Arguments: `{"n":1}`},
			{ID: "6", Name: "hanging", Arguments: `{"n":1}`},
		}},
		scripted.Reply{Text: "recovered"},
	)}
	r := newRunner(t, m, failing, panicking, hanging)
	s, err := r.Start(ctx, "main", "go", nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != cairn.StatusCompleted || s.Output != "recovered" {
		t.Fatalf("session %s %q", s.Status, s.Output)
	}
	msgs := m.last().Messages
	results := msgs[len(msgs)-6:]
	want := []string{`unknown tool "failng"; available tools: failing, panicking, hanging; did you mean "failing"?`, "not valid JSON", "do not match its schema", "disk full", "panicked: boom", "timed out after 50ms"}
	for i, w := range want {
		if !results[i].IsError || !strings.Contains(results[i].Content, w) {
			t.Errorf("result %d = %+v, want an error containing %q", i, results[i], w)
		}
	}
}

func TestMaxIterations(t *testing.T) {
	ctx := context.Background()
	loop := cairn.NewTool(&cairn.Tool{Name: "again", Description: "Again."}, func(ctx context.Context, a struct{}) (string, error) { return "more", nil })
	var replies []scripted.Reply
	for range 10 {
		replies = append(replies, scripted.Reply{ToolCalls: []scripted.Call{{Name: "again", Arguments: `{}`}}})
	}
	m := &recordingModel{inner: scripted.New(replies...)}
	r := runnerFor(t, []*cairn.Agent{{Name: "looper", Model: m, Tools: []*cairn.Tool{loop}, MaxIterations: 3}}, nil)
	s, err := r.Start(ctx, "looper", "go", nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != cairn.StatusFailed || s.Error == nil || s.Error.Code != "max_iterations" || !strings.Contains(s.Error.Message, `agent "looper" stopped after 3 iterations`) {
		t.Fatalf("session %s %+v", s.Status, s.Error)
	}
	if m.calls() != 3 {
		t.Fatalf("model calls = %d, want 3", m.calls())
	}
}

func TestConcurrentDecisionsOneWinner(t *testing.T) {
	ctx := context.Background()
	var runs counter
	r := newRunner(t, deleteScript(), deleteTool(&runs))
	s := check.NoErr(t)(r.Start(ctx, "main", "Delete test.txt", nil))
	var wg sync.WaitGroup
	var ok, conflicts atomic.Int32
	start := make(chan struct{})
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, err := r.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove}}, nil)
			switch {
			case err == nil:
				ok.Add(1)
			case errors.Is(err, cairn.ErrConflict):
				conflicts.Add(1)
			default:
				t.Error(err)
			}
		}()
	}
	close(start)
	wg.Wait()
	if ok.Load() != 1 || conflicts.Load() != 3 || len(runs.runs()) != 1 {
		t.Fatalf("ok %d conflicts %d runs %d; want 1, 3, 1", ok.Load(), conflicts.Load(), len(runs.runs()))
	}
}

func TestRefusedDecisionsChangeNothing(t *testing.T) {
	ctx := context.Background()
	var runs counter
	r := newRunner(t, deleteScript(), deleteTool(&runs))
	s := check.NoErr(t)(r.Start(ctx, "main", "Delete test.txt", nil))
	id := s.Interrupts[0].ID
	cases := []struct {
		name string
		seq  int64
		ds   []cairn.Decision
		want error
	}{
		{"stale seq", s.Seq - 1, []cairn.Decision{{InterruptID: id, Action: "approve"}}, cairn.ErrConflict},
		{"unknown interrupt", s.Seq, []cairn.Decision{{InterruptID: "int_nope", Action: "approve"}}, cairn.ErrUnknownInterrupt},
		{"bad action", s.Seq, []cairn.Decision{{InterruptID: id, Action: "maybe"}}, cairn.ErrInvalidRequest},
		{"no decisions", s.Seq, nil, cairn.ErrInvalidRequest},
		{"twice", s.Seq, []cairn.Decision{{InterruptID: id, Action: "approve"}, {InterruptID: id, Action: "reject"}}, cairn.ErrInvalidRequest},
	}
	for _, c := range cases {
		_, err := r.Resume(ctx, s.ID, c.seq, c.ds, nil)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
		}
	}
	if _, err := r.Resume(ctx, "ses_nope", 1, nil, nil); !errors.Is(err, cairn.ErrNotFound) {
		t.Errorf("unknown session: %v", err)
	}
	if _, err := r.Start(ctx, "nobody", "hi", nil); !errors.Is(err, cairn.ErrUnknownAgent) {
		t.Errorf("unknown agent: %v", err)
	}
	after := check.NoErr(t)(r.Session(ctx, s.ID))
	if after.Seq != s.Seq || after.Status != cairn.StatusPaused || len(runs.runs()) != 0 {
		t.Fatalf("refused requests changed the session: seq %d→%d, %s", s.Seq, after.Seq, after.Status)
	}
}

func TestFollowUpMessageStartsNewTurn(t *testing.T) {
	ctx := context.Background()
	m := &recordingModel{inner: scripted.New(scripted.Reply{Text: "you said {{.Input}}"})}
	r := newRunner(t, m)
	s := check.NoErr(t)(r.Start(ctx, "main", "one", nil))
	s, err := r.Send(ctx, s.ID, "two", s.Seq, nil)
	if err != nil || s.Output != "you said two" {
		t.Fatalf("%v %q", err, s.Output)
	}
	if len(m.last().Messages) != 3 {
		t.Fatalf("history = %+v", m.last().Messages)
	}
	if _, err := r.Send(ctx, s.ID, "three", s.Seq-1, nil); !errors.Is(err, cairn.ErrConflict) {
		t.Fatalf("stale seq: %v", err)
	}
}

func TestTypedToolSchema(t *testing.T) {
	type inner struct {
		Level string `json:"level" enum:"low,high"`
	}
	type args struct {
		Env    string  `json:"env" jsonschema:"where to deploy" enum:"staging,production"`
		DryRun bool    `json:"dry_run,omitempty"`
		Nested []inner `json:"nested,omitempty"`
	}
	tool := cairn.NewTool(&cairn.Tool{Name: "deploy", Description: "Deploy."}, func(ctx context.Context, a args) (string, error) { return a.Env, nil })
	var schema struct {
		Required   []string
		Properties map[string]struct {
			Description string
			Enum        []string
			Items       struct {
				Properties map[string]struct{ Enum []string }
			}
		}
	}
	if err := json.Unmarshal(tool.Parameters, &schema); err != nil {
		t.Fatal(err)
	}
	env := schema.Properties["env"]
	if strings.Join(schema.Required, ",") != "env" || env.Description != "where to deploy" || strings.Join(env.Enum, ",") != "staging,production" ||
		strings.Join(schema.Properties["nested"].Items.Properties["level"].Enum, ",") != "low,high" {
		t.Fatalf("schema = %s", tool.Parameters)
	}
	// The schema is enforced: a value outside the enum never reaches the handler.
	m := &recordingModel{inner: scripted.New(scripted.Reply{ToolCalls: []scripted.Call{{Name: "deploy", Arguments: `{"env":"moon"}`}}}, scripted.Reply{Text: "{{.LastResult}}"})}
	r := newRunner(t, m, tool)
	s := check.NoErr(t)(r.Start(context.Background(), "main", "go", nil))
	if !strings.Contains(s.Output, "do not match its schema") {
		t.Fatalf("output %q", s.Output)
	}
}
