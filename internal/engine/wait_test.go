package engine

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/session"
)

// waitMachine has a tool that finishes later (pipeline, with a deadline
// and outcome), a client tool with a result schema (locate), and the
// gated deploy of testMachine.
func waitMachine(onTimeout session.OnTimeout) *Machine {
	m := testMachine()
	a := m.agents["main"]
	pipeline := &Tool{Definition: model.ToolDefinition{Name: "pipeline"}, Validate: requireObject,
		Wait: &Wait{Timeout: 30 * time.Minute, OnTimeout: onTimeout, Retries: 1}}
	locate := &Tool{Definition: model.ToolDefinition{Name: "locate"}, Validate: requireObject, Kind: ToolClient,
		ResultSchema: json.RawMessage(`{"type":"object","required":["city"]}`),
		CheckResult: func(v any) error {
			if m, ok := v.(map[string]any); !ok || m["city"] == nil {
				return errors.New("at /: missing property \"city\"")
			}
			return nil
		}}
	a.Tools["pipeline"], a.Tools["locate"] = pipeline, locate
	a.Definitions = append(a.Definitions, pipeline.Definition, locate.Definition)
	return m
}

// A batch of a client call, a gated call and a call that finishes later:
// the client call and the approval wait at once, the long call starts and
// then waits on its system, and each is completed once, in any order.
func TestBatchOfClientGatedAndLongCallsCompletesEachOnce(t *testing.T) {
	t.Parallel()
	orders := [][]session.Kind{
		{session.KindClient, session.KindApproval, session.KindExternal},
		{session.KindExternal, session.KindClient, session.KindApproval},
		{session.KindApproval, session.KindExternal, session.KindClient},
	}
	for _, order := range orders {
		t.Run(string(order[0])+"-"+string(order[1])+"-"+string(order[2]), func(t *testing.T) {
			m := waitMachine(session.OnTimeoutError)
			st := &State{}
			var log []session.Event
			do := func(in Input) Step {
				t.Helper()
				s := step(t, m, st, in)
				log = append(log, s.Events...)
				return s
			}
			do(Start{SessionID: "s1", Agent: "main", Text: "go"})
			s := do(ModelDone{Frame: "f1", Response: assistant(
				model.ToolCall{ID: "c1", Name: "locate", Arguments: `{}`},
				model.ToolCall{ID: "c2", Name: "deploy", Arguments: `{"env":"prod"}`},
				model.ToolCall{ID: "c3", Name: "pipeline", Arguments: `{"ref":"main"}`},
			)})
			if got := types(s.Events); got != "model_response client_requested approval_requested tool_started" {
				t.Fatalf("after the model: %s", got)
			}
			run := s.Effects[0].(RunTools)
			wantID := WaitID(run.Calls[0].IdempotencyKey, 0, 0)
			s = do(ToolsDone{Frame: "f1", Results: []ToolOutcome{{CallID: "c3", Pending: &Pending{Handle: "run-7", Message: "pipeline 7 started"}}}})
			if got := types(s.Events); got != "external_requested turn_paused" || st.Status != session.StatusPaused {
				t.Fatalf("after the long call started: %s %s", got, st.Status)
			}
			byKind := map[session.Kind]session.Interrupt{}
			for _, in := range st.Interrupts() {
				byKind[in.Kind] = in
			}
			ext := byKind[session.KindExternal]
			if ext.ID != wantID || ext.Handle != "run-7" || ext.Message != "pipeline 7 started" || ext.ExpiresAt == nil || !ext.ExpiresAt.Equal(t0.Add(30*time.Minute)) {
				t.Fatalf("the external wait: %+v (want id %s)", ext, wantID)
			}
			if cl := byKind[session.KindClient]; string(cl.ResultSchema) == "" || cl.Tool != "locate" {
				t.Fatalf("the client call: %+v", cl)
			}
			if !reflect.DeepEqual(ext.Actions(), []session.Action{session.ActionComplete, session.ActionFail}) || ext.Kind.ForPerson() {
				t.Fatalf("an external wait's actions: %v", ext.Actions())
			}
			decision := map[session.Kind]session.Decision{
				session.KindClient:   {InterruptID: byKind[session.KindClient].ID, Action: session.ActionComplete, Output: json.RawMessage(`{"city": "Lyon"}`)},
				session.KindApproval: {InterruptID: byKind[session.KindApproval].ID, Action: session.ActionApprove},
				session.KindExternal: {InterruptID: ext.ID, Action: session.ActionComplete, Output: json.RawMessage(`"build 7 passed"`)},
			}
			for i, k := range order {
				d := decision[k]
				s = do(Decide{Seq: st.Seq, Decisions: []session.Decision{d}, Actor: session.Actor{Name: "ci"}})
				if k == session.KindApproval {
					s = do(ToolsDone{Frame: "f1", Results: []ToolOutcome{{CallID: "c2", Content: "deployed"}}})
				}
				if i < 2 && st.Status != session.StatusPaused {
					t.Fatalf("after %s: %s, want paused", k, st.Status)
				}
				// The same decision again: the call no longer waits.
				if _, err := m.Step(st, Decide{Seq: st.Seq, Decisions: []session.Decision{d}}, t0); !errors.Is(err, session.ErrConflict) && !errors.Is(err, session.ErrUnknownInterrupt) {
					t.Fatalf("a second %s: %v", k, err)
				}
			}
			cm := s.Effects[0].(CallModel)
			var results []string
			for _, msg := range cm.Request.Messages {
				if msg.Role == model.RoleTool {
					results = append(results, msg.ToolCallID+"="+msg.Content)
				}
			}
			if got := strings.Join(results, "; "); got != `c1={"city":"Lyon"}; c2=deployed; c3=build 7 passed` {
				t.Fatalf("results: %s", got)
			}
			replayed, err := Replay(log)
			if err != nil || !reflect.DeepEqual(replayed, st) {
				t.Fatalf("replay: %v", err)
			}
		})
	}
}

// A completion is checked before anything is recorded: the result schema
// (invalid_output, naming the field), a missing output, an action that
// does not end a waiting call.
func TestCompletionsAreCheckedFirst(t *testing.T) {
	t.Parallel()
	m := waitMachine(session.OnTimeoutError)
	st := &State{}
	step(t, m, st, Start{SessionID: "s1", Agent: "main", Text: "go"})
	step(t, m, st, ModelDone{Frame: "f1", Response: assistant(model.ToolCall{ID: "c1", Name: "locate", Arguments: `{}`})})
	in := st.Interrupts()[0]
	for _, c := range []struct {
		d    session.Decision
		code session.Code
		want string
	}{
		{session.Decision{InterruptID: in.ID, Action: session.ActionComplete, Output: json.RawMessage(`{"town":"Lyon"}`)}, session.CodeInvalidOutput, `"city"`},
		{session.Decision{InterruptID: in.ID, Action: session.ActionComplete}, session.CodeInvalidRequest, "output is required"},
		{session.Decision{InterruptID: in.ID, Action: session.ActionApprove}, session.CodeInvalidRequest, "use complete or fail"},
		{session.Decision{InterruptID: in.ID, Action: session.ActionFail, Output: json.RawMessage(`1`)}, session.CodeInvalidRequest, "no output"},
	} {
		seq := st.Seq
		_, err := m.Step(st, Decide{Seq: seq, Decisions: []session.Decision{c.d}}, t0)
		var e *session.Error
		if !errors.As(err, &e) || e.Code != c.code || !strings.Contains(e.Message, c.want) || st.Seq != seq {
			t.Fatalf("%+v: %v", c.d, err)
		}
	}
	s := step(t, m, st, Decide{Seq: st.Seq, Decisions: []session.Decision{{InterruptID: in.ID, Action: session.ActionFail, Reason: "the user denied location access"}}})
	cm := s.Effects[0].(CallModel)
	last := cm.Request.Messages[len(cm.Request.Messages)-1]
	if !last.IsError || last.Content != "the client could not run tool locate: the user denied location access" {
		t.Fatalf("the failure the model reads: %+v", last)
	}
}

// A deadline that passes has the tool's outcome, once: an error result;
// a retry with a new wait id, bounded, then an error; or an approval that
// asks whether to start the tool again.
func TestMissedDeadlineOutcomes(t *testing.T) {
	t.Parallel()
	start := func(t *testing.T, outcome session.OnTimeout) (*Machine, *State, *[]session.Event) {
		m := waitMachine(outcome)
		st := &State{}
		var log []session.Event
		log = append(log, step(t, m, st, Start{SessionID: "s1", Agent: "main", Text: "go"}).Events...)
		log = append(log, step(t, m, st, ModelDone{Frame: "f1", Response: assistant(model.ToolCall{ID: "c1", Name: "pipeline", Arguments: `{}`})}).Events...)
		log = append(log, step(t, m, st, ToolsDone{Frame: "f1", Results: []ToolOutcome{{CallID: "c1", Pending: &Pending{}}}}).Events...)
		return m, st, &log
	}
	late := t0.Add(31 * time.Minute)
	expire := func(t *testing.T, m *Machine, st *State, log *[]session.Event) Step {
		t.Helper()
		if _, err := m.Step(st, Expire{}, t0.Add(29*time.Minute)); !errors.Is(err, session.ErrConflict) {
			t.Fatalf("before the deadline: %v", err)
		}
		s, err := m.Step(st, Expire{}, late)
		if err != nil {
			t.Fatal(err)
		}
		*log = append(*log, s.Events...)
		if _, err := m.Step(st, Expire{}, late); !errors.Is(err, session.ErrConflict) {
			t.Fatalf("a second expiry: %v", err)
		}
		return s
	}

	t.Run("error", func(t *testing.T) {
		m, st, log := start(t, session.OnTimeoutError)
		s := expire(t, m, st, log)
		cm := s.Effects[0].(CallModel)
		last := cm.Request.Messages[len(cm.Request.Messages)-1]
		if types(s.Events) != "wait_expired tool_result" || !last.IsError || !strings.Contains(last.Content, "did not finish by") {
			t.Fatalf("%s %+v", types(s.Events), last)
		}
	})
	t.Run("retry", func(t *testing.T) {
		m, st, log := start(t, session.OnTimeoutRetry)
		first := st.Interrupts()[0].ID
		s := expire(t, m, st, log)
		run := s.Effects[0].(RunTools)
		if types(s.Events) != "wait_expired tool_started" || run.Calls[0].Waits != 1 {
			t.Fatalf("%s %+v", types(s.Events), run)
		}
		*log = append(*log, step(t, m, st, ToolsDone{Frame: "f1", Results: []ToolOutcome{{CallID: "c1", Pending: &Pending{}}}}).Events...)
		second := st.Interrupts()[0].ID
		if second == first || second != WaitID(run.Calls[0].IdempotencyKey, 1, 0) {
			t.Fatalf("the retry waits under %s (first %s)", second, first)
		}
		// A completion of the first wait (its callback URL) no longer applies.
		if _, err := m.Step(st, Decide{Seq: st.Seq, Decisions: []session.Decision{{InterruptID: first, Action: session.ActionComplete, Output: json.RawMessage(`"x"`)}}}, late); !errors.Is(err, session.ErrUnknownInterrupt) {
			t.Fatalf("the first wait completed after its retry: %v", err)
		}
		// Retries: 1, so the second deadline ends the call.
		s, err := m.Step(st, Expire{}, late.Add(31*time.Minute))
		if err != nil || types(s.Events) != "wait_expired tool_result" {
			t.Fatalf("the second deadline: %v %s", err, types(s.Events))
		}
		*log = append(*log, s.Events...)
		if replayed, err := Replay(*log); err != nil || !reflect.DeepEqual(replayed, st) {
			t.Fatalf("replay: %v", err)
		}
	})
	t.Run("ask", func(t *testing.T) {
		m, st, log := start(t, session.OnTimeoutAsk)
		s := expire(t, m, st, log)
		ins := st.Interrupts()
		if types(s.Events) != "wait_expired approval_requested turn_paused" || len(ins) != 1 || ins[0].Kind != session.KindApproval ||
			!strings.Contains(ins[0].Message, "did not finish in time (30m0s)") {
			t.Fatalf("%s %+v", types(s.Events), ins)
		}
		s = step(t, m, st, Decide{Seq: st.Seq, Decisions: []session.Decision{{InterruptID: ins[0].ID, Action: session.ActionApprove}}})
		if run := s.Effects[0].(RunTools); types(s.Events) != "decision tool_started" || run.Calls[0].Waits != 1 {
			t.Fatalf("approved: %s", types(s.Events))
		}
	})
}

// A call whose process stopped while it ran, after it handed out its
// callback URL, is in doubt after Recover; the result sent to that URL
// (its run's wait id) settles it once, as does complete or fail on the
// in-doubt interrupt itself. A person's approval to run it again gives the
// new run another wait id: the first run's late result completes nothing.
func TestCompletionSettlesACallInDoubt(t *testing.T) {
	t.Parallel()
	start := func(t *testing.T) (*Machine, *State, RunTools) {
		m := waitMachine(session.OnTimeoutError)
		st := &State{}
		step(t, m, st, Start{SessionID: "s1", Nonce: "n1", Agent: "main", Text: "go"})
		s := step(t, m, st, ModelDone{Frame: "f1", Response: assistant(model.ToolCall{ID: "c1", Name: "pipeline", Arguments: `{"ref":"main"}`})})
		run := s.Effects[0].(RunTools)
		step(t, m, st, Recover{}) // the process running it stopped
		ins := st.Interrupts()
		if len(ins) != 1 || !ins[0].InDoubt || !reflect.DeepEqual(ins[0].Actions(), []session.Action{session.ActionApprove, session.ActionReject, session.ActionComplete, session.ActionFail}) {
			t.Fatalf("after recovery: %+v", ins)
		}
		return m, st, run
	}
	result := func(s Step) string { // the tool_result's content
		for _, ev := range s.Events {
			var r ToolResult
			if ev.Type == session.EventToolResult && json.Unmarshal(ev.Data, &r) == nil {
				return r.Content
			}
		}
		return ""
	}
	t.Run("callback", func(t *testing.T) {
		m, st, run := start(t)
		wait := WaitID(run.Calls[0].IdempotencyKey, 0, 0)
		d := session.Decision{InterruptID: wait, Action: session.ActionComplete, Output: json.RawMessage(`"passed"`)}
		s := step(t, m, st, Decide{Seq: st.Seq, Decisions: []session.Decision{d}})
		if got := types(s.Events); got != "decision tool_result" || result(s) != "passed" || st.Status != session.StatusRunning {
			t.Fatalf("the callback's result: %s, result %q", got, result(s))
		}
		if _, err := m.Step(st, Decide{Seq: st.Seq, Decisions: []session.Decision{d}}, t0); err == nil {
			t.Fatal("a second result was taken")
		}
	})
	t.Run("complete and fail by name", func(t *testing.T) {
		for _, d := range []session.Decision{
			{Action: session.ActionComplete, Output: json.RawMessage(`{"status":"passed"}`)},
			{Action: session.ActionFail, Reason: "3 tests failed"},
		} {
			m, st, _ := start(t)
			d.InterruptID = st.Interrupts()[0].ID
			s := step(t, m, st, Decide{Seq: st.Seq, Decisions: []session.Decision{d}})
			want := `{"status":"passed"}`
			if d.Action == session.ActionFail {
				want = "the work tool pipeline started failed: 3 tests failed"
			}
			if got := types(s.Events); got != "decision tool_result" || result(s) != want {
				t.Fatalf("%s: %s, result %q", d.Action, got, result(s))
			}
		}
	})
	t.Run("rerun", func(t *testing.T) {
		m, st, run := start(t)
		first := WaitID(run.Calls[0].IdempotencyKey, 0, 0)
		s := step(t, m, st, Decide{Seq: st.Seq, Decisions: []session.Decision{{InterruptID: st.Interrupts()[0].ID, Action: session.ActionApprove}}})
		again := s.Effects[0].(RunTools).Calls[0]
		second := WaitID(again.IdempotencyKey, again.Waits, again.Reruns)
		if again.IdempotencyKey != run.Calls[0].IdempotencyKey || second == first {
			t.Fatalf("the second run: key %s, wait id %s (the first's: %s)", again.IdempotencyKey, second, first)
		}
		step(t, m, st, ToolsDone{Frame: "f1", Results: []ToolOutcome{{CallID: "c1", Pending: &Pending{Handle: "run-8"}}}})
		late := session.Decision{InterruptID: first, Action: session.ActionComplete, Output: json.RawMessage(`"passed"`)}
		if _, err := m.Step(st, Decide{Seq: st.Seq, Decisions: []session.Decision{late}}, t0); !errors.Is(err, session.ErrUnknownInterrupt) {
			t.Fatalf("the first run's late result on the second's wait: %v", err)
		}
		if ins := st.Interrupts(); len(ins) != 1 || ins[0].ID != second {
			t.Fatalf("the second run waits under %+v, want %s", ins, second)
		}
	})
}

// The nonce drawn at creation is in every id derived from the session: the
// same session id with another nonce (a purged id used again) shares no
// interrupt id, idempotency key or wait id; a log without one keeps the
// ids it always had.
func TestNonceSeparatesSessionsOfOneID(t *testing.T) {
	t.Parallel()
	type ids struct{ approval, key, wait string }
	run := func(nonce string) ids {
		m := waitMachine(session.OnTimeoutError)
		st := &State{}
		step(t, m, st, Start{SessionID: "chat-42", Nonce: nonce, Agent: "main", Text: "go"})
		s := step(t, m, st, ModelDone{Frame: "f1", Response: assistant(
			model.ToolCall{ID: "call_0", Name: "deploy", Arguments: `{"env":"prod"}`},
			model.ToolCall{ID: "call_1", Name: "pipeline", Arguments: `{"ref":"main"}`})})
		r := s.Effects[0].(RunTools).Calls[0]
		return ids{st.Interrupts()[0].ID, r.IdempotencyKey, WaitID(r.IdempotencyKey, r.Waits, r.Reruns)}
	}
	a, b, none := run("n1"), run("n2"), run("")
	if a.approval == b.approval || a.key == b.key || a.wait == b.wait {
		t.Fatalf("two nonces, shared ids: %+v %+v", a, b)
	}
	if a != run("n1") {
		t.Fatal("the ids of one nonce are not stable")
	}
	if none.approval != derivedID("chat-42", "f1", 3, "call_0", "") || none.key != "chat-42/f1/3/call_1" {
		t.Fatalf("a session without a nonce: %+v", none)
	}
}
