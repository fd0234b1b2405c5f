package engine

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/session"
)

// directMachine has a direct agent "gate" whose tool "write" always asks,
// and an agent "approvals" whose calls are the caller's own (any name).
func directMachine() *Machine {
	always := func(ToolArgs) (bool, error) { return true, nil }
	write := &Tool{Definition: model.ToolDefinition{Name: "write"}, NeedsApproval: always}
	read := &Tool{Definition: model.ToolDefinition{Name: "read"}}
	caller := &Tool{NeedsApproval: always, Kind: ToolClient}
	// A schema check that needs a "path" string when the schema says so.
	check := func(schema json.RawMessage, v any) error {
		if strings.Contains(string(schema), `"path"`) {
			if _, ok := v.(map[string]any)["path"].(string); !ok {
				return errors.New("path is required")
			}
		}
		return nil
	}
	return New(map[string]*Agent{
		"gate":      {Name: "gate", Direct: true, Tools: map[string]*Tool{"write": write, "read": read}},
		"approvals": {Name: "approvals", Direct: true, CallerTool: caller},
		"main":      {Name: "main", Tools: map[string]*Tool{}},
	}, &Options{CheckAnswer: check})
}

func TestDirectSessionMakesItsOneCall(t *testing.T) {
	t.Parallel()
	m := directMachine()
	st := &State{}
	call := &session.CallRequest{ID: "call", Tool: "write", Arguments: json.RawMessage(`{"path": "a.txt", "text": "hi"}`), Message: "Write a.txt?"}
	var log []session.Event
	s := step(t, m, st, Start{SessionID: "g1", Agent: "gate", Text: "gateway call", Call: call, Actor: session.Actor{Name: "bot"}})
	if got := types(s.Events); got != "session_started user_message approval_requested turn_paused" || len(s.Effects) != 0 {
		t.Fatalf("start: %s, %d effects", got, len(s.Effects))
	}
	log = append(log, s.Events...)
	ins := st.Interrupts()
	if len(ins) != 1 || ins[0].Message != "Write a.txt?" || ins[0].Tool != "write" || string(ins[0].Arguments) != `{"path":"a.txt","text":"hi"}` {
		t.Fatalf("interrupts = %+v", ins)
	}
	s = step(t, m, st, Decide{Seq: st.Seq, Decisions: []session.Decision{{InterruptID: ins[0].ID, Action: session.ActionApprove, Arguments: json.RawMessage(`{"path":"a.txt","text":"edited"}`)}}})
	log = append(log, s.Events...)
	run := s.Effects[0].(RunTools)
	if got := types(s.Events); got != "decision tool_started" || string(run.Calls[0].Args) != `{"path":"a.txt","text":"edited"}` {
		t.Fatalf("after approve: %s %+v", got, run)
	}
	s = step(t, m, st, ToolsDone{Frame: run.Frame, Results: []ToolOutcome{{CallID: "call", Content: "wrote 6 bytes"}}})
	log = append(log, s.Events...)
	if got := types(s.Events); got != "tool_result turn_completed" || len(s.Effects) != 0 {
		t.Fatalf("after the tool: %s, %d effects", got, len(s.Effects))
	}
	// The edit is not told to anyone as to a model: the result is the tool's.
	if st.Status != session.StatusCompleted || st.Output != "wrote 6 bytes" {
		t.Fatalf("status %s, output %q", st.Status, st.Output)
	}
	if _, err := m.Step(st, Message{Text: "again"}, t0); session.CodeOf(err) != session.CodeConflict || !strings.Contains(err.Error(), "takes no messages") {
		t.Fatalf("a message to a direct session: %v", err)
	}
	// The log replays to the same state.
	replayed, err := Replay(log)
	if err != nil || replayed.Output != st.Output || replayed.Status != st.Status || replayed.Request == nil || replayed.Request.Message != "Write a.txt?" {
		t.Fatalf("replayed: %v %+v", err, replayed)
	}
}

func TestDirectSessionRejectedExpiredAndInDoubt(t *testing.T) {
	t.Parallel()
	m := directMachine()
	exp := t0.Add(time.Hour)

	t.Run("rejected", func(t *testing.T) {
		st := &State{}
		step(t, m, st, Start{SessionID: "r", Agent: "gate", Call: &session.CallRequest{ID: "call", Tool: "write", Arguments: json.RawMessage(`{}`)}})
		in := st.Interrupts()[0]
		s := step(t, m, st, Decide{Seq: st.Seq, Decisions: []session.Decision{{InterruptID: in.ID, Action: session.ActionReject, Reason: "not today"}}})
		if got := types(s.Events); got != "decision tool_result turn_completed" || !strings.Contains(st.Output, "not today") {
			t.Fatalf("%s, output %q", got, st.Output)
		}
	})
	t.Run("expired at the request's time", func(t *testing.T) {
		st := &State{}
		step(t, m, st, Start{SessionID: "e", Agent: "approvals", Call: &session.CallRequest{ID: "call", Tool: "refund", Arguments: json.RawMessage(`{}`), ExpiresAt: &exp}})
		in := st.Interrupts()[0]
		if in.ExpiresAt == nil || !in.ExpiresAt.Equal(exp) || in.Kind != session.KindApproval {
			t.Fatalf("interrupt = %+v", in)
		}
		if _, err := m.Step(st, Expire{}, exp.Add(-time.Second)); !errors.Is(err, session.ErrConflict) {
			t.Fatalf("early expiry: %v", err)
		}
		s, err := m.Step(st, Expire{}, exp.Add(time.Second))
		if err != nil || st.Status != session.StatusCompleted || !strings.Contains(st.Output, "expired") {
			t.Fatalf("expiry: %v %s %s %q", err, types(s.Events), st.Status, st.Output)
		}
	})
	t.Run("the caller's own function waits for its result", func(t *testing.T) {
		st := &State{}
		step(t, m, st, Start{SessionID: "c", Agent: "approvals", Call: &session.CallRequest{ID: "call", Tool: "refund", Arguments: json.RawMessage(`{"path":"x"}`), Schema: json.RawMessage(`{"required":["path"]}`)}})
		in := st.Interrupts()[0]
		// An edit off the request's schema is refused and changes nothing.
		seq := st.Seq
		if _, err := m.Step(st, Decide{Seq: st.Seq, Decisions: []session.Decision{{InterruptID: in.ID, Action: session.ActionApprove, Arguments: json.RawMessage(`{"path":1}`)}}}, t0); session.CodeOf(err) != session.CodeInvalidArguments || st.Seq != seq {
			t.Fatalf("an edit off the schema: %v (seq %d → %d)", err, seq, st.Seq)
		}
		s := step(t, m, st, Decide{Seq: st.Seq, Decisions: []session.Decision{{InterruptID: in.ID, Action: session.ActionApprove}}})
		wait := st.Interrupts()
		if got := types(s.Events); got != "decision client_requested turn_paused" || len(wait) != 1 || wait[0].Kind != session.KindClient {
			t.Fatalf("after approve: %s %+v", got, wait)
		}
		s = step(t, m, st, Decide{Seq: st.Seq, Decisions: []session.Decision{{InterruptID: wait[0].ID, Action: session.ActionComplete, Output: json.RawMessage(`{"refunded":true}`)}}})
		if st.Status != session.StatusCompleted || st.Output != `{"refunded":true}` {
			t.Fatalf("after the result: %s %s %q", types(s.Events), st.Status, st.Output)
		}
	})
	t.Run("a request off its schema fails without asking", func(t *testing.T) {
		st := &State{}
		step(t, m, st, Start{SessionID: "s", Agent: "approvals", Call: &session.CallRequest{ID: "call", Tool: "refund", Arguments: json.RawMessage(`{}`), Schema: json.RawMessage(`{"required":["path"]}`)}})
		if st.Status != session.StatusCompleted || !strings.Contains(st.Output, "path is required") {
			t.Fatalf("%s %q", st.Status, st.Output)
		}
	})
	t.Run("in doubt after a crash", func(t *testing.T) {
		st := &State{}
		step(t, m, st, Start{SessionID: "d", Agent: "gate", Call: &session.CallRequest{ID: "call", Tool: "write", Arguments: json.RawMessage(`{}`)}})
		step(t, m, st, Decide{Seq: st.Seq, Decisions: []session.Decision{{InterruptID: st.Interrupts()[0].ID, Action: session.ActionApprove}}})
		s := step(t, m, st, Recover{})
		ins := st.Interrupts()
		if st.Status != session.StatusPaused || len(ins) != 1 || !ins[0].InDoubt || len(s.Effects) != 0 {
			t.Fatalf("recover: %s %s %+v", types(s.Events), st.Status, ins)
		}
	})
	t.Run("a read passes", func(t *testing.T) {
		st := &State{}
		s := step(t, m, st, Start{SessionID: "p", Agent: "gate", Call: &session.CallRequest{ID: "call", Tool: "read", Arguments: json.RawMessage(`{}`)}})
		if got := types(s.Events); got != "session_started user_message tool_started" {
			t.Fatalf("read: %s", got)
		}
	})
	t.Run("refused starts", func(t *testing.T) {
		for _, in := range []Start{
			{SessionID: "x", Agent: "gate", Text: "hello"},
			{SessionID: "x", Agent: "main", Text: "hi", Call: &session.CallRequest{ID: "call", Tool: "write", Arguments: json.RawMessage(`{}`)}},
			{SessionID: "x", Agent: "gate", Call: &session.CallRequest{ID: "call", Tool: "write", Arguments: json.RawMessage(`[1]`)}},
		} {
			st := &State{}
			if _, err := m.Step(st, in, t0); err == nil || st.Seq != 0 {
				t.Errorf("%+v: %v, seq %d", in, err, st.Seq)
			}
		}
	})
}
