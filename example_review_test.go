package cairn_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/model"
)

// A structured answer a person reviews before it goes: the first answer is
// sent back with a reason (the model sees it and answers again), an edit
// that breaks the schema is refused, and an edit that fits goes out.
func Example_reviewedAnswer() {
	type Triage struct {
		Priority string `json:"priority" enum:"low,high"`
		Summary  string `json:"summary"`
	}
	calls := 0
	m := model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		calls++
		answer := `{"priority":"low","summary":"disk at 80%"}`
		if calls > 1 { // it was sent back
			answer = `{"priority":"high","summary":"disk at 80% and rising"}`
		}
		return &model.Response{Message: model.Message{Content: answer}}, nil
	})
	schema, err := cairn.SchemaFor[Triage]()
	if err != nil {
		log.Fatal(err)
	}
	runner, err := cairn.NewRunner([]*cairn.Agent{{Name: "triage", Model: m, OutputSchema: schema,
		Review: cairn.Always()}}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer runner.Close()
	ctx := context.Background()
	decide := func(s *cairn.Session, who string, d cairn.Decision) (*cairn.Session, error) {
		d.InterruptID = s.Interrupts[0].ID
		return runner.Resume(ctx, s.ID, s.Seq, []cairn.Decision{d}, &cairn.TurnOptions{Actor: cairn.Actor{Name: who}})
	}

	s, err := runner.Start(ctx, "triage", "disk alert", nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(s.Interrupts[0].Kind, string(s.Interrupts[0].Output))
	s, err = decide(s, "ana", cairn.Decision{Action: cairn.ActionReject, Reason: "it keeps rising"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(s.Interrupts[0].Output))
	_, err = decide(s, "bob", cairn.Decision{Action: cairn.ActionEdit, Output: json.RawMessage(`{"priority":"urgent","summary":"x"}`)})
	fmt.Println(cairn.ErrorCode(err))
	s, err = decide(s, "bob", cairn.Decision{Action: cairn.ActionEdit, Output: json.RawMessage(`{"priority":"high","summary":"page on-call"}`)})
	if err != nil {
		log.Fatal(err)
	}
	t, err := cairn.OutputAs[Triage](s)
	fmt.Println(s.Status, t.Summary, err)
	// Output:
	// review {"priority":"low","summary":"disk at 80%"}
	// {"priority":"high","summary":"disk at 80% and rising"}
	// invalid_output
	// completed page on-call <nil>
}
