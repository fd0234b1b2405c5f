package local_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/internal/testkit/check"
	"github.com/cairnhq/cairn/model/scripted"
)

// A rejection remembered for the session refuses later calls of the tool
// by the same agent with the same reason, without asking; it is listed in
// Session.Remembered and survives a replay of the log.
func TestRememberedRejection(t *testing.T) {
	ctx := context.Background()
	var runs counter
	r := newRunner(t, deleteScript(), deleteTool(&runs))

	s, err := r.Start(ctx, "main", "Delete test.txt", nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err = r.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionReject,
		Reason: "never delete files here", Remember: cairn.RememberSession}}, nil)
	if err != nil || s.Status != cairn.StatusCompleted {
		t.Fatalf("reject: %v %+v", err, s)
	}
	want := cairn.Remembered{Agent: "main", Tool: "delete_file", Action: cairn.ActionReject, Reason: "never delete files here"}
	if len(s.Remembered) != 1 || s.Remembered[0] != want {
		t.Fatalf("remembered = %+v", s.Remembered)
	}

	// The next turn calls the tool again: refused at once, no pause.
	s, err = r.Send(ctx, s.ID, "Delete test.txt again", s.Seq, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != cairn.StatusCompleted || len(s.Interrupts) != 0 || len(runs.runs()) != 0 {
		t.Fatalf("second call: %s, %d interrupts, runs %v", s.Status, len(s.Interrupts), runs.runs())
	}
	if !strings.Contains(s.Output, "The user rejected this tool call: never delete files here") || !strings.Contains(s.Output, "for the rest of the session") {
		t.Fatalf("the model was not told the remembered reason: %q", s.Output)
	}

	evs := check.Events(t)(r.Events(ctx, s.ID, 0))
	st, err := engine.Replay(evs)
	if err != nil || len(st.Remembered) != 1 || st.Remembered[0] != want {
		t.Fatalf("replay: %v %+v", err, st)
	}
	stored := check.NoErr(t)(r.Session(ctx, s.ID))
	if len(stored.Remembered) != 1 || stored.Remembered[0] != want {
		t.Fatalf("stored remembered = %+v", stored.Remembered)
	}
}

// Only approvals and rejections can be remembered; an answer cannot.
func TestAnAnswerCannotBeRemembered(t *testing.T) {
	ctx := context.Background()
	ask := cairn.NewTool(&cairn.Tool{Name: "deploy", Description: "Deploy."}, func(ctx context.Context, a struct{}) (string, error) {
		return cairn.Ask(ctx, "Which environment?")
	})
	m := scripted.New(scripted.Reply{ToolCalls: []scripted.Call{{Name: "deploy", Arguments: `{}`}}}, scripted.Reply{Text: "{{.LastResult}}"})
	r := newRunner(t, m, ask)
	s := check.NoErr(t)(r.Start(ctx, "main", "deploy", nil))
	_, err := r.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionAnswer, Text: "staging", Remember: cairn.RememberSession}}, nil)
	if !errors.Is(err, cairn.ErrInvalidRequest) || !strings.Contains(err.Error(), "only an approval or a rejection") {
		t.Fatalf("err = %v", err)
	}
}

// A handoff can wait for approval like any tool: the transfer pauses with
// its confirmation; approving hands over, rejecting tells the model.
func TestHandoffNeedsApproval(t *testing.T) {
	ctx := context.Background()
	model := &scripted.Model{Scripts: map[string][]scripted.Reply{
		"triage":  {{ToolCalls: []scripted.Call{{Name: "transfer_to_billing", Arguments: `{}`}}}, {Text: "Triage again: {{.LastResult}}"}},
		"billing": {{Text: "Billing here."}},
	}}
	r := runnerFor(t, []*cairn.Agent{
		{Name: "triage", Model: model, Tools: []*cairn.Tool{cairn.Handoff("billing", &cairn.Tool{Approval: cairn.Always()})}},
		{Name: "billing", Model: model},
	}, nil)

	s := check.NoErr(t)(r.Start(ctx, "triage", "I was charged twice", nil))
	if s.Status != cairn.StatusPaused || len(s.Interrupts) != 1 || s.Interrupts[0].Tool != "transfer_to_billing" ||
		s.Interrupts[0].Message != "Hand the conversation over to the billing agent?" || s.Stack[0].Agent != "triage" {
		t.Fatalf("start: %+v", s)
	}
	ok := check.NoErr(t)(r.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove}}, nil))
	if ok.Status != cairn.StatusCompleted || ok.Stack[0].Agent != "billing" || ok.Output != "Billing here." {
		t.Fatalf("approve: %+v", ok)
	}

	s = check.NoErr(t)(r.Start(ctx, "triage", "I was charged twice", nil))
	no := check.NoErr(t)(r.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionReject, Reason: "stay with triage"}}, nil))
	if no.Status != cairn.StatusCompleted || no.Stack[0].Agent != "triage" || no.Output != "Triage again: The user rejected this tool call: stay with triage" {
		t.Fatalf("reject: %+v", no)
	}
}
