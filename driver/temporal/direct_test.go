package temporal

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
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

// A tool's preview on the workflow: computed by its activity before the
// pause, mirrored with the interrupt; a preview that fails is shown as
// its error and the decision goes through.
func TestPreviewOnTheWorkflow(t *testing.T) {
	f := &fixture{t: t, store: store.NewMemory()}
	var previews atomic.Int32
	deploy := cairn.NewTool(&cairn.Tool{Name: "deploy", Description: "Deploy.", Approval: cairn.Always(),
		Preview: func(ctx context.Context, args json.RawMessage) (cairn.Preview, error) {
			previews.Add(1)
			return cairn.TextPreview(cairn.PreviewDiff, "-env: none\n+env: "+string(args)), nil
		}},
		func(ctx context.Context, a deployArgs) (string, error) {
			f.runs.Add(1)
			return "deployed to " + a.Env, nil
		})
	broken := cairn.NewTool(&cairn.Tool{Name: "drop", Description: "Drop.", Approval: cairn.Always(),
		Preview: func(ctx context.Context, args json.RawMessage) (cairn.Preview, error) {
			return cairn.Preview{}, errors.New("no database")
		}},
		func(ctx context.Context, a struct{}) (string, error) { return "dropped", nil })
	m := model.Func(func(_ context.Context, req *model.Request) (*model.Response, error) {
		if last := req.Messages[len(req.Messages)-1]; last.Role == model.RoleTool {
			return &model.Response{Message: model.Message{Content: "done"}}, nil
		}
		return &model.Response{Message: model.Message{ToolCalls: []model.ToolCall{{ID: "c1", Name: "deploy", Arguments: `{"env":"prod"}`}, {ID: "c2", Name: "drop", Arguments: `{}`}}}}, nil
	})
	f.start(&cairn.Agent{Name: "ops", Model: m, Tools: []*cairn.Tool{deploy, broken}})
	var approved *outcome
	f.env.RegisterDelayedCallback(func() {
		s := f.session("ses_preview")
		if s.Status != cairn.StatusPaused || len(s.Interrupts) != 2 || s.Interrupts[0].Preview == nil ||
			s.Interrupts[0].Preview.Text() != "-env: none\n+env: {\"env\":\"prod\"}" || s.Interrupts[1].Preview == nil || s.Interrupts[1].Preview.Error != "no database" {
			t.Errorf("mirror at the pause: %+v", s.Interrupts)
			return
		}
		approved = f.update(UpdateDecide, DecideArgs{Seq: s.Seq, Decisions: []cairn.Decision{
			{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove}, {InterruptID: s.Interrupts[1].ID, Action: cairn.ActionReject}}})
	}, time.Second)
	f.env.RegisterDelayedCallback(f.env.CancelWorkflow, 2*time.Second)
	f.env.ExecuteWorkflow(WorkflowName, params{Start: &engine.Start{SessionID: "ses_preview", Agent: "ops", Text: "ship"}})
	if approved == nil || approved.err != nil || approved.result == nil || approved.result.Status != cairn.StatusCompleted || f.runs.Load() != 1 || previews.Load() != 1 {
		t.Fatalf("approved: %+v, %d runs, %d previews", approved, f.runs.Load(), previews.Load())
	}
}
