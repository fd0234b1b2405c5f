package engine

import (
	"encoding/json"
	"testing"

	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/session"
)

// previewMachine: agent "ops" whose "deploy" asks and has a preview, and
// whose "log" asks and has none; deploy needs two approvers.
func previewMachine() *Machine {
	always := func(ToolArgs) (bool, error) { return true, nil }
	two := func(ToolArgs) (*session.Approvers, error) { return &session.Approvers{Count: 2}, nil }
	return New(map[string]*Agent{
		"ops": {Name: "ops", Tools: map[string]*Tool{
			"deploy": {Definition: model.ToolDefinition{Name: "deploy"}, NeedsApproval: always, Preview: true, Approvers: two},
			"log":    {Definition: model.ToolDefinition{Name: "log"}, NeedsApproval: always},
		}},
	}, nil)
}

// The dry runs come before the pause, which records them with its
// interrupts; a crash in between computes them again (the log has no
// pause yet); an edit of the arguments computes it again for them.
func TestPreviewsBeforeThePause(t *testing.T) {
	t.Parallel()
	m := previewMachine()
	st := &State{}
	var log []session.Event
	s := step(t, m, st, Start{SessionID: "p1", Agent: "ops", Text: "ship"})
	log = append(log, s.Events...)
	call := s.Effects[0].(CallModel)
	s = step(t, m, st, ModelDone{Frame: call.Frame, Response: &model.Response{Message: model.Message{ToolCalls: []model.ToolCall{
		{ID: "c1", Name: "deploy", Arguments: `{"env":"prod"}`}, {ID: "c2", Name: "log", Arguments: `{}`}}}}})
	log = append(log, s.Events...)
	runs, ok := s.Effects[0].(RunPreviews)
	if got := types(s.Events); got != "model_response approval_requested approval_requested" || !ok || len(runs.Previews) != 1 ||
		runs.Previews[0].Tool != "deploy" || string(runs.Previews[0].Args) != `{"env":"prod"}` || st.Status != session.StatusRunning {
		t.Fatalf("before the pause: %s, %+v, %s", got, s.Effects, st.Status)
	}

	// A crash now: the log replays to a running session, and a takeover
	// asks for the same dry runs again.
	again, err := Replay(log)
	if err != nil {
		t.Fatal(err)
	}
	s2 := step(t, m, again, Recover{})
	if r2, ok := s2.Effects[0].(RunPreviews); !ok || len(r2.Previews) != 1 || r2.Previews[0].InterruptID != runs.Previews[0].InterruptID {
		t.Fatalf("recover: %s %+v", types(s2.Events), s2.Effects)
	}

	// A result for an interrupt with no preview due is refused.
	if _, err := m.Step(st, PreviewsDone{Results: []PreviewOutcome{{InterruptID: "int_forged", Preview: session.TextPreview(session.PreviewText, "x")}}}, t0); session.CodeOf(err) != session.CodeConflict {
		t.Fatalf("a forged preview: %v", err)
	}
	s = step(t, m, st, PreviewsDone{Results: []PreviewOutcome{{InterruptID: runs.Previews[0].InterruptID,
		Preview: session.Preview{Format: session.PreviewDiff, Content: json.RawMessage(`"-v1\n+v2\u202e"`)}}}})
	log = append(log, s.Events...)
	if got := types(s.Events); got != "turn_paused" || st.Status != session.StatusPaused {
		t.Fatalf("after the previews: %s %s", got, st.Status)
	}
	ins := st.Interrupts()
	if p := ins[0].Preview; p == nil || p.Text() != "-v1\n+v2⟨U+202E⟩" || ins[1].Preview != nil {
		t.Fatalf("the pause's interrupts: %+v / %+v", ins[0].Preview, ins[1].Preview)
	}
	replayed, err := Replay(log)
	if err != nil || replayed.Interrupts()[0].Preview == nil || replayed.Interrupts()[0].Preview.Text() != ins[0].Preview.Text() {
		t.Fatalf("replayed: %v %+v", err, replayed.Interrupts())
	}

	// One of two approvers edits the arguments: the session stays paused
	// for the second, and the edit records the preview of the new
	// arguments, which the driver computed first (EditPreviews).
	ana := session.Actor{Name: "ana", Role: "approver", Via: session.ViaToken}
	edit := Decide{Seq: st.Seq, Actor: ana, Decisions: []session.Decision{
		{InterruptID: ins[0].ID, Action: session.ActionApprove, Arguments: json.RawMessage(`{"env":"staging"}`)}}}
	due := m.EditPreviews(st, edit)
	if len(due) != 1 || string(due[0].Args) != `{"env":"staging"}` || len(m.EditPreviews(st, Decide{Seq: st.Seq, Actor: ana, Decisions: []session.Decision{
		{InterruptID: ins[0].ID, Action: session.ActionApprove, Arguments: json.RawMessage(`"not an object"`)}}})) != 0 {
		t.Fatalf("edit previews: %+v", due)
	}
	edit.Previews = map[string]session.Preview{ins[0].ID: session.TextPreview(session.PreviewDiff, "-v1\n+v2 on staging")}
	s = step(t, m, st, edit)
	log = append(log, s.Events...)
	if p := st.Interrupts()[0].Preview; types(s.Events) != "approval_added" || len(s.Effects) != 0 || p == nil || p.Text() != "-v1\n+v2 on staging" {
		t.Fatalf("after an edit: %s, %+v", types(s.Events), p)
	}
	if replayed, err := Replay(log); err != nil || replayed.Interrupts()[0].Preview.Text() != "-v1\n+v2 on staging" {
		t.Fatalf("replayed after the edit: %v", err)
	}
	// Without one (a driver that did not compute it), the edit says so
	// rather than show the old arguments' preview.
	edit.Seq, edit.Previews, edit.Actor = st.Seq, nil, session.Actor{Name: "bo", Role: "approver", Via: session.ViaToken}
	edit.Decisions[0].Arguments = json.RawMessage(`{"env":"dev"}`)
	step(t, m, st, edit)
	if p := st.Interrupts()[0].Preview; p == nil || p.Error == "" {
		t.Fatalf("an edit with no preview computed: %+v", p)
	}
}
