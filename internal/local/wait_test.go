package local_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testkit/check"
	"github.com/cairnhq/cairn/internal/testkit/testwait"
	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/store/sqlite"
)

// pipelineTool starts a "pipeline" that finishes later: it hands the
// callback URL it was given to started and returns Pending.
func pipelineTool(started func(url string), wait *cairn.Wait) *cairn.Tool {
	return cairn.NewTool(&cairn.Tool{Name: "run_pipeline", Description: "Run the CI pipeline.", Wait: wait,
		ResultSchema: json.RawMessage(`{"type":"object","properties":{"status":{"enum":["passed","failed"]}},"required":["status"]}`)},
		func(ctx context.Context, a struct {
			Ref string `json:"ref"`
		}) (string, error) {
			url, err := cairn.CallbackURL(ctx)
			if err != nil {
				return "", err
			}
			started(url)
			return "", cairn.Pending("run-42", "pipeline 42 started on "+a.Ref)
		})
}

// A tool that finishes later pauses its session as waiting on a system;
// its callback URL completes it once (the model reads the result), a
// second use is a conflict naming the first, an altered URL is refused
// and changes nothing.
func TestCallbackCompletesAWaitOnce(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "cairn.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var url string
	m := newBrain(func(req *model.Request) model.Message {
		if l := last(req); l.Role == model.RoleTool {
			return text("CI says: " + l.Content)
		}
		return call("c1", "run_pipeline", `{"ref":"main"}`)
	})
	r := runnerFor(t, []*cairn.Agent{{Name: "ci", Model: m, Tools: []*cairn.Tool{pipelineTool(func(u string) { url = u }, nil)}}},
		&cairn.RunnerOptions{Store: st, PublicURL: "https://cairn.example.org/"})
	s := check.NoErr(t)(r.Start(ctx, "ci", "ship main", nil))
	if s.Status != cairn.StatusPaused || len(s.Interrupts) != 1 {
		t.Fatalf("%+v", s)
	}
	in := s.Interrupts[0]
	if in.Kind != cairn.KindExternal || in.Handle != "run-42" || in.Message != "pipeline 42 started on main" || in.Tool != "run_pipeline" ||
		string(in.Arguments) != `{"ref":"main"}` || in.ExpiresAt != nil || in.Kind.ForPerson() {
		t.Fatalf("the wait: %+v", in)
	}
	token, ok := strings.CutPrefix(url, "https://cairn.example.org/v1/callbacks/")
	if !ok {
		t.Fatalf("callback URL %q", url)
	}
	// Altered: refused, nothing recorded.
	altered := token[:len(token)-2] + "xx"
	if _, err := r.Callback(ctx, altered, cairn.Completion{Output: json.RawMessage(`{"status":"passed"}`)}); !errors.Is(err, cairn.ErrInvalidLink) {
		t.Fatalf("an altered callback: %v", err)
	}
	// Not the result schema: refused at its field, nothing recorded.
	if _, err := r.Callback(ctx, token, cairn.Completion{Output: json.RawMessage(`{"status":"green"}`)}); !errors.Is(err, cairn.ErrInvalidOutput) || !strings.Contains(err.Error(), "/status") {
		t.Fatalf("a result off its schema: %v", err)
	}
	if again := check.NoErr(t)(r.Session(ctx, s.ID)); again.Seq != s.Seq {
		t.Fatalf("refused completions changed the session: seq %d → %d", s.Seq, again.Seq)
	}
	done, err := r.Callback(ctx, token, cairn.Completion{Output: json.RawMessage(`{"status":"passed"}`)})
	if err != nil || done.Status != cairn.StatusCompleted || done.Output != `CI says: {"status":"passed"}` {
		t.Fatalf("the callback: %v %+v", err, done)
	}
	_, err = r.Callback(ctx, token, cairn.Completion{Error: "boom"})
	if !errors.Is(err, cairn.ErrConflict) || !strings.Contains(err.Error(), "complete by callback") {
		t.Fatalf("a second callback: %v", err)
	}
	evs := check.Events(t)(r.Events(ctx, s.ID, 0))
	results := 0
	for _, ev := range evs {
		if ev.Type == "tool_result" {
			results++
		}
	}
	if results != 1 {
		t.Fatalf("%d tool results, want 1", results)
	}
}

// A completion that arrives while the session runs (the call's batch has
// another call still running) is not lost: it waits for the session to
// wait on the call, then completes it.
func TestCompletionWhileTheBatchRunsWaitsForThePause(t *testing.T) {
	ctx := context.Background()
	urls := make(chan string, 1)
	release := make(chan struct{})
	slow := cairn.NewTool(&cairn.Tool{Name: "slow"}, func(ctx context.Context, a struct{}) (string, error) {
		<-release
		return "slow done", nil
	})
	m := newBrain(func(req *model.Request) model.Message {
		if l := last(req); l.Role == model.RoleTool {
			var results []string
			for _, msg := range req.Messages {
				if msg.Role == model.RoleTool {
					results = append(results, msg.Content)
				}
			}
			return text(strings.Join(results, " | "))
		}
		return model.Message{ToolCalls: []model.ToolCall{{ID: "c1", Name: "run_pipeline", Arguments: `{"ref":"v2"}`}, {ID: "c2", Name: "slow", Arguments: `{}`}}}
	})
	r := runnerFor(t, []*cairn.Agent{{Name: "ci", Model: m, Tools: []*cairn.Tool{pipelineTool(func(u string) { urls <- u }, nil), slow}}}, nil)
	var wg sync.WaitGroup
	var started *cairn.Session
	wg.Go(func() { started = check.NoErr(t)(r.Start(ctx, "ci", "ship v2", nil)) })
	url := <-urls
	token := url[strings.LastIndex(url, "/")+1:]
	completed := make(chan *cairn.Session, 1)
	go func() {
		s, err := r.Callback(ctx, token, cairn.Completion{Output: json.RawMessage(`{"status":"passed"}`)})
		if err != nil {
			t.Error(err)
		}
		completed <- s
	}()
	time.Sleep(50 * time.Millisecond) // elapsed time: a window in which the waiting completion must not return
	select {
	case s := <-completed:
		t.Fatalf("the completion returned while its session ran, instead of waiting: %+v", s)
	default:
	}
	close(release)
	wg.Wait()
	done := <-completed
	if started.Status != cairn.StatusPaused || done.Status != cairn.StatusCompleted || done.Output != `{"status":"passed"} | slow done` {
		t.Fatalf("start: %+v; completion: %+v", started, done)
	}
}

// A wait whose deadline passes has its tool's outcome, once: with retry,
// the tool starts again under a new callback URL, and the first URL is
// past its deadline (ErrExpired).
func TestMissedDeadlineRetriesTheTool(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	var urls []string
	m := newBrain(func(req *model.Request) model.Message {
		if l := last(req); l.Role == model.RoleTool {
			return text("CI says: " + l.Content)
		}
		return call("c1", "run_pipeline", `{"ref":"main"}`)
	})
	r := runnerFor(t, []*cairn.Agent{{Name: "ci", Model: m, Tools: []*cairn.Tool{
		pipelineTool(func(u string) { urls = append(urls, u) }, &cairn.Wait{Timeout: 30 * time.Minute, OnTimeout: cairn.OnTimeoutRetry, Retries: 1})}}},
		&cairn.RunnerOptions{Now: clock, ExpirySweep: time.Hour})
	s := check.NoErr(t)(r.Start(ctx, "ci", "ship main", nil))
	if exp := s.Interrupts[0].ExpiresAt; exp == nil || !exp.Equal(now.Add(30*time.Minute)) {
		t.Fatalf("the deadline: %v", exp)
	}
	if n, err := r.ExpireDue(ctx); n != 0 || err != nil {
		t.Fatalf("before the deadline: %d %v", n, err)
	}
	mu.Lock()
	now = now.Add(31 * time.Minute)
	mu.Unlock()
	if n, err := r.ExpireDue(ctx); n != 1 || err != nil {
		t.Fatalf("at the deadline: %d %v", n, err)
	}
	if n, err := r.ExpireDue(ctx); n != 0 || err != nil {
		t.Fatalf("the same deadline twice: %d %v", n, err)
	}
	s = check.NoErr(t)(r.Session(ctx, s.ID))
	if len(urls) != 2 || urls[0] == urls[1] || s.Status != cairn.StatusPaused || s.Interrupts[0].ID == "" {
		t.Fatalf("after the retry: %d urls, %+v", len(urls), s)
	}
	tok := func(u string) string { return u[strings.LastIndex(u, "/")+1:] }
	if _, err := r.Callback(ctx, tok(urls[0]), cairn.Completion{Output: json.RawMessage(`{"status":"passed"}`)}); !errors.Is(err, cairn.ErrExpired) {
		t.Fatalf("the first URL after its deadline: %v", err)
	}
	done := check.NoErr(t)(r.Callback(ctx, tok(urls[1]), cairn.Completion{Error: "the runner ran out of disk"}))
	if done.Status != cairn.StatusCompleted || done.Output != "CI says: the work tool run_pipeline started failed: the runner ran out of disk" {
		t.Fatalf("the retry's failure: %+v", done)
	}
}

// A client tool has no implementation here: its call waits for the caller,
// who completes it with a result checked against its schema.
func TestClientToolWaitsForTheCaller(t *testing.T) {
	ctx := context.Background()
	locate := cairn.ClientTool(&cairn.Tool{Name: "get_location", Description: "The user's location, from the browser.",
		ResultSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)})
	m := newBrain(func(req *model.Request) model.Message {
		if l := last(req); l.Role == model.RoleTool {
			return text("You are in " + l.Content)
		}
		return call("c1", "get_location", `{}`)
	})
	r := mustRunner(t, &cairn.Agent{Name: "weather", Model: m, Tools: []*cairn.Tool{locate}})
	if info := r.Agents()[0].Tools[0]; info.Kind != "client" || string(info.ResultSchema) == "" {
		t.Fatalf("/v1/agents describes it as %+v", info)
	}
	s := check.NoErr(t)(r.Start(ctx, "weather", "where am I?", nil))
	in := s.Interrupts[0]
	if in.Kind != cairn.KindClient || in.Tool != "get_location" || string(in.ResultSchema) == "" {
		t.Fatalf("%+v", in)
	}
	if _, err := r.Complete(ctx, s.ID, in.ID, cairn.Completion{Output: json.RawMessage(`{"town":"Lyon"}`)}, nil); !errors.Is(err, cairn.ErrInvalidOutput) {
		t.Fatalf("off-schema: %v", err)
	}
	done := check.NoErr(t)(r.Complete(ctx, s.ID, in.ID, cairn.Completion{Output: json.RawMessage(`{"city":"Lyon"}`)}, &cairn.TurnOptions{Actor: cairn.Actor{Name: "browser"}}))
	if done.Status != cairn.StatusCompleted || done.Output != `You are in {"city":"Lyon"}` {
		t.Fatalf("%+v", done)
	}
}

// A parallel batch of a client tool, a gated tool and a tool that finishes
// later, on a SQLite store: each is completed once, in three different
// orders, through the runner's doors (Complete, Resume, Callback), and
// each runs or is answered once.
func TestBatchOfWaitsCompletesEachOnceInAnyOrder(t *testing.T) {
	for _, order := range [][]string{{"client", "gated", "external"}, {"external", "client", "gated"}, {"gated", "external", "client"}} {
		t.Run(strings.Join(order, "-"), func(t *testing.T) {
			ctx := context.Background()
			st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "cairn.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			var url string
			var deploys, pipelines int
			deploy := cairn.NewTool(&cairn.Tool{Name: "deploy", Approval: cairn.Always()}, func(ctx context.Context, _ struct{}) (string, error) {
				deploys++
				return "deployed", nil
			})
			pipeline := pipelineTool(func(u string) { pipelines++; url = u }, nil)
			locate := cairn.ClientTool(&cairn.Tool{Name: "locate"})
			m := newBrain(func(req *model.Request) model.Message {
				if l := last(req); l.Role == model.RoleTool {
					var results []string
					for _, msg := range req.Messages {
						if msg.Role == model.RoleTool {
							results = append(results, msg.ToolCallID+"="+msg.Content)
						}
					}
					return text(strings.Join(results, "; "))
				}
				return model.Message{ToolCalls: []model.ToolCall{{ID: "c1", Name: "locate", Arguments: `{}`}, {ID: "c2", Name: "deploy", Arguments: `{}`}, {ID: "c3", Name: "run_pipeline", Arguments: `{"ref":"main"}`}}}
			})
			r := runnerFor(t, []*cairn.Agent{{Name: "ops", Model: m, Tools: []*cairn.Tool{locate, deploy, pipeline}}}, &cairn.RunnerOptions{Store: st})
			s := check.NoErr(t)(r.Start(ctx, "ops", "go", nil))
			ids := map[string]string{}
			for _, in := range s.Interrupts {
				ids[map[cairn.Kind]string{cairn.KindClient: "client", cairn.KindApproval: "gated", cairn.KindExternal: "external"}[in.Kind]] = in.ID
			}
			if len(ids) != 3 || pipelines != 1 || deploys != 0 {
				t.Fatalf("the pause: %+v (pipelines %d)", s.Interrupts, pipelines)
			}
			for _, k := range order {
				switch k {
				case "client":
					s = check.NoErr(t)(r.Complete(ctx, s.ID, ids[k], cairn.Completion{Output: json.RawMessage(`"Lyon"`)}, nil))
				case "gated":
					s = check.NoErr(t)(r.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: ids[k], Action: cairn.ActionApprove}}, nil))
				case "external":
					s = check.NoErr(t)(r.Callback(ctx, url[strings.LastIndex(url, "/")+1:], cairn.Completion{Output: json.RawMessage(`{"status":"passed"}`)}))
				}
				// The same completion again is refused, whichever door.
				if _, err := r.Complete(ctx, s.ID, ids[k], cairn.Completion{Output: json.RawMessage(`"again"`)}, nil); !errors.Is(err, cairn.ErrConflict) {
					t.Fatalf("%s completed twice: %v", k, err)
				}
			}
			if s.Status != cairn.StatusCompleted || s.Output != `c1=Lyon; c2=deployed; c3={"status":"passed"}` || deploys != 1 || pipelines != 1 {
				t.Fatalf("%s %q, deploys %d, pipelines %d", s.Status, s.Output, deploys, pipelines)
			}
		})
	}
}

// A completion that loses to another whose turn is still running is told
// at once who won (409 already_decided), not made to wait for the turn.
func TestLosingCompletionIsToldWhoWonWhileTheTurnRuns(t *testing.T) {
	ctx := context.Background()
	release := make(chan struct{})
	var calls atomic.Int32
	m := model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		if calls.Add(1) == 1 {
			return &model.Response{Message: call("c1", "locate", `{}`)}, nil
		}
		<-release // the winner's turn holds here
		return &model.Response{Message: text("done")}, nil
	})
	r := runnerFor(t, []*cairn.Agent{{Name: "weather", Model: m, Tools: []*cairn.Tool{cairn.ClientTool(&cairn.Tool{Name: "locate"})}}},
		&cairn.RunnerOptions{CompletionWait: 20 * time.Second})
	s := check.NoErr(t)(r.Start(ctx, "weather", "where?", nil))
	id := s.Interrupts[0].ID
	won := make(chan error, 1)
	go func() {
		_, err := r.Complete(ctx, s.ID, id, cairn.Completion{Output: json.RawMessage(`"Lyon"`)}, &cairn.TurnOptions{Actor: cairn.Actor{Name: "browser"}})
		won <- err
	}()
	testwait.For(t, 10*time.Second, "the winning completion's turn to run", func() bool { return calls.Load() == 2 })
	began := time.Now()
	_, err := r.Complete(ctx, s.ID, id, cairn.Completion{Output: json.RawMessage(`"Paris"`)}, nil)
	if !errors.Is(err, cairn.ErrAlreadyDecided) || !errors.Is(err, cairn.ErrConflict) || !strings.Contains(err.Error(), "complete by browser") || time.Since(began) > 5*time.Second {
		t.Fatalf("the losing completion after %s: %v", time.Since(began), err)
	}
	close(release)
	if err := <-won; err != nil {
		t.Fatal(err)
	}
}

// A lone completion through Resume (what REST, the AI SDK, AG-UI and MCP
// doors call) that names the call's wait id while its tool still runs, with
// the seq the caller read then, is taken as a callback is: it waits for
// the session to wait on the call, then completes it once; 409 only after.
func TestResumeWithACompletionWhileTheToolRuns(t *testing.T) {
	ctx := context.Background()
	release := make(chan struct{})
	m := newBrain(func(req *model.Request) model.Message {
		if l := last(req); l.Role == model.RoleTool {
			return text("CI says: " + l.Content)
		}
		return call("c1", "run_pipeline", `{"ref":"main"}`)
	})
	r := runnerFor(t, []*cairn.Agent{{Name: "ci", Model: m, Tools: []*cairn.Tool{pipelineTool(func(string) { <-release }, &cairn.Wait{Timeout: time.Hour})}}},
		&cairn.RunnerOptions{PublicURL: "https://cairn.example.org"})
	s := check.NoErr(t)(r.Start(ctx, "ci", "ship main", &cairn.StartOptions{Detach: true}))
	var wait string
	var seq int64
	testwait.For(t, 10*time.Second, "the tool to start", func() bool {
		for _, ev := range check.Events(t)(r.Events(ctx, s.ID, 0)) {
			var p struct {
				WaitID string `json:"wait_id"`
			}
			if ev.Type == "tool_started" && json.Unmarshal(ev.Data, &p) == nil {
				wait, seq = p.WaitID, ev.Seq
			}
		}
		return wait != ""
	})
	go func() { time.Sleep(300 * time.Millisecond); close(release) }() // elapsed time: the resume below waits on the running turn
	d := cairn.Decision{InterruptID: wait, Action: cairn.ActionComplete, Output: json.RawMessage(`{"status":"passed"}`)}
	done, err := r.Resume(ctx, s.ID, seq, []cairn.Decision{d}, nil)
	if err != nil || done.Status != cairn.StatusCompleted || done.Output != `CI says: {"status":"passed"}` {
		t.Fatalf("the completion while the tool ran: %v %+v", err, done)
	}
	if _, err := r.Resume(ctx, s.ID, done.Seq, []cairn.Decision{d}, nil); !errors.Is(err, cairn.ErrAlreadyDecided) {
		t.Fatalf("a second completion: %v", err)
	}
}
