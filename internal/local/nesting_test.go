package local_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testkit/check"
	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/model/scripted"
	"github.com/cairnhq/cairn/store/sqlite"
)

// newBrain is a recorded model whose reply is a function of the request; a
// reply with the content "__error__" fails the call.
func newBrain(reply func(req *model.Request) model.Message) *recordingModel {
	return &recordingModel{inner: model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		msg := reply(req)
		if msg.Content == "__error__" {
			return nil, errors.New("upstream 503")
		}
		return &model.Response{Message: msg}, nil
	})}
}

func call(id, name, args string) model.Message {
	return model.Message{ToolCalls: []model.ToolCall{{ID: id, Name: name, Arguments: args}}}
}

func text(s string) model.Message { return model.Message{Content: s} }

func last(req *model.Request) model.Message { return req.Messages[len(req.Messages)-1] }

// relay: call the tool with the user's input first, then answer with the last result.
func relay(tool string) func(*model.Request) model.Message {
	return func(req *model.Request) model.Message {
		if l := last(req); l.Role == model.RoleTool {
			return text("relayed: " + l.Content)
		}
		in, _ := json.Marshal(map[string]string{"input": last(req).Content})
		return call("call_1", tool, string(in))
	}
}

type recorder struct {
	mu   sync.Mutex
	runs []string
}

func (r *recorder) tool(name string, approval cairn.Policy) *cairn.Tool {
	return cairn.NewTool(&cairn.Tool{Name: name, Description: "Does " + name + ".", Approval: approval}, func(ctx context.Context, a struct {
		Q string `json:"q"`
	}) (string, error) {
		r.mu.Lock()
		r.runs = append(r.runs, name+":"+a.Q)
		r.mu.Unlock()
		return name + " says " + a.Q, nil
	})
}

func (r *recorder) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.runs...)
}

func mustRunner(t *testing.T, agents ...*cairn.Agent) *cairn.Runner {
	t.Helper()
	r := runnerFor(t, agents, nil)
	return r
}

func approveAll(t *testing.T, r *cairn.Runner, s *cairn.Session) *cairn.Session {
	t.Helper()
	var ds []cairn.Decision
	for _, in := range s.Interrupts {
		ds = append(ds, cairn.Decision{InterruptID: in.ID, Action: cairn.ActionApprove})
	}
	s, err := r.Resume(context.Background(), s.ID, s.Seq, ds, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func pathString(in cairn.Interrupt) string {
	var parts []string
	for _, p := range in.Path {
		parts = append(parts, p.Agent+"."+p.Tool+"#"+p.CallID)
	}
	return strings.Join(parts, " > ")
}

// Seed 000, scenarios 4 and 5: a sub-agent's gated tool pauses the parent;
// approving by the flattened interrupt runs it inside the child, and the
// child's answer flows up.
func TestNestedContinuation(t *testing.T) {
	ctx := context.Background()
	var rec recorder
	leaf := newBrain(func(req *model.Request) model.Message {
		if l := last(req); l.Role == model.RoleTool {
			return text("Analysis complete: " + l.Content)
		}
		return call("call_sub_tool_abc", "fetch_sensitive_data", `{"q":"critical"}`)
	})
	parent := newBrain(relay("run_analysis_pipeline"))
	r := mustRunner(t,
		&cairn.Agent{Name: "parent", Model: parent, Tools: []*cairn.Tool{cairn.AgentTool("analyst", &cairn.Tool{Name: "run_analysis_pipeline", Description: "Runs the analysis pipeline."})}},
		&cairn.Agent{Name: "analyst", Model: leaf, Tools: []*cairn.Tool{rec.tool("fetch_sensitive_data", cairn.Always())}},
	)
	s, err := r.Start(ctx, "parent", "Analyze critical data.", nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != cairn.StatusPaused || len(s.Interrupts) != 1 {
		t.Fatalf("%s %+v", s.Status, s.Interrupts)
	}
	if got := pathString(s.Interrupts[0]); got != "parent.run_analysis_pipeline#call_1 > analyst.fetch_sensitive_data#call_sub_tool_abc" {
		t.Fatalf("path = %s", got)
	}
	s = approveAll(t, r, s)
	if s.Status != cairn.StatusCompleted || s.Output != "relayed: Analysis complete: fetch_sensitive_data says critical" {
		t.Fatalf("%s %q", s.Status, s.Output)
	}
	if got := rec.all(); len(got) != 1 {
		t.Fatalf("runs = %v", got)
	}
	// The child's model was called once before the pause and once after:
	// nothing inside it re-ran on resume.
	if n := len(leaf.requests()); n != 2 {
		t.Fatalf("leaf model calls = %d, want 2", n)
	}
	if n := len(parent.requests()); n != 2 {
		t.Fatalf("parent model calls = %d, want 2", n)
	}
	// The push and the pop are events, each with the frame and agent it belongs to.
	evs := check.Events(t)(r.Events(ctx, s.ID, 0))
	var pushed, popped bool
	for _, ev := range evs {
		// A filter of event types.
		//exhaustive:ignore
		switch ev.Type {
		case "frame_pushed":
			pushed = ev.Agent == "parent" && strings.Contains(string(ev.Data), `"agent":"analyst"`) && strings.Contains(string(ev.Data), `"mode":"tool"`)
		case "frame_popped":
			popped = ev.Agent == "analyst" && ev.Frame != "" && strings.Contains(string(ev.Data), `"reason":"completed"`)
		}
	}
	if !pushed || !popped {
		t.Fatalf("push/pop events missing or unlabelled (pushed %v, popped %v)", pushed, popped)
	}
}

func TestThreeLevels(t *testing.T) {
	ctx := context.Background()
	var rec recorder
	leaf := newBrain(func(req *model.Request) model.Message {
		if l := last(req); l.Role == model.RoleTool {
			return text("leaf: " + l.Content)
		}
		return call("c9", "wipe", `{"q":"disk"}`)
	})
	r := mustRunner(t,
		&cairn.Agent{Name: "top", Model: newBrain(relay("ask_mid")), Tools: []*cairn.Tool{cairn.AgentTool("mid", &cairn.Tool{Name: "ask_mid", Description: "Mid."})}},
		&cairn.Agent{Name: "mid", Model: newBrain(relay("ask_leaf")), Tools: []*cairn.Tool{cairn.AgentTool("leaf", &cairn.Tool{Name: "ask_leaf", Description: "Leaf."})}},
		&cairn.Agent{Name: "leaf", Model: leaf, Tools: []*cairn.Tool{rec.tool("wipe", cairn.Always())}},
	)
	s := check.NoErr(t)(r.Start(ctx, "top", "go", nil))
	if len(s.Interrupts) != 1 || len(s.Interrupts[0].Path) != 3 {
		t.Fatalf("interrupts = %+v", s.Interrupts)
	}
	if got := pathString(s.Interrupts[0]); got != "top.ask_mid#call_1 > mid.ask_leaf#call_1 > leaf.wipe#c9" {
		t.Fatalf("path = %s", got)
	}
	if len(s.Stack) != 1 {
		t.Fatalf("tool-mode children are not in the stack: %+v", s.Stack)
	}
	s = approveAll(t, r, s)
	if s.Status != cairn.StatusCompleted || s.Output != "relayed: relayed: leaf: wipe says disk" || len(rec.all()) != 1 {
		t.Fatalf("%s %q runs %v", s.Status, s.Output, rec.all())
	}
}

func TestParallelChildrenBothPause(t *testing.T) {
	ctx := context.Background()
	var rec recorder
	child := func(tool string) *recordingModel {
		return newBrain(func(req *model.Request) model.Message {
			if l := last(req); l.Role == model.RoleTool {
				return text(l.Content)
			}
			// Both children use the same call id: ids must still differ.
			return call("call_1", tool, `{"q":"`+last(req).Content+`"}`)
		})
	}
	top := newBrain(func(req *model.Request) model.Message {
		if last(req).Role == model.RoleTool {
			n := len(req.Messages)
			return text(req.Messages[n-2].Content + " | " + req.Messages[n-1].Content)
		}
		return model.Message{ToolCalls: []model.ToolCall{
			{ID: "a", Name: "ask_a", Arguments: `{"input":"x"}`},
			{ID: "b", Name: "ask_b", Arguments: `{"input":"y"}`},
		}}
	})
	r := mustRunner(t,
		&cairn.Agent{Name: "top", Model: top, Tools: []*cairn.Tool{cairn.AgentTool("ca", &cairn.Tool{Name: "ask_a", Description: "A."}), cairn.AgentTool("cb", &cairn.Tool{Name: "ask_b", Description: "B."})}},
		&cairn.Agent{Name: "ca", Model: child("tool_a"), Tools: []*cairn.Tool{rec.tool("tool_a", cairn.Always())}},
		&cairn.Agent{Name: "cb", Model: child("tool_b"), Tools: []*cairn.Tool{rec.tool("tool_b", cairn.Always())}},
	)
	s := check.NoErr(t)(r.Start(ctx, "top", "go", nil))
	if len(s.Interrupts) != 2 || s.Interrupts[0].ID == s.Interrupts[1].ID {
		t.Fatalf("interrupts = %+v", s.Interrupts)
	}
	if a, b := pathString(s.Interrupts[0]), pathString(s.Interrupts[1]); a != "top.ask_a#a > ca.tool_a#call_1" || b != "top.ask_b#b > cb.tool_b#call_1" {
		t.Fatalf("paths %s / %s", a, b)
	}
	s = approveAll(t, r, s)
	if s.Status != cairn.StatusCompleted || s.Output != "tool_a says x | tool_b says y" {
		t.Fatalf("%s %q", s.Status, s.Output)
	}
	if got := strings.Join(rec.all(), ","); got != "tool_a:x,tool_b:y" {
		t.Fatalf("runs = %s", got)
	}
}

func TestRejectNestedCall(t *testing.T) {
	ctx := context.Background()
	var rec recorder
	leaf := newBrain(func(req *model.Request) model.Message {
		if l := last(req); l.Role == model.RoleTool {
			return text("child saw: " + l.Content)
		}
		return call("c1", "pay", `{"q":"100"}`)
	})
	r := mustRunner(t,
		&cairn.Agent{Name: "top", Model: newBrain(relay("billing")), Tools: []*cairn.Tool{cairn.AgentTool("payer", &cairn.Tool{Name: "billing", Description: "Pays."})}},
		&cairn.Agent{Name: "payer", Model: leaf, Tools: []*cairn.Tool{rec.tool("pay", cairn.Always())}},
	)
	s := check.NoErr(t)(r.Start(ctx, "top", "pay", nil))
	s, err := r.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionReject, Reason: "too much"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.all()) != 0 || s.Output != "relayed: child saw: The user rejected this tool call: too much" {
		t.Fatalf("runs %v output %q", rec.all(), s.Output)
	}
}

func TestAgentToolApprovalBeforeChildStarts(t *testing.T) {
	ctx := context.Background()
	child := newBrain(func(req *model.Request) model.Message { return text("child did " + last(req).Content) })
	r := mustRunner(t,
		&cairn.Agent{Name: "top", Model: newBrain(relay("delegate")), Tools: []*cairn.Tool{cairn.AgentTool("worker", &cairn.Tool{Name: "delegate", Description: "Delegates.", Approval: cairn.Always()})}},
		&cairn.Agent{Name: "worker", Model: child},
	)
	s := check.NoErr(t)(r.Start(ctx, "top", "task", nil))
	if s.Status != cairn.StatusPaused || s.Interrupts[0].Tool != "delegate" || len(child.requests()) != 0 {
		t.Fatalf("child started before approval: %+v", s)
	}
	s = approveAll(t, r, s)
	if s.Output != "relayed: child did task" {
		t.Fatalf("%q", s.Output)
	}
}

// interactive is a skill that talks until the user says "done", then completes.
func interactive(name string) *recordingModel {
	return newBrain(func(req *model.Request) model.Message {
		l := last(req)
		switch {
		case l.Role == model.RoleUser && strings.Contains(l.Content, "done"):
			return call("fin", "complete", fmt.Sprintf(`{"result":"%s finished after %d messages"}`, name, countRole(req, model.RoleUser)))
		case l.Role == model.RoleUser:
			return text(name + " heard: " + l.Content)
		}
		return text(name + " got: " + l.Content)
	})
}

func countRole(req *model.Request, role model.Role) int {
	n := 0
	for _, m := range req.Messages {
		if m.Role == role {
			n++
		}
	}
	return n
}

// Seed 001's behaviours, row by row.
func TestInteractiveStack(t *testing.T) {
	ctx := context.Background()
	main := newBrain(func(req *model.Request) model.Message {
		l := last(req)
		switch {
		case l.Role == model.RoleTool:
			return text("main resumed with: " + l.Content)
		case strings.HasPrefix(l.Content, "quick"):
			return call("m1", "use_quick", `{"input":"fast"}`)
		case strings.HasPrefix(l.Content, "write"):
			return call("m1", "use_writer", `{"input":"a post"}`)
		case strings.HasPrefix(l.Content, "loop"):
			return call("m1", "use_looper", `{"input":"spin"}`)
		case strings.HasPrefix(l.Content, "broken"):
			return call("m1", "use_broken", `{"input":"x"}`)
		}
		return text("main answers: " + l.Content)
	})
	quick := newBrain(func(req *model.Request) model.Message {
		return call("q1", "complete", `{"result":"quick result"}`)
	})
	writer := newBrain(func(req *model.Request) model.Message {
		l := last(req)
		switch {
		case l.Role == model.RoleTool:
			return text("writer continues with " + l.Content)
		case strings.Contains(l.Content, "research"):
			return call("w1", "use_research", `{"input":"sources"}`)
		case strings.Contains(l.Content, "done"):
			return call("w2", "complete", `{"result":"post written"}`)
		}
		return text("writer heard: " + l.Content)
	})
	looper := newBrain(func(req *model.Request) model.Message { return call("l", "noop", `{}`) })
	broken := newBrain(func(req *model.Request) model.Message { return text("__error__") })
	noop := cairn.NewTool(&cairn.Tool{Name: "noop", Description: "Nothing."}, func(ctx context.Context, a struct{}) (string, error) { return "ok", nil })
	r := mustRunner(t,
		&cairn.Agent{Name: "main", Model: main, Tools: []*cairn.Tool{
			cairn.InteractiveAgentTool("quick", &cairn.Tool{Name: "use_quick", Description: "Quick skill."}),
			cairn.InteractiveAgentTool("writer", &cairn.Tool{Name: "use_writer", Description: "Writer skill."}),
			cairn.InteractiveAgentTool("looper", &cairn.Tool{Name: "use_looper", Description: "Loops."}),
			cairn.InteractiveAgentTool("broken", &cairn.Tool{Name: "use_broken", Description: "Fails."}),
		}},
		&cairn.Agent{Name: "quick", Model: quick},
		&cairn.Agent{Name: "writer", Model: writer, Tools: []*cairn.Tool{cairn.InteractiveAgentTool("research", &cairn.Tool{Name: "use_research", Description: "Research agent."})}},
		&cairn.Agent{Name: "research", Model: interactive("research")},
		&cairn.Agent{Name: "looper", Model: looper, Tools: []*cairn.Tool{noop}, MaxIterations: 3},
		&cairn.Agent{Name: "broken", Model: broken},
	)
	stack := func(s *cairn.Session) string {
		var parts []string
		for _, f := range s.Stack {
			parts = append(parts, f.Agent+"/"+string(f.Mode))
		}
		return strings.Join(parts, ",")
	}

	// Stack empty + message: normal main agent flow.
	s := check.NoErr(t)(r.Start(ctx, "main", "hello", nil))
	if s.Status != cairn.StatusCompleted || s.Output != "main answers: hello" || stack(s) != "main/main" {
		t.Fatalf("plain: %s %q %s", s.Status, s.Output, stack(s))
	}

	// Skill completes first turn: push and immediate pop; main resumes.
	s = check.NoErr(t)(r.Send(ctx, s.ID, "quick one", 0, nil))
	if s.Status != cairn.StatusCompleted || s.Output != "main resumed with: quick result" || stack(s) != "main/main" {
		t.Fatalf("quick: %s %q %s", s.Status, s.Output, stack(s))
	}

	// Skill needs interaction: depth 2, its text goes to the user.
	s = check.NoErr(t)(r.Send(ctx, s.ID, "write something", 0, nil))
	if s.Status != cairn.StatusPaused || stack(s) != "main/main,writer/interactive" || s.Output != "writer heard: a post" {
		t.Fatalf("writer: %s %q %s", s.Status, s.Output, stack(s))
	}
	if in := s.Interrupts[0]; in.Kind != cairn.KindMessage || in.Text != "writer heard: a post" || pathString(in) != "main.use_writer#m1" {
		t.Fatalf("message interrupt: %+v", in)
	}
	// A decision cannot answer a message interrupt.
	if _, err := r.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: "approve"}}, nil); !errors.Is(err, cairn.ErrInvalidRequest) {
		t.Fatalf("decision on a message interrupt: %v", err)
	}
	// Stack active + message: routed to the top.
	s = check.NoErr(t)(r.Send(ctx, s.ID, "make it short", 0, nil))
	if s.Output != "writer heard: make it short" {
		t.Fatalf("routing: %q", s.Output)
	}

	// Nested: skill calls agent; depth 3, the user talks to the inner agent.
	s = check.NoErr(t)(r.Send(ctx, s.ID, "do some research", 0, nil))
	if stack(s) != "main/main,writer/interactive,research/interactive" || s.Output != "research heard: sources" {
		t.Fatalf("nested: %q %s", s.Output, stack(s))
	}
	if got := pathString(s.Interrupts[0]); got != "main.use_writer#m1 > writer.use_research#w1" {
		t.Fatalf("nested path %s", got)
	}
	s = check.NoErr(t)(r.Send(ctx, s.ID, "focus on 3.13", 0, nil))
	if s.Output != "research heard: focus on 3.13" {
		t.Fatalf("inner: %q", s.Output)
	}

	// Inner completes and cascades: writer continues.
	s = check.NoErr(t)(r.Send(ctx, s.ID, "done", 0, nil))
	if stack(s) != "main/main,writer/interactive" || s.Output != "writer continues with research finished after 3 messages" {
		t.Fatalf("cascade: %q %s", s.Output, stack(s))
	}

	// Writer completes; main resumes, makes another model call, answers.
	s = check.NoErr(t)(r.Send(ctx, s.ID, "done", 0, nil))
	if s.Status != cairn.StatusCompleted || stack(s) != "main/main" || s.Output != "main resumed with: post written" {
		t.Fatalf("main resumes: %s %q %s", s.Status, s.Output, stack(s))
	}

	// The user's messages to children never entered main's history.
	for _, req := range main.requests() {
		for _, m := range req.Messages {
			if strings.Contains(m.Content, "make it short") || strings.Contains(m.Content, "focus on") {
				t.Fatalf("main saw a child's conversation: %+v", m)
			}
		}
	}

	// Max iterations hit: the error cascades to the parent as a tool error.
	s = check.NoErr(t)(r.Send(ctx, s.ID, "loop please", 0, nil))
	if s.Status != cairn.StatusCompleted || !strings.Contains(s.Output, `agent "looper" stopped after 3 iterations`) {
		t.Fatalf("max iterations: %s %q", s.Status, s.Output)
	}
	// LLM error in a child cascades the same way.
	s = check.NoErr(t)(r.Send(ctx, s.ID, "broken please", 0, nil))
	if !strings.Contains(s.Output, `agent "broken": model call failed: upstream 503`) {
		t.Fatalf("child model error: %q", s.Output)
	}
}

func TestInteractiveChildrenQueueInCallOrder(t *testing.T) {
	ctx := context.Background()
	main := newBrain(func(req *model.Request) model.Message {
		if last(req).Role == model.RoleTool {
			n := len(req.Messages)
			return text(req.Messages[n-2].Content + " then " + req.Messages[n-1].Content)
		}
		return model.Message{ToolCalls: []model.ToolCall{
			{ID: "1", Name: "use_a", Arguments: `{"input":"first"}`},
			{ID: "2", Name: "use_b", Arguments: `{"input":"second"}`},
		}}
	})
	r := mustRunner(t,
		&cairn.Agent{Name: "main", Model: main, Tools: []*cairn.Tool{cairn.InteractiveAgentTool("a", &cairn.Tool{Name: "use_a", Description: "A."}), cairn.InteractiveAgentTool("b", &cairn.Tool{Name: "use_b", Description: "B."})}},
		&cairn.Agent{Name: "a", Model: interactive("a")},
		&cairn.Agent{Name: "b", Model: interactive("b")},
	)
	s := check.NoErr(t)(r.Start(ctx, "main", "go", nil))
	if len(s.Stack) != 2 || s.Stack[1].Agent != "a" || len(s.Interrupts) != 1 {
		t.Fatalf("first: %+v %+v", s.Stack, s.Interrupts)
	}
	s = check.NoErr(t)(r.Send(ctx, s.ID, "done", 0, nil))
	if len(s.Stack) != 2 || s.Stack[1].Agent != "b" || s.Output != "b heard: second" {
		t.Fatalf("second: %+v %q", s.Stack, s.Output)
	}
	s = check.NoErr(t)(r.Send(ctx, s.ID, "done", 0, nil))
	if s.Status != cairn.StatusCompleted || s.Output != "a finished after 2 messages then b finished after 2 messages" {
		t.Fatalf("final: %s %q", s.Status, s.Output)
	}
}

// Seed 002, pause for input: the tool asks; the answer re-calls it.
func TestAskPausesForInput(t *testing.T) {
	ctx := context.Background()
	calls := 0
	deploy := cairn.NewTool(&cairn.Tool{Name: "deploy", Description: "Deploy."}, func(ctx context.Context, a struct{}) (string, error) {
		calls++
		env, err := cairn.Ask(ctx, "Which environment?")
		if err != nil {
			return "", err
		}
		ok, err := cairn.Ask(ctx, "Deploy to "+env+", sure?")
		if err != nil {
			return "", err
		}
		return "deployed to " + env + " (" + ok + ")", nil
	})
	r := mustRunner(t, &cairn.Agent{Name: "main", Model: newBrain(func(req *model.Request) model.Message {
		if l := last(req); l.Role == model.RoleTool {
			return text(l.Content)
		}
		return call("c1", "deploy", `{}`)
	}), Tools: []*cairn.Tool{deploy}})
	s := check.NoErr(t)(r.Start(ctx, "main", "deploy", nil))
	if in := s.Interrupts[0]; s.Status != cairn.StatusPaused || in.Kind != cairn.KindInput || in.Question != "Which environment?" {
		t.Fatalf("%s %+v", s.Status, s.Interrupts)
	}
	if _, err := r.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: "approve"}}, nil); !errors.Is(err, cairn.ErrInvalidRequest) {
		t.Fatalf("approve on a question: %v", err)
	}
	// An answer without text is refused and does not spend the question.
	if _, err := r.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionAnswer}}, nil); !errors.Is(err, cairn.ErrInvalidRequest) || !strings.Contains(err.Error(), "text is required") {
		t.Fatalf("answer without text: %v", err)
	}
	if again := check.NoErr(t)(r.Session(ctx, s.ID)); again.Seq != s.Seq || len(again.Interrupts) != 1 {
		t.Fatalf("a refused answer changed the session: %+v", again)
	}
	s, err := r.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionAnswer, Text: "staging"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if in := s.Interrupts[0]; in.Question != "Deploy to staging, sure?" {
		t.Fatalf("second question: %+v", s.Interrupts)
	}
	s = check.NoErr(t)(r.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionAnswer, Text: "yes"}}, nil))
	if s.Status != cairn.StatusCompleted || s.Output != "deployed to staging (yes)" || calls != 3 {
		t.Fatalf("%s %q calls %d", s.Status, s.Output, calls)
	}
	evs := check.Events(t)(r.Events(ctx, s.ID, 0))
	var kinds []string
	for _, ev := range evs {
		if ev.Type == "input_requested" || ev.Type == "decision" {
			kinds = append(kinds, string(ev.Type))
		}
	}
	if strings.Join(kinds, " ") != "input_requested decision input_requested decision" {
		t.Fatalf("events: %v", kinds)
	}
}

// Seed 002, handoff: billing takes over, answers the caller, and the agent
// that handed off is not called again in that turn.
func TestHandoff(t *testing.T) {
	ctx := context.Background()
	triage := newBrain(func(req *model.Request) model.Message { return call("h1", "transfer_to_billing", `{}`) })
	billing := newBrain(func(req *model.Request) model.Message {
		return text(fmt.Sprintf("billing here; I see %d messages and the system prompt %q", len(req.Messages), req.System))
	})
	r := mustRunner(t,
		&cairn.Agent{Name: "triage", Instructions: "Route.", Model: triage, Tools: []*cairn.Tool{cairn.Handoff("billing", nil)}},
		&cairn.Agent{Name: "billing", Instructions: "Bill.", Model: billing},
	)
	s, err := r.Start(ctx, "triage", "my invoice is wrong", nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != cairn.StatusCompleted || s.Output != `billing here; I see 3 messages and the system prompt "Bill."` {
		t.Fatalf("%s %q", s.Status, s.Output)
	}
	if len(triage.requests()) != 1 || s.Stack[0].Agent != "billing" {
		t.Fatalf("triage calls %d, stack %+v", len(triage.requests()), s.Stack)
	}
	evs := check.Events(t)(r.Events(ctx, s.ID, 0))
	found := false
	for _, ev := range evs {
		found = found || ev.Type == "handoff"
	}
	if !found {
		t.Fatal("no handoff event")
	}
	// Handoff inside a child answers the child's caller.
	r2 := mustRunner(t,
		&cairn.Agent{Name: "main", Model: newBrain(relay("ask_triage")), Tools: []*cairn.Tool{cairn.AgentTool("triage", &cairn.Tool{Name: "ask_triage", Description: "Triage."})}},
		&cairn.Agent{Name: "triage", Model: triage, Tools: []*cairn.Tool{cairn.Handoff("billing", nil)}},
		&cairn.Agent{Name: "billing", Instructions: "Bill.", Model: newBrain(func(*model.Request) model.Message { return text("refund issued") })},
	)
	s = check.NoErr(t)(r2.Start(ctx, "main", "invoice", nil))
	if s.Output != "relayed: refund issued" {
		t.Fatalf("nested handoff: %q", s.Output)
	}
}

func TestCancel(t *testing.T) {
	ctx := context.Background()
	main := newBrain(func(req *model.Request) model.Message {
		if l := last(req); l.Role == model.RoleTool {
			return text("main saw: " + l.Content)
		}
		return call("m1", "use_skill", `{"input":"hi"}`)
	})
	newR := func() *cairn.Runner {
		return mustRunner(t,
			&cairn.Agent{Name: "main", Model: main, Tools: []*cairn.Tool{cairn.InteractiveAgentTool("skill", &cairn.Tool{Name: "use_skill", Description: "Skill."})}},
			&cairn.Agent{Name: "skill", Model: interactive("skill")},
		)
	}
	r := newR()
	s := check.NoErr(t)(r.Start(ctx, "main", "go", nil))
	s, err := r.Cancel(ctx, s.ID, "top", nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != cairn.StatusCompleted || s.Output != `main saw: agent "skill" was cancelled by the user` || len(s.Stack) != 1 {
		t.Fatalf("cancel top: %s %q %+v", s.Status, s.Output, s.Stack)
	}
	if _, err := r.Cancel(ctx, s.ID, "top", nil); !errors.Is(err, cairn.ErrConflict) {
		t.Fatalf("nothing to cancel: %v", err)
	}
	s = check.NoErr(t)(r.Send(ctx, s.ID, "again", 0, nil))
	// A named actor is recorded and named to the parent agent.
	s, err = r.Cancel(ctx, s.ID, "top", &cairn.TurnOptions{Actor: cairn.Actor{Name: "bob", Role: "admin"}})
	if err != nil || s.Output != `main saw: agent "skill" was cancelled by bob (admin)` {
		t.Fatalf("cancel top by bob: %v %q", err, s.Output)
	}
	evs := check.Events(t)(r.Events(ctx, s.ID, 0))
	if popped := eventOf(evs, "frame_popped", 2); !strings.Contains(string(popped.Data), `"actor":{"name":"bob","role":"admin"}`) {
		t.Fatalf("frame_popped = %s", popped.Data)
	}
	s = check.NoErr(t)(r.Send(ctx, s.ID, "again", 0, nil))
	s, err = r.Cancel(ctx, s.ID, "all", nil)
	if err != nil || s.Status != cairn.StatusCancelled || len(s.Stack) != 1 {
		t.Fatalf("cancel all: %v %s %+v", err, s.Status, s.Stack)
	}
	// The session takes new messages after a cancelled turn.
	s = check.NoErr(t)(r.Send(ctx, s.ID, "hello again", 0, nil))
	if s.Status != cairn.StatusPaused || s.Stack[1].Agent != "skill" {
		t.Fatalf("after cancel: %s %+v", s.Status, s.Stack)
	}
}

// eventOf is the nth (from 1) event of type typ in evs, or a zero event.
func eventOf(evs []cairn.Event, typ string, nth int) cairn.Event {
	for _, ev := range evs {
		if string(ev.Type) == typ {
			if nth--; nth == 0 {
				return ev
			}
		}
	}
	return cairn.Event{}
}

// Restart while paused inside a depth-3 interactive stack: a new Runner on
// the same SQLite file continues where it stopped.
func TestInteractiveStackSurvivesRestart(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "cairn.db")
	agents := func() []*cairn.Agent {
		return []*cairn.Agent{
			{Name: "main", Model: newBrain(func(req *model.Request) model.Message {
				if l := last(req); l.Role == model.RoleTool {
					return text("main got " + l.Content)
				}
				return call("m", "use_writer", `{"input":"w"}`)
			}), Tools: []*cairn.Tool{cairn.InteractiveAgentTool("writer", &cairn.Tool{Name: "use_writer", Description: "W."})}},
			{Name: "writer", Model: newBrain(func(req *model.Request) model.Message {
				if l := last(req); l.Role == model.RoleTool {
					return call("w2", "complete", `{"result":"writer done: `+l.Content+`"}`)
				}
				return call("w1", "use_research", `{"input":"r"}`)
			}), Tools: []*cairn.Tool{cairn.InteractiveAgentTool("research", &cairn.Tool{Name: "use_research", Description: "R."})}},
			{Name: "research", Model: interactive("research")},
		}
	}
	st1, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	r1 := runnerFor(t, agents(), &cairn.RunnerOptions{Store: st1})
	s := check.NoErr(t)(r1.Start(ctx, "main", "go", nil))
	if len(s.Stack) != 3 || s.Status != cairn.StatusPaused {
		t.Fatalf("%+v", s)
	}
	r1.Close()
	st1.Close()

	st2, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	r2 := runnerFor(t, agents(), &cairn.RunnerOptions{Store: st2})
	s, err = r2.Send(ctx, s.ID, "more", 0, nil)
	if err != nil || s.Output != "research heard: more" {
		t.Fatalf("%v %q", err, s.Output)
	}
	s = check.NoErr(t)(r2.Send(ctx, s.ID, "done", 0, nil))
	if s.Status != cairn.StatusCompleted || s.Output != "main got writer done: research finished after 3 messages" {
		t.Fatalf("%s %q", s.Status, s.Output)
	}
}

func TestAgentToolTargetMustExist(t *testing.T) {
	_, err := cairn.NewRunner([]*cairn.Agent{{Name: "main", Model: scripted.New(), Tools: []*cairn.Tool{cairn.AgentTool("ghost", &cairn.Tool{Name: "ask", Description: "x"})}}}, nil)
	if err == nil || !strings.Contains(err.Error(), `runs agent "ghost"`) {
		t.Fatalf("err = %v", err)
	}
}
