package cairn_test

import (
	"context"
	"fmt"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/model/scripted"
)

// A tool that needs approval pauses the session; approving runs it once and
// the model sees its result.
func Example_approve() {
	ctx := context.Background()
	deleteFile := cairn.NewTool("delete_file", "Delete a file.",
		func(ctx context.Context, a struct {
			Filename string `json:"filename"`
		}) (string, error) {
			return "Deleted " + a.Filename, nil
		},
		cairn.RequireApproval(),
		cairn.WithConfirmation("Delete file '{{.filename}}'? This cannot be undone."))
	model := scripted.New(
		scripted.Reply{ToolCalls: []scripted.Call{{Name: "delete_file", Arguments: `{"filename":"test.txt"}`}}},
		scripted.Reply{Text: "Done: {{.LastResult}}"},
	)
	runner, _ := cairn.NewRunner(cairn.RunnerOptions{Agents: []*cairn.Agent{{Name: "files", Model: model, Tools: []*cairn.Tool{deleteFile}}}})

	s, _ := runner.Start(ctx, "files", "Delete the file named 'test.txt'", nil)
	fmt.Println(s.Status)
	fmt.Println(s.Interrupts[0].Message)

	s, _ = runner.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove}})
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
	deploy := cairn.NewTool("deploy", "Deploy.",
		func(ctx context.Context, a struct {
			Env string `json:"env"`
		}) (string, error) {
			panic("never runs")
		},
		cairn.RequireApprovalIf(func(a struct {
			Env string `json:"env"`
		}) bool {
			return a.Env == "production"
		}))
	model := scripted.New(
		scripted.Reply{ToolCalls: []scripted.Call{{Name: "deploy", Arguments: `{"env":"production"}`}}},
		scripted.Reply{Text: "{{.LastResult}}"},
	)
	runner, _ := cairn.NewRunner(cairn.RunnerOptions{Agents: []*cairn.Agent{{Name: "ops", Model: model, Tools: []*cairn.Tool{deploy}}}})
	s, _ := runner.Start(ctx, "ops", "Ship it", nil)
	s, _ = runner.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionReject, Reason: "not on a Friday"}})
	fmt.Println(s.Output)
	// Output:
	// The user rejected this tool call: not on a Friday
}
