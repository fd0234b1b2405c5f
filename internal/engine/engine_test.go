package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/session"
)

var t0 = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// requireObject is a validator: arguments must be an object whose "env", if
// present, is a string.
func requireObject(v any) error {
	m := v.(map[string]any)
	if e, ok := m["env"]; ok {
		if _, ok := e.(string); !ok {
			return errors.New("env must be a string")
		}
	}
	return nil
}

func testMachine() *Machine {
	gated := &Tool{
		Definition:    model.ToolDefinition{Name: "deploy"},
		Validate:      requireObject,
		NeedsApproval: func(a ToolArgs) (bool, error) { return a.Value.(map[string]any)["env"] != "dev", nil },
		Confirm: func(a ToolArgs) (string, error) {
			return fmt.Sprintf("Deploy to %v?", a.Value.(map[string]any)["env"]), nil
		},
	}
	auto := &Tool{Definition: model.ToolDefinition{Name: "lookup"}, Validate: requireObject}
	return New(map[string]*Agent{"main": {
		Name: "main", Instructions: "be brief",
		Tools:         map[string]*Tool{"deploy": gated, "lookup": auto},
		Definitions:   []model.ToolDefinition{gated.Definition, auto.Definition},
		MaxIterations: 5,
	}}, nil)
}

func step(t *testing.T, m *Machine, st *State, in Input) Step {
	t.Helper()
	s, err := m.Step(st, in, t0)
	if err != nil {
		t.Fatalf("step %T: %v", in, err)
	}
	return s
}

func types(evs []session.Event) string {
	var out []string
	for _, e := range evs {
		out = append(out, string(e.Type))
	}
	return strings.Join(out, " ")
}

func assistant(calls ...model.ToolCall) *model.Response {
	return &model.Response{Message: model.Message{Role: model.RoleAssistant, ToolCalls: calls}}
}

func TestApprovalFlowIsPure(t *testing.T) {
	t.Parallel()
	m := testMachine()
	st := &State{}
	var log []session.Event

	s := step(t, m, st, Start{SessionID: "s1", Agent: "main", Text: "deploy"})
	log = append(log, s.Events...)
	if types(s.Events) != "session_started user_message" || len(s.Effects) != 1 {
		t.Fatalf("start: %s, %d effects", types(s.Events), len(s.Effects))
	}
	cm := s.Effects[0].(CallModel)
	if cm.Request.System != "be brief" || len(cm.Request.Messages) != 1 || len(cm.Request.Tools) != 2 {
		t.Fatalf("model request = %+v", cm.Request)
	}

	s = step(t, m, st, ModelDone{Frame: cm.Frame, Response: assistant(
		model.ToolCall{ID: "c1", Name: "deploy", Arguments: `{"env":"prod"}`},
		model.ToolCall{ID: "c2", Name: "lookup", Arguments: `{}`},
		model.ToolCall{ID: "c3", Name: "deploy", Arguments: `{"env":"dev"}`},
	)})
	log = append(log, s.Events...)
	if got := types(s.Events); got != "model_response approval_requested tool_started tool_started" {
		t.Fatalf("after model: %s", got)
	}
	run := s.Effects[0].(RunTools)
	if len(run.Calls) != 2 || run.Calls[0].CallID != "c2" || run.Calls[1].CallID != "c3" || run.Calls[0].IdempotencyKey == run.Calls[1].IdempotencyKey {
		t.Fatalf("run = %+v", run)
	}

	s = step(t, m, st, ToolsDone{Frame: run.Frame, Results: []ToolOutcome{{CallID: "c2", Content: "found"}, {CallID: "c3", Content: "deployed dev"}}})
	log = append(log, s.Events...)
	if types(s.Events) != "tool_result tool_result turn_paused" || len(s.Effects) != 0 || st.Status != session.StatusPaused {
		t.Fatalf("after tools: %s, status %s", types(s.Events), st.Status)
	}
	ins := st.Interrupts()
	if len(ins) != 1 || ins[0].Message != "Deploy to prod?" || ins[0].Path[0].CallID != "c1" {
		t.Fatalf("interrupts = %+v", ins)
	}

	s = step(t, m, st, Decide{Seq: st.Seq, Decisions: []session.Decision{{InterruptID: ins[0].ID, Action: session.ActionApprove, Arguments: json.RawMessage(`{"env": "staging"}`)}}, Actor: session.Actor{Name: "ana"}})
	log = append(log, s.Events...)
	run = s.Effects[0].(RunTools)
	if types(s.Events) != "decision tool_started" || string(run.Calls[0].Args) != `{"env":"staging"}` {
		t.Fatalf("after decide: %s %+v", types(s.Events), run)
	}

	s = step(t, m, st, ToolsDone{Frame: run.Frame, Results: []ToolOutcome{{CallID: "c1", Content: "deployed staging"}}})
	log = append(log, s.Events...)
	cm = s.Effects[0].(CallModel)
	msgs := cm.Request.Messages
	if len(msgs) != 5 || msgs[2].ToolCallID != "c1" || msgs[3].ToolCallID != "c2" || msgs[4].ToolCallID != "c3" ||
		msgs[2].Content != `[A person approved this call with other arguments than you asked for. You asked for {"env":"prod"}; it ran with {"env":"staging"}.]`+"\ndeployed staging" {
		t.Fatalf("results not in call order: %+v", msgs)
	}

	s = step(t, m, st, ModelDone{Frame: cm.Frame, Response: &model.Response{Message: model.Message{Content: "all done"}}})
	log = append(log, s.Events...)
	if st.Status != session.StatusCompleted || st.Output != "all done" {
		t.Fatalf("final %s %q", st.Status, st.Output)
	}

	// The log alone rebuilds the same state.
	replayed, err := Replay(log)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(replayed, st) {
		t.Fatalf("replay differs:\n%+v\n%+v", replayed, st)
	}
	for i, ev := range log {
		if ev.Seq != int64(i+1) || !ev.Time.Equal(t0) {
			t.Fatalf("event %d: seq %d time %v", i, ev.Seq, ev.Time)
		}
	}
}

func TestSameInputsSameEvents(t *testing.T) {
	t.Parallel()
	run := func() []byte {
		m := testMachine()
		st := &State{}
		var all []session.Event
		s, _ := m.Step(st, Start{SessionID: "s1", Agent: "main", Text: "go"}, t0)
		all = append(all, s.Events...)
		s, _ = m.Step(st, ModelDone{Frame: "f1", Response: assistant(model.ToolCall{ID: "c1", Name: "deploy", Arguments: `{"env":"prod"}`})}, t0)
		all = append(all, s.Events...)
		b, _ := json.Marshal(all)
		return b
	}
	if a, b := run(), run(); string(a) != string(b) {
		t.Fatalf("not deterministic:\n%s\n%s", a, b)
	}
}

func TestRefusedInputsChangeNothing(t *testing.T) {
	t.Parallel()
	m := testMachine()
	st := &State{}
	step(t, m, st, Start{SessionID: "s1", Agent: "main", Text: "go"})
	step(t, m, st, ModelDone{Frame: "f1", Response: assistant(model.ToolCall{ID: "c1", Name: "deploy", Arguments: `{"env":"prod"}`})})
	id := st.Interrupts()[0].ID
	before, _ := json.Marshal(st)
	beforeSeq := st.Seq
	cases := []struct {
		in   Input
		code session.Code
	}{
		{Decide{Seq: st.Seq - 1, Decisions: []session.Decision{{InterruptID: id, Action: session.ActionApprove}}}, session.CodeConflict},
		{Decide{Seq: st.Seq, Decisions: []session.Decision{{InterruptID: "nope", Action: session.ActionApprove}}}, session.CodeUnknownInterrupt},
		{Decide{Seq: st.Seq, Decisions: []session.Decision{{InterruptID: id, Action: session.ActionApprove, Arguments: json.RawMessage(`{"env":1}`)}}}, session.CodeInvalidArguments},
		{Decide{Seq: st.Seq, Decisions: []session.Decision{{InterruptID: id, Action: session.ActionApprove, Arguments: json.RawMessage(`[]`)}}}, session.CodeInvalidArguments},
		{Decide{Seq: st.Seq, Decisions: []session.Decision{{InterruptID: id, Action: "maybe"}}}, session.CodeInvalidRequest},
		{Decide{Seq: st.Seq}, session.CodeInvalidRequest},
		{Message{Text: "hi"}, session.CodeConflict},
		{Start{SessionID: "s1", Agent: "main"}, session.CodeConflict},
	}
	for _, c := range cases {
		_, err := m.Step(st, c.in, t0)
		var e *session.Error
		if !errors.As(err, &e) || e.Code != c.code {
			t.Errorf("%+v: err %v, want code %s", c.in, err, c.code)
		}
	}
	after, _ := json.Marshal(st)
	if st.Seq != beforeSeq || string(before) != string(after) {
		t.Fatal("a refused input changed the state")
	}
	if _, err := m.Step(&State{}, Start{SessionID: "s2", Agent: "ghost"}, t0); !errors.Is(err, &session.Error{Code: session.CodeUnknownAgent}) {
		t.Fatalf("unknown agent: %v", err)
	}
}

func TestInterruptIDsUniqueAcrossTurns(t *testing.T) {
	t.Parallel()
	m := testMachine()
	st := &State{}
	step(t, m, st, Start{SessionID: "s1", Agent: "main", Text: "go"})
	step(t, m, st, ModelDone{Frame: "f1", Response: assistant(model.ToolCall{ID: "call_1", Name: "deploy", Arguments: `{"env":"prod"}`})})
	first := st.Interrupts()[0].ID
	s := step(t, m, st, Decide{Seq: st.Seq, Decisions: []session.Decision{{InterruptID: first, Action: session.ActionReject, Reason: "no"}}})
	if types(s.Events) != "decision tool_result" {
		t.Fatalf("reject: %s", types(s.Events))
	}
	step(t, m, st, ModelDone{Frame: "f1", Response: assistant(model.ToolCall{ID: "call_1", Name: "deploy", Arguments: `{"env":"prod"}`})})
	second := st.Interrupts()[0].ID
	if first == second {
		t.Fatal("a reused model call id gave the same interrupt id")
	}
}

func TestPolicyErrorFailsClosed(t *testing.T) {
	t.Parallel()
	tool := &Tool{Definition: model.ToolDefinition{Name: "pay"}, Validate: requireObject,
		NeedsApproval: func(ToolArgs) (bool, error) { return false, errors.New("no such key") }}
	m := New(map[string]*Agent{"main": {Name: "main", Tools: map[string]*Tool{"pay": tool}, MaxIterations: 3}}, nil)
	st := &State{}
	step(t, m, st, Start{SessionID: "s", Agent: "main", Text: "pay"})
	s := step(t, m, st, ModelDone{Frame: "f1", Response: assistant(model.ToolCall{ID: "c", Name: "pay", Arguments: `{}`})})
	if len(s.Effects) != 0 || st.Status != session.StatusPaused || !strings.Contains(st.Interrupts()[0].Message, "could not be evaluated") {
		t.Fatalf("policy error: %s, %+v", st.Status, st.Interrupts())
	}
}

func TestModelErrorFailsTurn(t *testing.T) {
	t.Parallel()
	m := testMachine()
	st := &State{}
	step(t, m, st, Start{SessionID: "s", Agent: "main", Text: "x"})
	step(t, m, st, ModelDone{Frame: "f1", Err: errors.New("503 overloaded")})
	if st.Status != session.StatusFailed || st.Error.Code != "model_error" || !strings.Contains(st.Error.Message, "503 overloaded") {
		t.Fatalf("%s %+v", st.Status, st.Error)
	}
	// The session takes a new message after a failed turn.
	s := step(t, m, st, Message{Text: "again"})
	if len(s.Effects) != 1 || st.Status != session.StatusRunning {
		t.Fatal("no new turn after failure")
	}
}

func TestReplayRejectsBrokenLogs(t *testing.T) {
	t.Parallel()
	good, _ := json.Marshal(SessionStarted{SessionID: "s", Agent: "main", Frame: "f1"})
	cases := map[string][]session.Event{
		"gap":          {{Seq: 2, Type: session.EventSessionStarted, Data: good}},
		"unknown type": {{Seq: 1, Type: "nope", Data: good}},
		"bad data":     {{Seq: 1, Type: session.EventSessionStarted, Data: json.RawMessage(`{"agent":`)}},
		"no frame":     {{Seq: 1, Type: session.EventUserMessage, Frame: "f9", Data: json.RawMessage(`{"text":"x"}`)}},
		"unknown call": {{Seq: 1, Type: session.EventSessionStarted, Data: good}, {Seq: 2, Type: session.EventToolResult, Frame: "f1", Data: json.RawMessage(`{"call_id":"c"}`)}},
	}
	for name, evs := range cases {
		if _, err := Replay(evs); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// FuzzReplay feeds arbitrary logs to the decoder: errors, never panics.
func FuzzReplay(f *testing.F) {
	f.Add("session_started", `{"session_id":"s","agent":"main","frame":"f1"}`, "model_response", `{"message":{"role":"assistant","tool_calls":[{"id":"c","name":"x","arguments":"{}"}]}}`)
	f.Add("session_started", `{}`, "tool_result", `{"call_id":"c"}`)
	f.Add("turn_paused", `{"interrupts":[{}]}`, "decision", `{"call_id":"c","action":"approve","new_arguments":{}}`)
	f.Fuzz(func(t *testing.T, t1, d1, t2, d2 string) {
		evs := []session.Event{{Seq: 1, Type: session.EventType(t1), Frame: "f1", Data: json.RawMessage(d1)}, {Seq: 2, Type: session.EventType(t2), Frame: "f1", Data: json.RawMessage(d2)}}
		_, _ = Replay(evs)
	})
}

func TestRecoverInDoubt(t *testing.T) {
	t.Parallel()
	for _, idempotent := range []bool{false, true} {
		t.Run(fmt.Sprintf("idempotent=%v", idempotent), func(t *testing.T) {
			m := testMachine()
			m.agents["main"].Tools["lookup"].Idempotent = idempotent
			st := &State{}
			step(t, m, st, Start{SessionID: "s", Agent: "main", Text: "x"})
			s := step(t, m, st, ModelDone{Frame: "f1", Response: assistant(model.ToolCall{ID: "c1", Name: "lookup", Arguments: `{}`})})
			if len(s.Effects) != 1 {
				t.Fatal("lookup did not start")
			}
			// The driver died here: tool_started is recorded, no result.
			s = step(t, m, st, Recover{})
			if idempotent {
				if run, ok := s.Effects[0].(RunTools); !ok || run.Calls[0].CallID != "c1" {
					t.Fatalf("idempotent call not re-run: %+v", s.Effects)
				}
				return
			}
			if len(s.Effects) != 0 || st.Status != session.StatusPaused {
				t.Fatalf("in-doubt call: effects %+v, status %s", s.Effects, st.Status)
			}
			in := st.Interrupts()[0]
			if !in.InDoubt || in.Path[0].CallID != "c1" {
				t.Fatalf("interrupt = %+v", in)
			}
			s = step(t, m, st, Decide{Seq: st.Seq, Decisions: []session.Decision{{InterruptID: in.ID, Action: session.ActionApprove}}})
			if run := s.Effects[0].(RunTools); run.Calls[0].CallID != "c1" || run.Calls[0].IdempotencyKey != in.IdempotencyKey || in.IdempotencyKey == "" {
				t.Fatalf("approve did not re-run with the key the interrupt shows (%q): %+v", in.IdempotencyKey, run)
			}
		})
	}
}

// A nested session: the log alone rebuilds the live state at every step,
// through pushes, a child's approval, a handoff, an interactive message and pops.
func TestNestedReplayEqualsLiveState(t *testing.T) {
	t.Parallel()
	obj := func(v any) error {
		_, ok := v.(map[string]any)
		return map[bool]error{true: nil, false: errors.New("object")}[ok]
	}
	gated := &Tool{Definition: model.ToolDefinition{Name: "wipe"}, Validate: obj, NeedsApproval: func(ToolArgs) (bool, error) { return true, nil }}
	m := New(map[string]*Agent{
		"top": {Name: "top", MaxIterations: 5, Tools: map[string]*Tool{
			"ask_mid":  {Definition: model.ToolDefinition{Name: "ask_mid"}, Validate: obj, Kind: ToolAgent, Target: "mid", Mode: session.ModeTool},
			"use_chat": {Definition: model.ToolDefinition{Name: "use_chat"}, Validate: obj, Kind: ToolAgent, Target: "chat", Mode: session.ModeInteractive},
		}},
		"mid":   {Name: "mid", MaxIterations: 5, Tools: map[string]*Tool{"wipe": gated, "transfer_to_other": {Definition: model.ToolDefinition{Name: "transfer_to_other"}, Validate: obj, Kind: ToolHandoff, Target: "other"}}},
		"other": {Name: "other", MaxIterations: 5, Tools: map[string]*Tool{"wipe": gated}},
		"chat":  {Name: "chat", MaxIterations: 5},
	}, nil)
	st := &State{}
	var log []session.Event
	do := func(in Input) Step {
		t.Helper()
		s := step(t, m, st, in)
		log = append(log, s.Events...)
		replayed, err := Replay(log)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(replayed, st) {
			t.Fatalf("after %T: replay differs", in)
		}
		return s
	}
	frameOf := func(s Step) string { return s.Effects[0].(CallModel).Frame }
	s := do(Start{SessionID: "s", Agent: "top", Text: "go"})
	s = do(ModelDone{Frame: frameOf(s), Response: assistant(
		model.ToolCall{ID: "a", Name: "ask_mid", Arguments: `{"input":"x"}`},
		model.ToolCall{ID: "b", Name: "use_chat", Arguments: `{"input":"hello"}`})})
	s = do(ModelDone{Frame: frameOf(s), Response: assistant(model.ToolCall{ID: "h", Name: "transfer_to_other", Arguments: `{}`})})
	s = do(ModelDone{Frame: frameOf(s), Response: assistant(model.ToolCall{ID: "w", Name: "wipe", Arguments: `{}`})})
	do(ModelDone{Frame: frameOf(s), Response: &model.Response{Message: model.Message{Content: "chat says hi"}}})
	if st.Status != session.StatusPaused || len(st.Interrupts()) != 2 || len(st.Stack()) != 2 {
		t.Fatalf("status %s, interrupts %+v, stack %d", st.Status, st.Interrupts(), len(st.Stack()))
	}
	ins := st.Interrupts()
	if ins[0].Kind != session.KindApproval || len(ins[0].Path) != 2 || ins[0].Path[1].Agent != "other" || ins[1].Kind != session.KindMessage {
		t.Fatalf("interrupts %+v", ins)
	}
	s = do(Decide{Seq: st.Seq, Decisions: []session.Decision{{InterruptID: ins[0].ID, Action: session.ActionApprove}}})
	s = do(ToolsDone{Frame: s.Effects[0].(RunTools).Frame, Results: []ToolOutcome{{CallID: "w", Content: "wiped"}}})
	s = do(ModelDone{Frame: frameOf(s), Response: &model.Response{Message: model.Message{Content: "other done"}}})
	if st.Status != session.StatusPaused || len(st.Frames) != 2 {
		t.Fatalf("after the tool child: %s, %d frames", st.Status, len(st.Frames))
	}
	s = do(Message{Text: "bye"})
	s = do(ModelDone{Frame: frameOf(s), Response: assistant(model.ToolCall{ID: "c", Name: CompleteTool, Arguments: `{"result":"chatted"}`})})
	msgs := s.Effects[0].(CallModel).Request.Messages
	if len(msgs) != 4 || msgs[2].Content != "other done" || msgs[3].Content != "chatted" {
		t.Fatalf("top sees %+v", msgs)
	}
	do(ModelDone{Frame: frameOf(s), Response: &model.Response{Message: model.Message{Content: "all done"}}})
	if st.Status != session.StatusCompleted || len(st.Frames) != 1 {
		t.Fatalf("final %s, %d frames", st.Status, len(st.Frames))
	}
}

// A snapshot taken at any point, plus the events after it, rebuilds the
// same state as replaying the whole log.
func TestSnapshotPlusTailEqualsReplay(t *testing.T) {
	t.Parallel()
	m := testMachine()
	st := &State{}
	var log []session.Event
	do := func(in Input) Step {
		s := step(t, m, st, in)
		log = append(log, s.Events...)
		return s
	}
	do(Start{SessionID: "s", Agent: "main", Text: "go"})
	do(ModelDone{Frame: "f1", Response: assistant(model.ToolCall{ID: "c1", Name: "deploy", Arguments: `{"env":"prod"}`}, model.ToolCall{ID: "c2", Name: "lookup", Arguments: `{}`})})
	do(ToolsDone{Frame: "f1", Results: []ToolOutcome{{CallID: "c2", Content: "x"}}})
	do(Decide{Seq: st.Seq, Decisions: []session.Decision{{InterruptID: st.Interrupts()[0].ID, Action: session.ActionApprove}}, Actor: session.Actor{Name: "a"}})
	do(ToolsDone{Frame: "f1", Results: []ToolOutcome{{CallID: "c1", Content: "done"}}})
	do(ModelDone{Frame: "f1", Response: &model.Response{Message: model.Message{Content: "ok"}}})
	for cut := 1; cut <= len(log); cut++ {
		head, err := Replay(log[:cut])
		if err != nil {
			t.Fatal(err)
		}
		data, err := Snapshot(head)
		if err != nil {
			t.Fatal(err)
		}
		got, _, err := Restore(data, nil, append([]session.Event(nil), log[cut:]...))
		if err != nil {
			t.Fatalf("cut %d: %v", cut, err)
		}
		want, _ := Replay(log)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("cut %d: restored state differs", cut)
		}
	}
	if _, _, err := Restore([]byte(`{"v":99,"state":{}}`), nil, nil); err == nil {
		t.Fatal("unknown snapshot version accepted")
	}
}

// A pause lists as created only the interrupts no earlier pause listed: a
// batch decided in part pauses again on the rest, which are not new, and a
// restored snapshot keeps the distinction.
func TestPauseNamesTheInterruptsItCreates(t *testing.T) {
	t.Parallel()
	m := testMachine()
	st := &State{}
	cm := step(t, m, st, Start{SessionID: "s1", Agent: "main", Text: "deploy"}).Effects[0].(CallModel)
	s := step(t, m, st, ModelDone{Frame: cm.Frame, Response: assistant(
		model.ToolCall{ID: "c1", Name: "deploy", Arguments: `{"env":"prod"}`},
		model.ToolCall{ID: "c2", Name: "deploy", Arguments: `{"env":"staging"}`},
	)})
	created := func(evs []session.Event) []string {
		t.Helper()
		last := evs[len(evs)-1]
		if last.Type != session.EventTurnPaused {
			t.Fatalf("last event %s, want turn_paused", last.Type)
		}
		var p TurnPaused
		if err := json.Unmarshal(last.Data, &p); err != nil {
			t.Fatal(err)
		}
		return p.Created
	}
	ins := st.Interrupts()
	if got := created(s.Events); len(ins) != 2 || !reflect.DeepEqual(got, []string{ins[0].ID, ins[1].ID}) {
		t.Fatalf("first pause created %v, interrupts %+v", got, ins)
	}
	snap, err := Snapshot(st)
	if err != nil {
		t.Fatal(err)
	}
	if st, _, err = Restore(snap, nil, nil); err != nil {
		t.Fatal(err)
	}
	s = step(t, m, st, Decide{Seq: st.Seq, Decisions: []session.Decision{{InterruptID: ins[0].ID, Action: session.ActionReject, Reason: "no"}}})
	if got := created(s.Events); len(got) != 0 || len(st.Interrupts()) != 1 {
		t.Fatalf("second pause created %v (want none: %s was announced before)", got, ins[1].ID)
	}
}

// Every step's Payloads are its events' data as built: the same JSON as
// the event, of the type a decode gives, so drivers can read them instead
// of decoding (and ViewChanged answers the same either way).
func TestStepPayloadsAreTheEvents(t *testing.T) {
	t.Parallel()
	m := testMachine()
	st := &State{}
	var steps []Step
	s := step(t, m, st, Start{SessionID: "s1", Agent: "main", Text: "deploy"})
	steps = append(steps, s)
	s = step(t, m, st, ModelDone{Frame: s.Effects[0].(CallModel).Frame, Response: assistant(
		model.ToolCall{ID: "c1", Name: "deploy", Arguments: `{"env":"prod"}`},
		model.ToolCall{ID: "c2", Name: "lookup", Arguments: `{}`})})
	steps = append(steps, s)
	s = step(t, m, st, ToolsDone{Frame: s.Effects[0].(RunTools).Frame, Results: []ToolOutcome{{CallID: "c2", Content: "found"}}})
	steps = append(steps, s)
	s = step(t, m, st, Decide{Seq: st.Seq, Decisions: []session.Decision{{InterruptID: st.Interrupts()[0].ID, Action: session.ActionApprove, Remember: session.RememberSession}}})
	steps = append(steps, s)
	s = step(t, m, st, ToolsDone{Frame: s.Effects[0].(RunTools).Frame, Results: []ToolOutcome{{CallID: "c1", Content: "ok"}}})
	steps = append(steps, s)
	s = step(t, m, st, ModelDone{Frame: s.Effects[0].(CallModel).Frame, Response: &model.Response{Message: model.Message{Content: "done"}}})
	steps = append(steps, s)

	seen := map[session.EventType]bool{}
	for i, s := range steps {
		if len(s.Payloads) != len(s.Events) {
			t.Fatalf("step %d: %d payloads for %d events", i, len(s.Payloads), len(s.Events))
		}
		for j, ev := range s.Events {
			seen[ev.Type] = true
			decoded, err := Payload(s.Events, nil, j)
			if err != nil {
				t.Fatal(err)
			}
			given, _ := Payload(s.Events, s.Payloads, j)
			data, err := json.Marshal(given)
			if err != nil {
				t.Fatal(err)
			}
			if reflect.TypeOf(given) != reflect.TypeOf(decoded) || string(data) != string(ev.Data) {
				t.Fatalf("step %d event %d (%s): payload %T %s, event %T %s", i, j, ev.Type, given, data, decoded, ev.Data)
			}
		}
		if ViewChanged(s.Events, s.Payloads) != ViewChanged(s.Events, nil) {
			t.Fatalf("step %d (%s): ViewChanged differs with and without payloads", i, types(s.Events))
		}
	}
	// The decision remembers: the view changes, read from the payload.
	if !ViewChanged(steps[3].Events, steps[3].Payloads) {
		t.Fatalf("a remembered decision does not change the view: %s", types(steps[3].Events))
	}
	// Given the payloads, ViewChanged does not decode: data that is not
	// JSON does not matter; without them, it fails safe (changed).
	plain := []session.Event{{Seq: 9, Type: session.EventDecision, Data: json.RawMessage(`not json`)}}
	if ViewChanged(plain, []any{&DecisionMade{Action: session.ActionApprove}}) || !ViewChanged(plain, nil) {
		t.Fatal("ViewChanged decoded an event whose payload it was given")
	}
	for _, typ := range []session.EventType{session.EventDecision, session.EventTurnPaused, session.EventTurnCompleted, session.EventToolStarted} {
		if !seen[typ] {
			t.Fatalf("the flow never made a %s event", typ)
		}
	}
}

// Approved arguments from a log that was not the engine's own (edited, or
// written by other code) are checked before the call starts: arguments that
// are not one JSON object give an error result, not a run.
func TestApprovedArgumentsFromAnotherLogAreChecked(t *testing.T) {
	t.Parallel()
	for _, args := range []string{`[1]`, `"prod"`, `null`} {
		m := testMachine()
		st := &State{}
		var log []session.Event
		s := step(t, m, st, Start{SessionID: "s1", Agent: "main", Text: "deploy"})
		log = append(log, s.Events...)
		s = step(t, m, st, ModelDone{Frame: s.Effects[0].(CallModel).Frame, Response: assistant(model.ToolCall{ID: "c1", Name: "deploy", Arguments: `{"env":"prod"}`})})
		log = append(log, s.Events...)
		// Rewrite the recorded call's arguments, as a forged log would.
		var resp map[string]any
		if err := json.Unmarshal(log[2].Data, &resp); err != nil || log[2].Type != session.EventModelResponse {
			t.Fatalf("event 3 is %s: %v", log[2].Type, err)
		}
		forged := strings.Replace(string(log[2].Data), `{\"env\":\"prod\"}`, strings.ReplaceAll(args, `"`, `\"`), 1)
		if forged == string(log[2].Data) {
			t.Fatalf("the recorded arguments were not found in %s", log[2].Data)
		}
		log[2].Data = json.RawMessage(forged)
		replayed, err := Replay(log)
		if err != nil {
			t.Fatal(err)
		}
		in := replayed.Interrupts()
		if len(in) != 1 {
			t.Fatalf("%s: interrupts %+v", args, in)
		}
		s = step(t, m, replayed, Decide{Seq: replayed.Seq, Decisions: []session.Decision{{InterruptID: in[0].ID, Action: session.ActionApprove}}})
		if types(s.Events) != "decision tool_result" || !strings.Contains(string(s.Events[1].Data), "are not a JSON object") {
			t.Fatalf("%s: approving forged arguments gave %s %s", args, types(s.Events), s.Events[len(s.Events)-1].Data)
		}
		for _, eff := range s.Effects {
			if _, ok := eff.(RunTools); ok {
				t.Fatalf("%s: the call ran: %+v", args, eff)
			}
		}
	}
}

// TestPeopleAreRecordedInTheirEvents: a message and a cancel record who
// sent them, as a decision does, and the reason names who cancelled.
func TestPeopleAreRecordedInTheirEvents(t *testing.T) {
	t.Parallel()
	m := testMachine()
	st := &State{}
	alice := session.Actor{Name: "alice", Role: "user"}
	bob := session.Actor{Name: "bob", Role: "admin"}
	var log []session.Event
	s := step(t, m, st, Start{SessionID: "s1", Agent: "main", Text: "deploy", Owner: "alice", Actor: alice})
	log = append(log, s.Events...)
	s = step(t, m, st, ModelDone{Frame: s.Effects[0].(CallModel).Frame, Response: assistant(model.ToolCall{ID: "c1", Name: "deploy", Arguments: `{"env":"prod"}`})})
	log = append(log, s.Events...)
	s = step(t, m, st, Cancel{Scope: session.CancelAll, Actor: bob})
	log = append(log, s.Events...)
	if types(s.Events) != "tool_result turn_cancelled" {
		t.Fatalf("cancel: %s", types(s.Events))
	}
	var result ToolResult
	var cancelled TurnCancelled
	if err := json.Unmarshal(s.Events[0].Data, &result); err != nil || result.Content != "cancelled by bob (admin)" {
		t.Fatalf("cancelled call's result = %+v (%v)", result, err)
	}
	if err := json.Unmarshal(s.Events[1].Data, &cancelled); err != nil || !reflect.DeepEqual(cancelled.Actor, bob) || cancelled.Reason != "cancelled by bob (admin)" {
		t.Fatalf("turn_cancelled = %s (%v)", s.Events[1].Data, err)
	}
	s = step(t, m, st, Message{Text: "again", Actor: alice})
	log = append(log, s.Events...)
	var senders []session.Actor
	for _, ev := range log {
		if ev.Type == session.EventUserMessage {
			var um UserMessage
			if err := json.Unmarshal(ev.Data, &um); err != nil {
				t.Fatal(err)
			}
			senders = append(senders, um.Actor)
		}
	}
	if !reflect.DeepEqual(senders, []session.Actor{alice, alice}) {
		t.Fatalf("user_message actors = %+v", senders)
	}
	if replayed, err := Replay(log); err != nil || !reflect.DeepEqual(replayed, st) {
		t.Fatalf("replay: %v", err)
	}
	// Without an actor (a local caller), the words stay the user's and
	// the event carries no actor field.
	st = &State{}
	s = step(t, m, st, Start{SessionID: "s2", Agent: "main", Text: "hi"})
	if strings.Contains(string(s.Events[1].Data), "actor") {
		t.Fatalf("anonymous user_message = %s", s.Events[1].Data)
	}
	if got := cancelledBy(session.Actor{}); got != "cancelled by the user" {
		t.Fatalf("anonymous cancel reason = %q", got)
	}
	if got := cancelledBy(alice); got != "cancelled by alice" {
		t.Fatalf("owner's cancel reason = %q", got)
	}
}

// A tool's Accepts, when it says yes, stands for decoding and Validate: a
// call that only needs its arguments checked is not decoded; when it says
// "not sure" Validate decides, and an approval policy always sees the
// decoded arguments.
func TestAcceptsStandsForValidate(t *testing.T) {
	t.Parallel()
	validated := 0
	validate := func(v any) error {
		validated++
		if v.(map[string]any)["env"] == "bad" {
			return errors.New("env is bad")
		}
		return nil
	}
	accepts := func(raw string) bool { return raw == `{"env":"dev"}` || raw == `{"env":"prod"}` }
	var policySaw []any
	plain := &Tool{Definition: model.ToolDefinition{Name: "lookup"}, Validate: validate, Accepts: accepts}
	gated := &Tool{Definition: model.ToolDefinition{Name: "deploy"}, Validate: validate, Accepts: accepts,
		NeedsApproval: func(a ToolArgs) (bool, error) { policySaw = append(policySaw, a.Value); return false, nil }}
	m := New(map[string]*Agent{"main": {Name: "main", Tools: map[string]*Tool{"lookup": plain, "deploy": gated},
		Definitions: []model.ToolDefinition{plain.Definition, gated.Definition}, MaxIterations: 5}}, nil)
	st := &State{}
	s := step(t, m, st, Start{SessionID: "s1", Agent: "main", Text: "go"})
	s = step(t, m, st, ModelDone{Frame: s.Effects[0].(CallModel).Frame, Response: assistant(
		model.ToolCall{ID: "c1", Name: "lookup", Arguments: `{"env":"dev"}`},  // accepted: not decoded, not validated
		model.ToolCall{ID: "c2", Name: "lookup", Arguments: `{"env":"bad"}`},  // not sure: validated, refused
		model.ToolCall{ID: "c3", Name: "lookup", Arguments: `{"env":"test"}`}, // not sure: validated, passes
		model.ToolCall{ID: "c4", Name: "deploy", Arguments: `{"env":"prod"}`}, // accepted, but the policy reads it
	)})
	if got := types(s.Events); got != "model_response tool_started tool_result tool_started tool_started" {
		t.Fatalf("events: %s", got)
	}
	if validated != 2 {
		t.Fatalf("Validate ran %d times, want 2 (the calls Accepts was not sure of)", validated)
	}
	if len(policySaw) != 1 || !reflect.DeepEqual(policySaw[0], map[string]any{"env": "prod"}) {
		t.Fatalf("the approval policy saw %v, want the decoded arguments", policySaw)
	}
}
