package a2aagent_test

import (
	"context"
	"fmt"
	"net/http/httptest"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/a2a/a2aagent"
	"github.com/cairnhq/cairn/a2a/a2aserver"
	"github.com/cairnhq/cairn/model/scripted"
)

// Call a remote agent over A2A as a sub-agent: its question becomes an
// interrupt of this session, with the remote task; the answer given here
// goes back to it, and its answer is the call's result.
func ExampleTool() {
	ctx := context.Background()
	// The remote agent (here another Cairn, served over A2A) asks a question.
	ask := cairn.NewTool(&cairn.Tool{Name: "ask_date", Description: "Ask for a date."}, func(ctx context.Context, a struct{}) (string, error) {
		return cairn.Ask(ctx, "Which date?")
	})
	remote, _ := cairn.NewRunner([]*cairn.Agent{{Name: "booking", Tools: []*cairn.Tool{ask},
		Model: scripted.New(scripted.Reply{ToolCalls: []scripted.Call{{Name: "ask_date", Arguments: `{}`}}}, scripted.Reply{Text: "booked for {{.LastResult}}"})}}, nil)
	defer remote.Close()
	h, _ := a2aserver.New(remote, "booking", nil)
	srv := httptest.NewServer(h)
	defer srv.Close()

	// This side: agent main calls it as the tool partner.
	partner, _ := a2aagent.Tool(a2aagent.Options{Name: "partner", URL: srv.URL})
	runner, _ := cairn.NewRunner([]*cairn.Agent{{Name: "main", Tools: []*cairn.Tool{partner},
		Model: scripted.New(scripted.Reply{ToolCalls: []scripted.Call{{Name: "partner", Arguments: `{"input":"a table for two"}`}}}, scripted.Reply{Text: "{{.LastResult}}"})}}, nil)
	defer runner.Close()
	s, _ := runner.Start(ctx, "main", "book dinner", nil)
	in := s.Interrupts[0]
	fmt.Println(in.Kind, in.Question, in.Remote != nil)

	s, _ = runner.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: in.ID, Action: cairn.ActionAnswer, Text: "May 3"}}, nil)
	fmt.Println(s.Output)
	// Output:
	// input Which date? true
	// booked for May 3
}
