package temporal

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/store"
)

// A direct agent's session on the workflow (a gateway call, an approval
// request): it starts with the requested call, pauses for its approval,
// and once approved runs the tool once and answers with its result; the
// mirror reads as the approval request it is.
func TestDirectCallOnTheWorkflow(t *testing.T) {
	f := &fixture{t: t, store: store.NewMemory()}
	deploy := cairn.NewTool(&cairn.Tool{Name: "deploy", Description: "Deploy.", Approval: cairn.Always()},
		func(ctx context.Context, a deployArgs) (string, error) {
			f.runs.Add(1)
			return "deployed to " + a.Env, nil
		})
	f.start(&cairn.Agent{Name: "gateway", Direct: true, Tools: []*cairn.Tool{deploy}})
	var approved *outcome
	f.env.RegisterDelayedCallback(func() {
		s := f.session("ses_direct")
		if s.Status != cairn.StatusPaused || len(s.Interrupts) != 1 || s.Interrupts[0].Message != "Deploy prod?" {
			t.Errorf("mirror after the start: %+v", s)
			return
		}
		approved = f.update(UpdateDecide, DecideArgs{Seq: s.Seq, Decisions: []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove}}})
	}, time.Second)
	f.env.RegisterDelayedCallback(f.env.CancelWorkflow, 2*time.Second)
	f.env.ExecuteWorkflow(WorkflowName, params{Start: &engine.Start{SessionID: "ses_direct", Agent: "gateway", Text: "MCP client call of deploy",
		Call: &cairn.CallRequest{ID: "call", Tool: "deploy", Arguments: json.RawMessage(`{"env":"prod"}`), Message: "Deploy prod?"}}})
	if approved == nil || approved.err != nil || approved.result == nil || approved.result.Output != "deployed to prod" || f.runs.Load() != 1 {
		t.Fatalf("approved: %+v, %d runs", approved, f.runs.Load())
	}
	a, err := f.runner.CallApproval(context.Background(), "ses_direct")
	if err != nil || a.Status != cairn.ApprovalApproved || a.Result == nil || string(a.Result.Output) != `"deployed to prod"` {
		t.Fatalf("the request: %v %+v", err, a)
	}
}

// Tools a message declares (AG-UI frontend tools) cross the workflow: the
// model is offered them, and its call of one waits for the client.
func TestSenderToolsOnTheWorkflow(t *testing.T) {
	f := &fixture{t: t, store: store.NewMemory()}
	var offered []string
	m := model.Func(func(_ context.Context, req *model.Request) (*model.Response, error) {
		offered = nil
		for _, d := range req.Tools {
			offered = append(offered, d.Name)
		}
		if len(offered) == 0 {
			return &model.Response{Message: model.Message{Content: "no tools"}}, nil
		}
		return &model.Response{Message: model.Message{ToolCalls: []model.ToolCall{{ID: "c1", Name: "show_card", Arguments: `{}`}}}}, nil
	})
	f.start(&cairn.Agent{Name: "ops", Model: m})
	var spoke *outcome
	f.env.RegisterDelayedCallback(func() {
		spoke = f.update(UpdateMessage, MessageArgs{Text: "show it", Tools: []model.ToolDefinition{{Name: "show_card", Parameters: json.RawMessage(`{"type":"object"}`)}}})
	}, time.Second)
	f.env.RegisterDelayedCallback(f.env.CancelWorkflow, 2*time.Second)
	f.env.ExecuteWorkflow(WorkflowName, params{Start: &engine.Start{SessionID: "ses_tools", Agent: "ops", Text: "hi"}})
	if spoke == nil || spoke.err != nil || spoke.result == nil || spoke.result.Status != cairn.StatusPaused ||
		len(spoke.result.Interrupts) != 1 || spoke.result.Interrupts[0].Kind != cairn.KindClient || len(offered) != 1 {
		t.Fatalf("the message with a tool: %+v, offered %v", spoke, offered)
	}
}
