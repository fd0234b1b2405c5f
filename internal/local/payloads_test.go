package local

import (
	"encoding/json"
	"testing"

	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/webhook"
)

// A commit's webhook notes are read from the step's payloads, not decoded
// from its events: here the events' data is not even JSON, and only a step
// without payloads (a mirrored one) is decoded, and fails.
func TestCommitNotesReadPayloads(t *testing.T) {
	in := session.Interrupt{ID: "int_1", Kind: session.KindApproval, Tool: "deploy"}
	step := engine.Step{
		Events: []session.Event{
			{Seq: 4, Type: session.EventDecision, Data: json.RawMessage(`not json`)},
			{Seq: 5, Type: session.EventTurnPaused, Data: json.RawMessage(`not json`)},
			{Seq: 6, Type: session.EventTurnCompleted, Data: json.RawMessage(`not json`)},
		},
		Payloads: []any{
			&engine.DecisionMade{InterruptID: "int_0", Kind: session.KindApproval, Action: session.ActionApprove},
			&engine.TurnPaused{Interrupts: []session.Interrupt{in}, Created: []string{"int_1"}},
			&engine.TurnCompleted{Output: "done"},
		},
	}
	want := []webhook.EventType{webhook.InterruptDecided, webhook.InterruptCreated, webhook.SessionCompleted}
	for i := range step.Events {
		ns, err := notes(step, i)
		if err != nil || len(ns) != 1 || ns[0].typ != want[i] {
			t.Fatalf("event %d: notes %+v, %v; want one %s", i, ns, err, want[i])
		}
	}
	if ns, _ := notes(step, 1); ns[0].about != "int_1" || ns[0].linked == nil {
		t.Fatalf("interrupt note %+v", ns[0])
	}
	if _, err := notes(engine.Step{Events: step.Events}, 0); err == nil {
		t.Fatal("a step without payloads was not decoded from its events")
	}
}
