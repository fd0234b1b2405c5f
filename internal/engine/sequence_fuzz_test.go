package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/session"
)

// program reads fuzz bytes as a sequence of small choices; past the end it
// answers 0, so every input is a finite, valid program.
type program struct {
	data []byte
	pos  int
}

func (p *program) pick(n int) int {
	if n <= 1 || p.pos >= len(p.data) {
		p.pos++
		return 0
	}
	b := p.data[p.pos]
	p.pos++
	return int(b) % n
}

func (p *program) done() bool { return p.pos >= len(p.data) }

// fuzzMachine has every kind of tool: gated with a TTL, automatic,
// idempotent, a predicate and a template that panic, an agent tool, an
// interactive agent and a handoff.
func fuzzMachine() *Machine {
	obj := func(v any) error {
		if _, ok := v.(map[string]any); !ok {
			return errors.New("not an object")
		}
		return nil
	}
	always := func(ToolArgs) (bool, error) { return true, nil }
	tools := map[string]*Tool{
		"deploy": {Definition: model.ToolDefinition{Name: "deploy"}, Validate: obj, NeedsApproval: always, ApprovalTTL: time.Minute,
			Confirm: func(a ToolArgs) (string, error) { return fmt.Sprintf("deploy %v?", a.Value), nil }},
		"lookup": {Definition: model.ToolDefinition{Name: "lookup"}, Validate: obj},
		"charge": {Definition: model.ToolDefinition{Name: "charge"}, Validate: obj, Idempotent: true},
		"wobbly": {Definition: model.ToolDefinition{Name: "wobbly"}, Validate: obj,
			NeedsApproval: func(a ToolArgs) (bool, error) {
				if len(a.Value.(map[string]any)) > 0 {
					panic("predicate bug")
				}
				return false, nil
			},
			Confirm: func(ToolArgs) (string, error) { panic("template bug") }},
		"picky":             {Definition: model.ToolDefinition{Name: "picky"}, Validate: func(any) error { panic("validator bug") }},
		"ask_mid":           {Definition: model.ToolDefinition{Name: "ask_mid"}, Validate: obj, Kind: ToolAgent, Target: "mid", Mode: session.ModeTool},
		"use_chat":          {Definition: model.ToolDefinition{Name: "use_chat"}, Validate: obj, Kind: ToolAgent, Target: "chat", Mode: session.ModeInteractive},
		"transfer_to_other": {Definition: model.ToolDefinition{Name: "transfer_to_other"}, Validate: obj, Kind: ToolHandoff, Target: "other"},
		"transfer_gated":    {Definition: model.ToolDefinition{Name: "transfer_gated"}, Validate: obj, Kind: ToolHandoff, Target: "other", NeedsApproval: always},
	}
	agent := func(name string, names ...string) *Agent {
		a := &Agent{Name: name, MaxIterations: 4, Tools: map[string]*Tool{}}
		for _, n := range names {
			a.Tools[n] = tools[n]
			a.Definitions = append(a.Definitions, tools[n].Definition)
		}
		return a
	}
	return New(map[string]*Agent{
		"main":  agent("main", "deploy", "lookup", "charge", "wobbly", "picky", "ask_mid", "use_chat"),
		"mid":   agent("mid", "deploy", "lookup", "transfer_to_other", "transfer_gated"),
		"other": agent("other", "charge", "deploy"),
		"chat":  agent("chat", "deploy", "lookup", "transfer_gated"),
	}, nil)
}

var (
	fuzzIDs   = []string{"", "a", "a", "b", "call_1", "call_2"}
	fuzzNames = []string{"deploy", "lookup", "charge", "wobbly", "picky", "ask_mid", "use_chat", "transfer_to_other", "transfer_gated", CompleteTool, "nope", ""}
	fuzzArgs  = []string{"", " ", "{}", `{"env":"prod"}`, `{ "env" : "dev" }`, `{"input":"x"}`, `{"result":"r"}`, "not json", "[]", "null", `{"a":`}
)

func (p *program) reply() *model.Response {
	msg := model.Message{Content: []string{"", "done", "hi"}[p.pick(3)]}
	for range p.pick(4) {
		msg.ToolCalls = append(msg.ToolCalls, model.ToolCall{ID: fuzzIDs[p.pick(len(fuzzIDs))],
			Name: fuzzNames[p.pick(len(fuzzNames))], Arguments: fuzzArgs[p.pick(len(fuzzArgs))]})
	}
	return &model.Response{Message: msg}
}

// next chooses the next input: the answer to the pending effect, or (when
// the session waits or its driver "crashed") something from outside.
func (p *program) next(st *State, pending Effect) Input {
	if pending != nil && p.pick(8) != 0 {
		switch eff := pending.(type) {
		case CallModel:
			if p.pick(6) == 0 {
				return ModelDone{Frame: eff.Frame, Err: errors.New("503")}
			}
			if p.pick(10) == 0 {
				return ModelDone{Frame: eff.Frame} // no response and no error
			}
			return ModelDone{Frame: eff.Frame, Response: p.reply()}
		case RunTools:
			var res []ToolOutcome
			for _, c := range eff.Calls {
				switch p.pick(4) {
				case 0:
					res = append(res, ToolOutcome{CallID: c.CallID, Question: "which?"})
				case 1:
					res = append(res, ToolOutcome{CallID: c.CallID, Content: "boom", IsError: true})
				default:
					res = append(res, ToolOutcome{CallID: c.CallID, Content: "ok " + string(c.Args)})
				}
			}
			return ToolsDone{Frame: eff.Frame, Results: res}
		}
	}
	switch p.pick(8) {
	case 6:
		return Interrupted{Reason: "shutdown"}
	case 0, 1:
		var ds []session.Decision
		for _, in := range st.Interrupts() {
			if p.pick(3) == 0 {
				continue
			}
			d := session.Decision{InterruptID: in.ID, Action: []session.Action{session.ActionApprove, session.ActionReject, session.ActionAnswer}[p.pick(3)], Text: "yes"}
			if p.pick(3) == 0 {
				d.Arguments = json.RawMessage([]string{`{"env":"staging"}`, `[]`, `{}`}[p.pick(3)])
			}
			if p.pick(4) == 0 {
				d.Remember = session.RememberSession
			}
			ds = append(ds, d)
		}
		if p.pick(8) == 0 {
			ds = append(ds, session.Decision{InterruptID: "int_unknown", Action: session.ActionApprove})
		}
		seq := st.Seq
		if p.pick(8) == 0 {
			seq--
		}
		return Decide{Seq: seq, Decisions: ds, Actor: session.Actor{Name: "fuzz"}}
	case 2:
		return Message{Text: "more"}
	case 3:
		return Cancel{Scope: []session.CancelScope{session.CancelTop, session.CancelAll}[p.pick(2)]}
	case 4:
		return Expire{}
	case 5:
		return Recover{}
	default:
		return ModelDone{Frame: "f1", Response: p.reply()} // unexpected: refused
	}
}

// FuzzInputSequences drives the engine with arbitrary input sequences (model
// replies with repeated and empty call ids and odd arguments, decisions,
// messages, cancels, expiries, crashes and restarts) and checks after every
// step: no panic, a bounded number of events, the log replays to exactly the
// live state, and a snapshot at any earlier point plus the tail does too.
func FuzzInputSequences(f *testing.F) {
	f.Add([]byte{1, 3, 1, 0, 2, 3, 0, 3, 1, 1, 5, 0})
	f.Add([]byte{2, 1, 2, 1, 1, 2, 1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1})
	f.Add([]byte{7, 7, 3, 2, 0, 0, 2, 0, 0, 2, 1, 9, 7, 6, 5, 4, 3, 2, 1})
	f.Add([]byte{1, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10})
	f.Fuzz(func(t *testing.T, data []byte) {
		kept := runProgram(t, &program{data: data}, false)
		recycled := runProgram(t, &program{data: data}, true)
		if !reflect.DeepEqual(kept, recycled) {
			t.Fatalf("recycling steps changed the log:\nkept:     %+v\nrecycled: %+v", kept, recycled)
		}
	})
}

// runProgram runs p and returns the log it recorded; with recycle, every
// step goes back to the machine (Machine.Recycle) once read, as the
// runtime does.
func runProgram(t *testing.T, p *program, recycle bool) []session.Event {
	t.Helper()
	m := fuzzMachine()
	done := func(s *Step) {
		if recycle {
			m.Recycle(s)
		}
	}
	st := &State{}
	now := t0
	var log []session.Event
	chunks := map[string][]byte{}
	s, err := m.Step(st, Start{SessionID: "s", Agent: "main", Text: "go"}, now)
	if err != nil {
		t.Fatal(err)
	}
	sameBytesAsStdlib(t, s)
	log = append(log, s.Events...)
	var pending Effect
	if len(s.Effects) > 0 {
		pending = s.Effects[0]
	}
	done(&s)
	for i := 0; i < 200 && !p.done(); i++ {
		in := p.next(st, pending)
		if _, ok := in.(Expire); ok {
			now = now.Add(2 * time.Minute)
		}
		s, err := m.Step(st, in, now)
		var e *session.Error
		if errors.As(err, &e) && e.Code == session.CodeInternal || err != nil && !errors.As(err, &e) {
			t.Fatalf("step %d (%T): %v", i, in, err)
		}
		if err != nil {
			continue // refused: nothing changed (checked below against the log)
		}
		if len(s.Events) > 1000 { // far more than any honest step; the engine bound is maxEventsPerStep
			t.Fatalf("step %d (%T) recorded %d events", i, in, len(s.Events))
		}
		sameBytesAsStdlib(t, s)
		log = append(log, s.Events...)
		pending = nil
		if len(s.Effects) > 0 {
			pending = s.Effects[0]
		}
		done(&s)
		replayed, err := Replay(log)
		if err != nil {
			t.Fatalf("step %d (%T): replay: %v", i, in, err)
		}
		if !sameState(replayed, st) {
			t.Fatalf("step %d (%T): replay differs from the live state\nlive:   %+v\nreplay: %+v", i, in, st, replayed)
		}
		cut := 1 + p.pick(len(log))
		if cut > len(log) {
			cut = len(log)
		}
		head, err := Replay(log[:cut])
		if err != nil {
			t.Fatal(err)
		}
		restored := snapshotRoundTrip(t, p, chunks, head, log[cut:])
		if !sameState(restored, st) {
			t.Fatalf("step %d (%T): snapshot at seq %d + tail differs from the live state", i, in, cut)
		}
		if live := snapshotRoundTrip(t, p, chunks, st, nil); !sameState(live, st) {
			t.Fatalf("step %d (%T): snapshot of the live state differs from it", i, in)
		}
		if p.pick(4) == 0 {
			st = restored // a restart: go on from the rebuilt state
		}
	}
	return log
}

// sameBytesAsStdlib: each event's data is what encoding/json writes for its
// payload (emit encodes with a faster encoder, which must not change a
// byte of the log).
func sameBytesAsStdlib(t *testing.T, s Step) {
	t.Helper()
	for i, ev := range s.Events {
		want, err := json.Marshal(s.Payloads[i])
		if err != nil {
			t.Fatalf("%s: encoding/json: %v", ev.Type, err)
		}
		if !bytes.Equal(ev.Data, want) {
			t.Fatalf("%s: data differs from encoding/json\n got: %s\nwant: %s", ev.Type, ev.Data, want)
		}
	}
}

// A reply with two calls sharing one id and one call with an empty id: every
// call is handled (here: each pauses for approval), the step ends, the ids
// recorded are unique, and approving everything runs each call once.
func TestDuplicateAndEmptyCallIDs(t *testing.T) {
	t.Parallel()
	m := testMachine()
	st := &State{}
	step(t, m, st, Start{SessionID: "s", Agent: "main", Text: "go"})
	s := step(t, m, st, ModelDone{Frame: "f1", Response: assistant(
		model.ToolCall{ID: "x", Name: "deploy", Arguments: `{"env":"a"}`},
		model.ToolCall{ID: "x", Name: "deploy", Arguments: `{"env":"b"}`},
		model.ToolCall{ID: "", Name: "deploy", Arguments: `{"env":"c"}`})})
	if got := types(s.Events); got != "model_response approval_requested approval_requested approval_requested turn_paused" {
		t.Fatalf("events: %s", got)
	}
	var rec ModelResponse
	if err := json.Unmarshal(s.Events[0].Data, &rec); err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, c := range rec.Message.ToolCalls {
		ids[c.ID] = true
	}
	if len(ids) != 3 || !ids["x"] {
		t.Fatalf("recorded ids %v: want 3 unique, keeping the first x", rec.Message.ToolCalls)
	}
	var ds []session.Decision
	for _, in := range st.Interrupts() {
		ds = append(ds, session.Decision{InterruptID: in.ID, Action: session.ActionApprove})
	}
	s = step(t, m, st, Decide{Seq: st.Seq, Decisions: ds})
	run := s.Effects[0].(RunTools)
	if len(run.Calls) != 3 {
		t.Fatalf("runs %+v", run.Calls)
	}
	var res []ToolOutcome
	for _, c := range run.Calls {
		res = append(res, ToolOutcome{CallID: c.CallID, Content: string(c.Args)})
	}
	s = step(t, m, st, ToolsDone{Frame: "f1", Results: res})
	if _, ok := s.Effects[0].(CallModel); !ok || len(st.Root().Messages) != 5 {
		t.Fatalf("the model is not called with 3 results: %+v", s.Effects)
	}
}

// "" arguments are recorded as {} and run as {}, live and after a replay.
func TestEmptyArgumentsRecordedCanonical(t *testing.T) {
	t.Parallel()
	m := testMachine()
	st := &State{}
	var log []session.Event
	log = append(log, step(t, m, st, Start{SessionID: "s", Agent: "main", Text: "go"}).Events...)
	s := step(t, m, st, ModelDone{Frame: "f1", Response: assistant(model.ToolCall{ID: "c", Name: "deploy", Arguments: ""})})
	log = append(log, s.Events...)
	replayed, err := Replay(log)
	if err != nil || !reflect.DeepEqual(replayed, st) {
		t.Fatalf("replay differs: %v", err)
	}
	in := replayed.Interrupts()[0]
	if string(in.Arguments) != "{}" {
		t.Fatalf("interrupt arguments %s", in.Arguments)
	}
	s = step(t, m, replayed, Decide{Seq: replayed.Seq, Decisions: []session.Decision{{InterruptID: in.ID, Action: session.ActionApprove}}})
	if args := string(s.Effects[0].(RunTools).Calls[0].Args); args != "{}" {
		t.Fatalf("runs with %q", args)
	}
}

// Callbacks that panic fail closed: a predicate means approval is needed, a
// template shows the raw arguments, a validator rejects the call.
func TestPanickingCallbacksFailClosed(t *testing.T) {
	t.Parallel()
	m := fuzzMachine()
	st := &State{}
	step(t, m, st, Start{SessionID: "s", Agent: "main", Text: "go"})
	s := step(t, m, st, ModelDone{Frame: "f1", Response: assistant(
		model.ToolCall{ID: "w", Name: "wobbly", Arguments: `{"x":1}`},
		model.ToolCall{ID: "p", Name: "picky", Arguments: `{}`})})
	if got := types(s.Events); got != "model_response approval_requested tool_result turn_paused" {
		t.Fatalf("events: %s", got)
	}
	in := st.Interrupts()[0]
	if in.Message != `Run tool wobbly with arguments {"x":1}? (approval policy could not be evaluated: the approval policy panicked: predicate bug)` {
		t.Fatalf("message %q", in.Message)
	}
	var res ToolResult
	if err := json.Unmarshal(s.Events[2].Data, &res); err != nil {
		t.Fatal(err)
	}
	if !res.IsError || res.Content != `the arguments of tool "picky" do not match its schema: the validator panicked: validator bug` {
		t.Fatalf("result %+v", res)
	}
}

// snapshotRoundTrip snapshots st, whole or in chunks of a size p picks
// (kept in chunks, as a store keeps them across snapshots), and restores it
// with tail.
func snapshotRoundTrip(t *testing.T, p *program, chunks map[string][]byte, st *State, tail []session.Event) *State {
	t.Helper()
	var root []byte
	if p.pick(2) == 0 {
		var err error
		if root, err = Snapshot(st); err != nil {
			t.Fatal(err)
		}
	} else {
		parts, err := snapshotParts(st, 1+p.pick(3))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range parts.Chunks {
			chunks[c.Key] = c.Data
		}
		root = parts.Root
	}
	read := func(keys []string) ([][]byte, error) {
		out := make([][]byte, len(keys))
		for i, k := range keys {
			if out[i] = chunks[k]; out[i] == nil {
				return nil, fmt.Errorf("chunk %s was never written", k)
			}
		}
		return out, nil
	}
	restored, _, err := Restore(root, read, append([]session.Event(nil), tail...))
	if err != nil {
		t.Fatalf("restore: %v", err)
	}
	return restored
}

// sameState is reflect.DeepEqual but for the snapshot bookkeeping of which
// chunks were written (a restored state knows them, a replayed one not).
func sameState(a, b *State) bool {
	hide := func(st *State) []sealed {
		var saved []sealed
		for _, f := range st.Frames {
			saved = append(saved, f.sealed)
			f.sealed = sealed{}
		}
		return saved
	}
	put := func(st *State, saved []sealed) {
		for i, f := range st.Frames {
			f.sealed = saved[i]
		}
	}
	sa, sb := hide(a), hide(b)
	defer put(a, sa)
	defer put(b, sb)
	return reflect.DeepEqual(a, b)
}
