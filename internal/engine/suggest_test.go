package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/session"
)

// An unknown agent or a misspelt action is refused with the closest name
// (issue 30: the HTTP API's errors go one step further).
func TestRefusalsSuggestTheClosestName(t *testing.T) {
	t.Parallel()
	m := testMachine()
	st := &State{}
	_, err := m.Step(st, Start{SessionID: "s1", Agent: "mian", Text: "go"}, t0)
	if !errors.Is(err, session.ErrUnknownAgent) || !strings.Contains(err.Error(), `did you mean "main"?`) {
		t.Fatalf("unknown agent: %v", err)
	}
	step(t, m, st, Start{SessionID: "s1", Agent: "main", Text: "go"})
	step(t, m, st, ModelDone{Frame: "f1", Response: assistant(model.ToolCall{ID: "c1", Name: "deploy", Arguments: `{"env":"prod"}`})})
	in := st.Interrupts()[0]
	_, err = m.Step(st, Decide{Seq: st.Seq, Decisions: []session.Decision{{InterruptID: in.ID, Action: "aprove"}}}, t0)
	if !errors.Is(err, session.ErrInvalidRequest) || !strings.Contains(err.Error(), `did you mean "approve"?`) {
		t.Fatalf("a misspelt action: %v", err)
	}
}
