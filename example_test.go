package cairn_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/model/scripted"
)

// A tool that needs approval pauses the session; approving runs it once and
// the model sees its result.
func Example_approve() {
	ctx := context.Background()
	deleteFile := cairn.NewTool(&cairn.Tool{Name: "delete_file", Description: "Delete a file.", Approval: cairn.Always(), Confirmation: "Delete file '{{.filename}}'? This cannot be undone."}, func(ctx context.Context, a struct {
		Filename string `json:"filename"`
	}) (string, error) {
		return "Deleted " + a.Filename, nil
	})
	model := scripted.New(
		scripted.Reply{ToolCalls: []scripted.Call{{Name: "delete_file", Arguments: `{"filename":"test.txt"}`}}},
		scripted.Reply{Text: "Done: {{.LastResult}}"},
	)
	runner, _ := cairn.NewRunner([]*cairn.Agent{{Name: "files", Model: model, Tools: []*cairn.Tool{deleteFile}}}, nil)

	s, _ := runner.Start(ctx, "files", "Delete the file named 'test.txt'", nil)
	fmt.Println(s.Status)
	fmt.Println(s.Interrupts[0].Message)

	s, _ = runner.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove}}, nil)
	fmt.Println(s.Status)
	fmt.Println(s.Output)
	// Output:
	// paused
	// Delete file 'test.txt'? This cannot be undone.
	// completed
	// Done: Deleted test.txt
}

// Rejecting gives the model the reason as the tool's (error) result.
func Example_reject() {
	ctx := context.Background()
	deploy := cairn.NewTool(&cairn.Tool{Name: "deploy", Description: "Deploy.", Approval: cairn.ApprovalIf(func(a struct {
		Env string `json:"env"`
	}) bool {
		return a.Env == "production"
	})}, func(ctx context.Context, a struct {
		Env string `json:"env"`
	}) (string, error) {
		panic("never runs")
	})
	model := scripted.New(
		scripted.Reply{ToolCalls: []scripted.Call{{Name: "deploy", Arguments: `{"env":"production"}`}}},
		scripted.Reply{Text: "{{.LastResult}}"},
	)
	runner, _ := cairn.NewRunner([]*cairn.Agent{{Name: "ops", Model: model, Tools: []*cairn.Tool{deploy}}}, nil)
	s, _ := runner.Start(ctx, "ops", "Ship it", nil)
	s, _ = runner.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionReject, Reason: "not on a Friday"}}, nil)
	fmt.Println(s.Output)
	// Output:
	// The user rejected this tool call: not on a Friday
}

// The approver changes the arguments; they are validated against the tool's
// schema, then the call runs with them.
func Example_modify() {
	ctx := context.Background()
	deploy := cairn.NewTool(&cairn.Tool{Name: "deploy", Description: "Deploy.", Approval: cairn.Always()}, func(ctx context.Context, a struct {
		Env string `json:"env" enum:"staging,production"`
	}) (string, error) {
		return "deployed to " + a.Env, nil
	})
	model := scripted.New(
		scripted.Reply{ToolCalls: []scripted.Call{{Name: "deploy", Arguments: `{"env":"production"}`}}},
		scripted.Reply{Text: "{{.LastResult}}"},
	)
	runner, _ := cairn.NewRunner([]*cairn.Agent{{Name: "ops", Model: model, Tools: []*cairn.Tool{deploy}}}, nil)
	s, _ := runner.Start(ctx, "ops", "Ship it", nil)
	_, err := runner.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove, Arguments: json.RawMessage(`{"env":"moon"}`)}}, nil)
	fmt.Println(errors.Is(err, cairn.ErrInvalidArguments))
	s, _ = runner.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove, Arguments: json.RawMessage(`{"env":"staging"}`)}}, nil)
	fmt.Println(s.Output)
	// Output:
	// true
	// deployed to staging
}

// Seed 000, scenarios 4 and 5: a sub-agent's gated tool pauses the whole
// session; the interrupt's path shows where; approving resumes inside the child.
func Example_nestedContinuation() {
	ctx := context.Background()
	fetch := cairn.NewTool(&cairn.Tool{Name: "fetch_sensitive_data", Description: "Fetch data.", Approval: cairn.Always()}, func(ctx context.Context, a struct{}) (string, error) { return "42 records", nil })
	parent := scripted.New(
		scripted.Reply{ToolCalls: []scripted.Call{{Name: "run_analysis_pipeline", Arguments: `{"input":"analyze"}`}}},
		scripted.Reply{Text: "Report: {{.LastResult}}"},
	)
	analyst := scripted.New(
		scripted.Reply{ToolCalls: []scripted.Call{{Name: "fetch_sensitive_data", Arguments: `{}`}}},
		scripted.Reply{Text: "analysis of {{.LastResult}}"},
	)
	runner, _ := cairn.NewRunner([]*cairn.Agent{
		{Name: "parent", Model: parent, Tools: []*cairn.Tool{cairn.AgentTool("analyst", &cairn.Tool{Name: "run_analysis_pipeline", Description: "Runs the analysis pipeline."})}},
		{Name: "analyst", Model: analyst, Tools: []*cairn.Tool{fetch}},
	}, nil)
	s, _ := runner.Start(ctx, "parent", "Analyze critical data.", nil)
	for _, step := range s.Interrupts[0].Path {
		fmt.Println(step.Agent, "→", step.Tool)
	}
	s, _ = runner.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove}}, nil)
	fmt.Println(s.Output)
	// Output:
	// parent → run_analysis_pipeline
	// analyst → fetch_sensitive_data
	// Report: analysis of 42 records
}

// Seed 001: an interactive skill takes over the conversation until it calls
// complete; its result goes back to the main agent.
func Example_interactiveSkill() {
	ctx := context.Background()
	main := scripted.New(
		scripted.Reply{ToolCalls: []scripted.Call{{Name: "use_research", Arguments: `{"input":"find Python async APIs"}`}}},
		scripted.Reply{Text: "Main agent: {{.LastResult}}"},
	)
	research := model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		last := req.Messages[len(req.Messages)-1].Content
		if last == "that's all" {
			return &model.Response{Message: model.Message{ToolCalls: []model.ToolCall{{ID: "c", Name: "complete", Arguments: `{"result":"found 3 APIs"}`}}}}, nil
		}
		return &model.Response{Message: model.Message{Content: "Research here. Which Python version?"}}, nil
	})
	runner, _ := cairn.NewRunner([]*cairn.Agent{
		{Name: "main", Model: main, Tools: []*cairn.Tool{cairn.InteractiveAgentTool("research", &cairn.Tool{Name: "use_research", Description: "Talk to research."})}},
		{Name: "research", Model: research},
	}, nil)
	s, _ := runner.Start(ctx, "main", "research Python async APIs", nil)
	fmt.Println(len(s.Stack), s.Interrupts[0].Kind, s.Output)
	s, _ = runner.Send(ctx, s.ID, "that's all", 0, nil)
	fmt.Println(len(s.Stack), s.Output)
	// Output:
	// 2 message Research here. Which Python version?
	// 1 Main agent: found 3 APIs
}

// Seed 002: a tool asks the user a question; the answer calls it again.
func Example_pauseForInput() {
	ctx := context.Background()
	deploy := cairn.NewTool(&cairn.Tool{Name: "deploy", Description: "Deploy."}, func(ctx context.Context, a struct{}) (string, error) {
		env, err := cairn.Ask(ctx, "Which environment?")
		if err != nil {
			return "", err
		}
		return "deployed to " + env, nil
	})
	model := scripted.New(
		scripted.Reply{ToolCalls: []scripted.Call{{Name: "deploy", Arguments: `{}`}}},
		scripted.Reply{Text: "{{.LastResult}}"},
	)
	runner, _ := cairn.NewRunner([]*cairn.Agent{{Name: "ops", Model: model, Tools: []*cairn.Tool{deploy}}}, nil)
	s, _ := runner.Start(ctx, "ops", "deploy", nil)
	fmt.Println(s.Interrupts[0].Kind, s.Interrupts[0].Question)
	s, _ = runner.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionAnswer, Text: "staging"}}, nil)
	fmt.Println(s.Output)
	// Output:
	// input Which environment?
	// deployed to staging
}

// Seed 002: a handoff replaces the agent; the new one answers the caller.
func Example_handoff() {
	ctx := context.Background()
	triage := scripted.New(scripted.Reply{ToolCalls: []scripted.Call{{Name: "transfer_to_billing", Arguments: `{}`}}})
	// billing sees the whole conversation, triage's transfer call included.
	billing := model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		return &model.Response{Message: model.Message{Content: "Billing here: your refund is on its way."}}, nil
	})
	runner, _ := cairn.NewRunner([]*cairn.Agent{
		{Name: "triage", Model: triage, Tools: []*cairn.Tool{cairn.Handoff("billing", nil)}},
		{Name: "billing", Model: billing},
	}, nil)
	s, _ := runner.Start(ctx, "triage", "I was charged twice", nil)
	fmt.Println(s.Stack[0].Agent+":", s.Output)
	// Output:
	// billing: Billing here: your refund is on its way.
}

// Cancel pops an interactive agent; its parent learns the user cancelled.
func Example_cancel() {
	ctx := context.Background()
	main := scripted.New(
		scripted.Reply{ToolCalls: []scripted.Call{{Name: "use_writer", Arguments: `{"input":"a blog post"}`}}},
		scripted.Reply{Text: "OK. ({{.LastResult}})"},
	)
	writer := scripted.New(scripted.Reply{Text: "What should the post be about?"})
	runner, _ := cairn.NewRunner([]*cairn.Agent{
		{Name: "main", Model: main, Tools: []*cairn.Tool{cairn.InteractiveAgentTool("writer", &cairn.Tool{Name: "use_writer", Description: "Writer."})}},
		{Name: "writer", Model: writer},
	}, nil)
	s, _ := runner.Start(ctx, "main", "write something", nil)
	s, _ = runner.Cancel(ctx, s.ID, "top", nil)
	fmt.Println(s.Output)
	// Output:
	// OK. (agent "writer" was cancelled by the user)
}

// Stream yields a turn's events as they are recorded.
func ExampleStream() {
	ctx := context.Background()
	model := scripted.New(scripted.Reply{Text: "Hello!"})
	runner, _ := cairn.NewRunner([]*cairn.Agent{{Name: "greeter", Model: model}}, nil)
	for ev, err := range cairn.Stream(func(observe func(cairn.Event)) (*cairn.Session, error) {
		return runner.Start(ctx, "greeter", "hi", &cairn.StartOptions{Observe: observe})
	}) {
		if err != nil {
			fmt.Println(err)
			return
		}
		if ev.Type != cairn.EventModelDelta {
			fmt.Println(ev.Seq, ev.Type)
		}
	}
	// Output:
	// 1 session_started
	// 2 user_message
	// 3 model_response
	// 4 turn_completed
}
