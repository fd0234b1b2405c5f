package local_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testkit/check"
	"github.com/cairnhq/cairn/internal/testkit/testwait"
	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/model/scripted"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/sqlite"
)

// modelFunc adapts a function to model.Model.
type modelFunc func(ctx context.Context, req *model.Request) (*model.Response, error)

func (f modelFunc) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	return f(ctx, req)
}

// argsTool records the argument JSON of each run.
func argsTool(rec *counter) *cairn.Tool {
	return &cairn.Tool{Name: "reset", Description: "Reset things.", Parameters: json.RawMessage(`{"type":"object"}`),
		Approval: cairn.Always(),
		Handler: func(ctx context.Context, args json.RawMessage) (string, error) {
			rec.add(string(args))
			return "reset with " + string(args), nil
		}}
}

func emptyArgsScript() *scripted.Model {
	return scripted.New(
		scripted.Reply{ToolCalls: []scripted.Call{{ID: "c1", Name: "reset", Arguments: ""}}},
		scripted.Reply{Text: "{{.LastResult}}"},
	)
}

// A call with "" arguments pauses; approved after a restart (a new runner on
// the same SQLite file), on another node (a second runner sharing the
// store) and in stateless mode, it runs once with {}.
func TestEmptyArgumentsApprovedAnywhereRunWithEmptyObject(t *testing.T) {
	ctx := context.Background()
	open := func(t *testing.T, path string) store.Store {
		st, err := sqlite.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	runner := func(t *testing.T, st store.Store, rec *counter) *cairn.Runner {
		r := runnerFor(t, []*cairn.Agent{{Name: "main", Model: emptyArgsScript(), Tools: []*cairn.Tool{argsTool(rec)}}}, &cairn.RunnerOptions{Store: st, CachedSessions: -1})
		return r
	}
	check := func(t *testing.T, s *cairn.Session, err error, rec *counter) {
		t.Helper()
		if err != nil || s.Status != cairn.StatusCompleted || strings.Join(rec.runs(), "|") != "{}" {
			t.Fatalf("err %v, session %+v, runs %q", err, s, rec.runs())
		}
	}
	t.Run("after a restart", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "c.db")
		var rec counter
		s, err := runner(t, open(t, path), &rec).Start(ctx, "main", "reset", nil)
		if err != nil || string(s.Interrupts[0].Arguments) != "{}" {
			t.Fatalf("%v %+v", err, s)
		}
		r2 := runner(t, open(t, path), &rec)
		s, err = r2.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove}}, nil)
		check(t, s, err, &rec)
	})
	t.Run("on another node", func(t *testing.T) {
		shared := store.NewMemory()
		var rec counter
		s, _ := runner(t, shared, &rec).Start(ctx, "main", "reset", nil)
		s, err := runner(t, shared, &rec).Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove}}, nil)
		check(t, s, err, &rec)
	})
	t.Run("stateless", func(t *testing.T) {
		var rec counter
		key := []byte(strings.Repeat("k", 32))
		mk := func() *cairn.Runner {
			r := runnerFor(t, []*cairn.Agent{{Name: "main", Model: emptyArgsScript(), Tools: []*cairn.Tool{argsTool(&rec)}}}, &cairn.RunnerOptions{ContinuationKeys: [][]byte{key}})
			return r
		}
		res, err := mk().Invoke(ctx, "main", "reset", nil)
		if err != nil || res.Continuation == "" {
			t.Fatalf("%v %+v", err, res)
		}
		res, err = mk().Continue(ctx, "main", res.Continuation, []cairn.Decision{{InterruptID: res.Interrupts[0].ID, Action: cairn.ActionApprove}}, nil)
		if err != nil || res.Status != cairn.StatusCompleted || strings.Join(rec.runs(), "|") != "{}" {
			t.Fatalf("%v %+v %q", err, res, rec.runs())
		}
	})
}

// A model reply with two calls sharing an id and one with an empty id
// (OpenAI-compatible servers send both): every call is handled, the turn
// ends, and each approved call runs once.
func TestRepeatedCallIDsFromTheModel(t *testing.T) {
	ctx := context.Background()
	var rec counter
	m := scripted.New(
		scripted.Reply{ToolCalls: []scripted.Call{
			{ID: "call_0", Name: "reset", Arguments: `{"n":1}`},
			{ID: "call_0", Name: "reset", Arguments: `{"n":2}`},
			{ID: "", Name: "reset", Arguments: `{"n":3}`}}},
		scripted.Reply{Text: "done"},
	)
	r := newRunner(t, m, argsTool(&rec))
	s, err := r.Start(ctx, "main", "go", nil)
	if err != nil || s.Status != cairn.StatusPaused || len(s.Interrupts) != 3 {
		t.Fatalf("%v %+v", err, s)
	}
	var ds []cairn.Decision
	for _, in := range s.Interrupts {
		ds = append(ds, cairn.Decision{InterruptID: in.ID, Action: cairn.ActionApprove})
	}
	s, err = r.Resume(ctx, s.ID, s.Seq, ds, nil)
	if err != nil || s.Status != cairn.StatusCompleted {
		t.Fatalf("%v %+v", err, s)
	}
	if got := strings.Join(rec.runs(), " "); len(rec.runs()) != 3 || !strings.Contains(got, `{"n":1}`) || !strings.Contains(got, `{"n":2}`) || !strings.Contains(got, `{"n":3}`) {
		t.Fatalf("runs %q", got)
	}
}

// A model that repeats call ids in every reply, run turn after turn: each
// step records a bounded number of events and the heap stays flat (the
// original fault looped inside one step and grew to 3.2 GB in 20 s).
func TestRepeatedCallIDsMemoryStaysFlat(t *testing.T) {
	ctx := context.Background()
	var rec counter
	m := modelFunc(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		if last := req.Messages[len(req.Messages)-1]; last.Role == model.RoleTool {
			return &model.Response{Message: model.Message{Role: model.RoleAssistant, Content: "done"}}, nil
		}
		return &model.Response{Message: model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{
			{ID: "dup", Name: "reset", Arguments: `{"n":1}`}, {ID: "dup", Name: "reset", Arguments: `{"n":2}`}, {ID: "", Name: "reset", Arguments: ""}}}}, nil
	})
	r := runnerFor(t, []*cairn.Agent{{Name: "main", Model: m, Tools: []*cairn.Tool{argsTool(&rec)}}}, &cairn.RunnerOptions{AutoApprove: true})
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	turn := func() {
		res, err := r.Invoke(ctx, "main", "go", nil) // stateless: nothing is kept
		if err != nil || res.Status != cairn.StatusCompleted {
			t.Fatalf("%v %+v", err, res)
		}
	}
	for range 50 {
		turn()
	}
	before := heap()
	for range 500 {
		turn()
	}
	after := heap()
	if len(rec.runs()) != 3*550 {
		t.Fatalf("%d tool runs, want 3 per turn", len(rec.runs()))
	}
	if after > before+8<<20 {
		t.Fatalf("heap grew from %d to %d bytes over 500 turns", before, after)
	}
}

// Panics in user callbacks do not take the process down: a predicate that
// panics asks a person, a template that fails shows the raw arguments
// (text/template turns panics of called functions into errors; a Confirm
// that panics is covered in the engine's TestPanickingCallbacksFailClosed),
// a model that panics fails the turn with a clear error, also when detached.
func TestPanickingCallbacks(t *testing.T) {
	ctx := context.Background()
	var rec counter
	tool := cairn.NewTool(&cairn.Tool{Name: "pay", Description: "Pay.", Approval: cairn.ApprovalIf(func(a struct {
		Amount int `json:"amount"`
	}) bool {
		panic("policy bug")
	}), Confirmation: "Pay {{call .amount}}?"}, func(ctx context.Context, a struct {
		Amount int `json:"amount"`
	}) (string, error) {
		rec.add("pay")
		return "paid", nil
	}) // calling a number fails the template
	m := scripted.New(scripted.Reply{ToolCalls: []scripted.Call{{Name: "pay", Arguments: `{"amount":5}`}}}, scripted.Reply{Text: "ok"})
	r := newRunner(t, m, tool)
	s, err := r.Start(ctx, "main", "pay", nil)
	if err != nil || s.Status != cairn.StatusPaused {
		t.Fatalf("%v %+v", err, s)
	}
	if msg := s.Interrupts[0].Message; !strings.HasPrefix(msg, `Run tool pay with arguments {"amount":5}?`) || !strings.Contains(msg, "panicked: policy bug") {
		t.Fatalf("message %q", msg)
	}

	boom := modelFunc(func(context.Context, *model.Request) (*model.Response, error) { panic("model bug") })
	r2 := newRunner(t, boom, tool)
	s, err = r2.Start(ctx, "main", "pay", nil)
	if err != nil || s.Status != cairn.StatusFailed || s.Error.Code != "model_error" || !strings.Contains(s.Error.Message, "the model panicked: model bug") {
		t.Fatalf("%v %+v", err, s)
	}
	s, err = r2.Start(ctx, "main", "pay", &cairn.StartOptions{Detach: true})
	if err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 5*time.Second, "the detached turn to end", func() bool {
		s = check.NoErr(t)(r2.Session(ctx, s.ID))
		return s.Status != cairn.StatusRunning
	})
	if s.Status != cairn.StatusFailed {
		t.Fatalf("detached: %+v", s)
	}
}
