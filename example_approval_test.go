package cairn_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/model/scripted"
)

type fileArgs struct {
	Filename string `json:"filename"`
}

// A tool that needs approval pauses the session; approving runs it once and
// the model sees its result.
func Example_approve() {
	ctx := context.Background()
	deleteFile := cairn.NewTool(&cairn.Tool{
		Name:         "delete_file",
		Description:  "Delete a file.",
		Approval:     cairn.Always(),
		Confirmation: "Delete file '{{.filename}}'? This cannot be undone.",
	}, func(ctx context.Context, a fileArgs) (string, error) {
		return "Deleted " + a.Filename, nil
	})
	model := scripted.New(
		scripted.Reply{ToolCalls: []scripted.Call{{Name: "delete_file", Arguments: `{"filename":"test.txt"}`}}},
		scripted.Reply{Text: "Done: {{.LastResult}}"},
	)
	runner, err := cairn.NewRunner([]*cairn.Agent{{Name: "files", Model: model, Tools: []*cairn.Tool{deleteFile}}}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer runner.Close()

	s, err := runner.Start(ctx, "files", "Delete the file named 'test.txt'", nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(s.Status)
	fmt.Println(s.Interrupts[0].Message)

	approve := []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove}}
	s, err = runner.Resume(ctx, s.ID, s.Seq, approve, &cairn.TurnOptions{Actor: cairn.Actor{Name: "ana", Role: "approver"}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(s.Status)
	fmt.Println(s.Output)
	// Output:
	// paused
	// Delete file 'test.txt'? This cannot be undone.
	// completed
	// Done: Deleted test.txt
}

type deployArgs struct {
	Env string `json:"env" jsonschema:"where to deploy" enum:"staging,production"`
}

// Rejecting gives the model the reason as the tool's (error) result. The
// policy asks only for production deploys.
func Example_reject() {
	ctx := context.Background()
	deploy := cairn.NewTool(&cairn.Tool{
		Name:        "deploy",
		Description: "Deploy.",
		Approval:    cairn.ApprovalIf(func(a deployArgs) bool { return a.Env == "production" }),
	}, func(ctx context.Context, a deployArgs) (string, error) {
		panic("never runs")
	})
	model := scripted.New(
		scripted.Reply{ToolCalls: []scripted.Call{{Name: "deploy", Arguments: `{"env":"production"}`}}},
		scripted.Reply{Text: "{{.LastResult}}"},
	)
	runner, err := cairn.NewRunner([]*cairn.Agent{{Name: "ops", Model: model, Tools: []*cairn.Tool{deploy}}}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer runner.Close()
	s, err := runner.Start(ctx, "ops", "Ship it", nil)
	if err != nil {
		log.Fatal(err)
	}
	reject := []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionReject, Reason: "not on a Friday"}}
	s, err = runner.Resume(ctx, s.ID, s.Seq, reject, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(s.Output)
	// Output:
	// The user rejected this tool call: not on a Friday
}

// Approving with new arguments: they are validated against the tool's
// schema (here an enum), then the call runs with them, and the model is told
// which arguments ran.
func Example_modify() {
	ctx := context.Background()
	deploy := cairn.NewTool(&cairn.Tool{Name: "deploy", Description: "Deploy.", Approval: cairn.Always()},
		func(ctx context.Context, a deployArgs) (string, error) { return "deployed to " + a.Env, nil })
	model := scripted.New(
		scripted.Reply{ToolCalls: []scripted.Call{{Name: "deploy", Arguments: `{"env":"production"}`}}},
		scripted.Reply{Text: "{{.LastResult}}"},
	)
	runner, err := cairn.NewRunner([]*cairn.Agent{{Name: "ops", Model: model, Tools: []*cairn.Tool{deploy}}}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer runner.Close()
	s, err := runner.Start(ctx, "ops", "Ship it", nil)
	if err != nil {
		log.Fatal(err)
	}
	id := s.Interrupts[0].ID

	_, err = runner.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: id, Action: cairn.ActionApprove, Arguments: json.RawMessage(`{"env":"moon"}`)}}, nil)
	fmt.Println(cairn.ErrorCode(err))

	s, err = runner.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: id, Action: cairn.ActionApprove, Arguments: json.RawMessage(`{"env":"staging"}`)}}, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(s.Output)
	// Output:
	// invalid_arguments
	// [A person approved this call with other arguments than you asked for. You asked for {"env":"production"}; it ran with {"env":"staging"}.]
	// deployed to staging
}

// A tool asks the user a question (Ask); the answer resumes it.
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
	runner, err := cairn.NewRunner([]*cairn.Agent{{Name: "ops", Model: model, Tools: []*cairn.Tool{deploy}}}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer runner.Close()
	s, err := runner.Start(ctx, "ops", "deploy", nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(s.Interrupts[0].Kind, s.Interrupts[0].Question)
	answer := []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionAnswer, Text: "staging"}}
	s, err = runner.Resume(ctx, s.ID, s.Seq, answer, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(s.Output)
	// Output:
	// input Which environment?
	// deployed to staging
}
