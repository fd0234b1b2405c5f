package cairn_test

import (
	"context"
	"fmt"
	"log"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/model/scripted"
)

// A sub-agent's gated tool pauses the whole session; the interrupt's path
// shows where; approving resumes inside the child.
func Example_nestedApproval() {
	ctx := context.Background()
	fetch := cairn.NewTool(&cairn.Tool{Name: "fetch_sensitive_data", Description: "Fetch data.", Approval: cairn.Always()},
		func(ctx context.Context, a struct{}) (string, error) { return "42 records", nil })
	model := &scripted.Model{Scripts: map[string][]scripted.Reply{
		"parent": {
			{ToolCalls: []scripted.Call{{Name: "run_analysis_pipeline", Arguments: `{"input":"analyze"}`}}},
			{Text: "Report: {{.LastResult}}"},
		},
		"analyst": {
			{ToolCalls: []scripted.Call{{Name: "fetch_sensitive_data", Arguments: `{}`}}},
			{Text: "analysis of {{.LastResult}}"},
		},
	}}
	runner, err := cairn.NewRunner([]*cairn.Agent{
		{Name: "parent", Model: model, Tools: []*cairn.Tool{
			cairn.AgentTool("analyst", &cairn.Tool{Name: "run_analysis_pipeline", Description: "Runs the analysis pipeline."}),
		}},
		{Name: "analyst", Model: model, Tools: []*cairn.Tool{fetch}},
	}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer runner.Close()
	s, err := runner.Start(ctx, "parent", "Analyze critical data.", nil)
	if err != nil {
		log.Fatal(err)
	}
	for _, step := range s.Interrupts[0].Path {
		fmt.Println(step.Agent, "→", step.Tool)
	}
	s, err = runner.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove}}, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(s.Output)
	// Output:
	// parent → run_analysis_pipeline
	// analyst → fetch_sensitive_data
	// Report: analysis of 42 records
}

// An interactive sub-agent takes over the conversation: the user talks to
// it (Send) until it calls complete; its result goes back to the main agent.
// The per-agent scripts go on across the user's messages.
func Example_interactiveAgent() {
	ctx := context.Background()
	model := &scripted.Model{Scripts: map[string][]scripted.Reply{
		"main": {
			{ToolCalls: []scripted.Call{{Name: "use_research", Arguments: `{"input":"find Python async APIs"}`}}},
			{Text: "Main agent: {{.LastResult}}"},
		},
		"research": {
			{Text: "Research here. Which Python version?"},
			{ToolCalls: []scripted.Call{{Name: "complete", Arguments: `{"result":"found 3 APIs for 3.12"}`}}},
		},
	}}
	runner, err := cairn.NewRunner([]*cairn.Agent{
		{Name: "main", Model: model, Tools: []*cairn.Tool{
			cairn.InteractiveAgentTool("research", &cairn.Tool{Name: "use_research", Description: "Talk to research."}),
		}},
		{Name: "research", Model: model},
	}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer runner.Close()
	s, err := runner.Start(ctx, "main", "research Python async APIs", nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(s.Stack[len(s.Stack)-1].Agent, s.Interrupts[0].Kind, s.Output)
	s, err = runner.Send(ctx, s.ID, "3.12", s.Seq, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(s.Stack[len(s.Stack)-1].Agent, s.Output)
	// Output:
	// research message Research here. Which Python version?
	// main Main agent: found 3 APIs for 3.12
}

// A handoff replaces the agent; the new one keeps the conversation and
// answers the user from then on.
func Example_handoff() {
	ctx := context.Background()
	model := &scripted.Model{Scripts: map[string][]scripted.Reply{
		"triage":  {{ToolCalls: []scripted.Call{{Name: "transfer_to_billing", Arguments: `{}`}}}},
		"billing": {{Text: "Billing here. Which invoice?"}, {Text: "Refund for {{.Input}} is on its way."}},
	}}
	runner, err := cairn.NewRunner([]*cairn.Agent{
		{Name: "triage", Model: model, Tools: []*cairn.Tool{cairn.Handoff("billing", nil)}},
		{Name: "billing", Model: model},
	}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer runner.Close()
	s, err := runner.Start(ctx, "triage", "I was charged twice", nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(s.Stack[0].Agent+":", s.Output)
	s, err = runner.Send(ctx, s.ID, "INV-7", s.Seq, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(s.Stack[0].Agent+":", s.Output)
	// Output:
	// billing: Billing here. Which invoice?
	// billing: Refund for INV-7 is on its way.
}

// Cancel "top" pops an interactive agent; its parent learns the user cancelled.
func Example_cancel() {
	ctx := context.Background()
	model := &scripted.Model{Scripts: map[string][]scripted.Reply{
		"main": {
			{ToolCalls: []scripted.Call{{Name: "use_writer", Arguments: `{"input":"a blog post"}`}}},
			{Text: "OK. ({{.LastResult}})"},
		},
		"writer": {{Text: "What should the post be about?"}},
	}}
	runner, err := cairn.NewRunner([]*cairn.Agent{
		{Name: "main", Model: model, Tools: []*cairn.Tool{cairn.InteractiveAgentTool("writer", &cairn.Tool{Name: "use_writer", Description: "Writer."})}},
		{Name: "writer", Model: model},
	}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer runner.Close()
	s, err := runner.Start(ctx, "main", "write something", nil)
	if err != nil {
		log.Fatal(err)
	}
	s, err = runner.Cancel(ctx, s.ID, "top", nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(s.Output)
	// Output:
	// OK. (agent "writer" was cancelled by the user)
}
