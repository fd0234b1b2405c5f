package cairn_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/model/scripted"
)

// dropTool asks before dropping a table, and previews how many rows would go.
func dropTool() *cairn.Tool {
	return cairn.NewTool(&cairn.Tool{
		Name:     "drop_table",
		Approval: cairn.Always(),
		Preview: func(ctx context.Context, args json.RawMessage) (cairn.Preview, error) {
			var a struct{ Name string }
			if err := json.Unmarshal(args, &a); err != nil {
				return cairn.Preview{}, err
			}
			return cairn.JSONPreview(map[string]any{"table": a.Name, "rows": 1042})
		},
	}, func(ctx context.Context, a struct {
		Name string `json:"name"`
	}) (string, error) {
		return "dropped " + a.Name, nil
	})
}

// A tool's preview is computed before the pause and shown with the call:
// what approving it would do.
func ExampleTool_preview() {
	ctx := context.Background()
	model := scripted.New(scripted.Reply{ToolCalls: []scripted.Call{{Name: "drop_table", Arguments: `{"name":"orders_2019"}`}}})
	runner, err := cairn.NewRunner([]*cairn.Agent{{Name: "dba", Model: model, Tools: []*cairn.Tool{dropTool()}}}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer runner.Close()
	s, err := runner.Start(ctx, "dba", "Drop the 2019 orders", nil)
	if err != nil {
		log.Fatal(err)
	}
	p := s.Interrupts[0].Preview
	fmt.Println(p.Format, string(p.Content))
	// Output: json {"rows":1042,"table":"orders_2019"}
}

// Many calls decided in one request; then a fork of a decided session at
// its pause, decided the other way.
func ExampleRunner_DecideMany() {
	ctx := context.Background()
	model := scripted.New(
		scripted.Reply{ToolCalls: []scripted.Call{{Name: "drop_table", Arguments: `{"name":"tmp"}`}}},
		scripted.Reply{Text: "{{.LastResult}}"})
	runner, err := cairn.NewRunner([]*cairn.Agent{{Name: "dba", Model: model, Tools: []*cairn.Tool{dropTool()}}}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer runner.Close()
	for range 3 {
		if _, err := runner.Start(ctx, "dba", "Drop tmp", nil); err != nil {
			log.Fatal(err)
		}
	}
	out, err := runner.DecideMany(ctx, cairn.BulkRequest{Select: &cairn.Selector{Tool: "drop_table"}, Action: cairn.ActionApprove}, nil)
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range out.Results {
		fmt.Println(r.Status, r.SessionStatus)
	}

	// Back to the first session's pause, to reject it this time.
	first := out.Results[0].SessionID
	events, _ := runner.Events(ctx, first, 0)
	var paused int64
	for _, ev := range events {
		if ev.Type == cairn.EventTurnPaused {
			paused = ev.Seq
		}
	}
	fork, err := runner.Fork(ctx, first, paused, nil)
	if err != nil {
		log.Fatal(err)
	}
	fork, err = runner.Resume(ctx, fork.ID, fork.Seq, []cairn.Decision{{InterruptID: fork.Interrupts[0].ID, Action: cairn.ActionReject, Reason: "keep it"}}, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(fork.Status, fork.Output)
	// Output:
	// 200 completed
	// 200 completed
	// 200 completed
	// completed The user rejected this tool call: keep it
}
