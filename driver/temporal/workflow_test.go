package temporal

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/audit"
	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/internal/testkit/fakeanthropic"
	"github.com/cairnhq/cairn/internal/testkit/fakegemini"
	"github.com/cairnhq/cairn/internal/testkit/fakeresponses"
	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/model/anthropic"
	"github.com/cairnhq/cairn/model/gemini"
	"github.com/cairnhq/cairn/model/openai"
	"github.com/cairnhq/cairn/model/scripted"
	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/store"
)

type deployArgs struct {
	Env string `json:"env"`
}

// fixture is a Runner (its core runs in the workflow and its activities;
// its store is the mirror) and a test workflow environment.
type fixture struct {
	t      *testing.T
	runner *cairn.Runner
	store  store.Store
	env    *testsuite.TestWorkflowEnvironment
	runs   atomic.Int32
	key    *audit.Key // signs the mirror's checkpoints
}

func newFixture(t *testing.T, ttl time.Duration) *fixture {
	return newFixtureWith(t, ttl, scripted.New(
		scripted.Reply{ToolCalls: []scripted.Call{{Name: "deploy", Arguments: `{"env":"prod"}`}}},
		scripted.Reply{Text: "{{.LastResult}}"}))
}

// newFixtureWith is a fixture whose agent calls model.
func newFixtureWith(t *testing.T, ttl time.Duration, model model.Model) *fixture {
	f := &fixture{t: t, store: store.NewMemory()}
	deploy := cairn.NewTool(&cairn.Tool{Name: "deploy", Description: "Deploy.", Approval: cairn.Always(), ApprovalTTL: ttl},
		func(ctx context.Context, a deployArgs) (string, error) {
			f.runs.Add(1)
			return "deployed to " + a.Env, nil
		})
	f.start(&cairn.Agent{Name: "ops", Model: model, Tools: []*cairn.Tool{deploy}})
	return f
}

// start gives f a runner of agent on f's store, registered in a new test
// workflow environment.
func (f *fixture) start(agent *cairn.Agent) {
	f.t.Helper()
	_, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		f.t.Fatal(err)
	}
	if f.key, err = audit.NewKey("wf", priv); err != nil {
		f.t.Fatal(err)
	}
	r, err := cairn.NewRunner([]*cairn.Agent{agent}, &cairn.RunnerOptions{Store: f.store, Signer: f.key})
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { r.Close() })
	f.runner = r
	var suite testsuite.WorkflowTestSuite
	f.env = suite.NewTestWorkflowEnvironment()
	f.env.SetTestTimeout(30 * time.Second)
	Register(f.env, r, &Options{Heartbeat: time.Second})
}

// session reads the mirror, as the HTTP API does.
func (f *fixture) session(id string) *cairn.Session {
	f.t.Helper()
	s, err := f.runner.Session(context.Background(), id)
	if err != nil {
		f.t.Fatalf("mirror: %v", err)
	}
	return s
}

// update sends an update and records how it ended.
type outcome struct {
	rejected error
	result   *cairn.Session
	err      error
	done     bool
}

func (f *fixture) update(name string, args any) *outcome {
	o := &outcome{}
	f.env.UpdateWorkflow(name, "", &testsuite.TestUpdateCallback{
		OnAccept: func() {},
		OnReject: func(err error) { o.rejected, o.done = err, true },
		OnComplete: func(v any, err error) {
			o.err, o.done = err, true
			if s, ok := v.(*cairn.Session); ok {
				o.result = s
			}
		},
	}, args)
	return o
}

func (f *fixture) run(id string, steps ...func()) {
	for i, step := range steps {
		f.env.RegisterDelayedCallback(step, time.Duration(i+1)*time.Second)
	}
	f.env.RegisterDelayedCallback(f.env.CancelWorkflow, time.Duration(len(steps)+1)*time.Second)
	f.env.ExecuteWorkflow(WorkflowName, params{Start: &engine.Start{SessionID: id, Agent: "ops", Text: "ship it"}})
	if err := f.env.GetWorkflowError(); err != nil && !strings.Contains(err.Error(), "canceled") {
		f.t.Fatalf("the workflow ended with %v", err)
	}
}

func TestApprovalOnTheWorkflow(t *testing.T) {
	f := newFixture(t, 0)
	var stale, unknown, invalid, first, second *outcome
	f.run("ses_wf1",
		func() {
			s := f.session("ses_wf1")
			if s.Status != cairn.StatusPaused || len(s.Interrupts) != 1 {
				t.Errorf("mirror after the first turn: %+v", s)
				return
			}
			in := s.Interrupts[0].ID
			stale = f.update(UpdateDecide, DecideArgs{Seq: s.Seq - 1, Decisions: []cairn.Decision{{InterruptID: in, Action: cairn.ActionApprove}}})
			unknown = f.update(UpdateDecide, DecideArgs{Seq: s.Seq, Decisions: []cairn.Decision{{InterruptID: "int_of_another_session", Action: cairn.ActionApprove}}})
			invalid = f.update(UpdateDecide, DecideArgs{Seq: s.Seq, Decisions: []cairn.Decision{{InterruptID: in, Action: cairn.ActionApprove, Arguments: []byte(`{"env": 5}`)}}})
			// Two decisions on the same pause at once: one wins.
			first = f.update(UpdateDecide, DecideArgs{Seq: s.Seq, Decisions: []cairn.Decision{{InterruptID: in, Action: cairn.ActionApprove}}})
			second = f.update(UpdateDecide, DecideArgs{Seq: s.Seq, Decisions: []cairn.Decision{{InterruptID: in, Action: cairn.ActionReject}}})
		},
	)
	if stale == nil || stale.rejected == nil || !strings.Contains(stale.rejected.Error(), "seq") {
		t.Fatalf("a stale seq: %+v, want rejected by the validator", stale)
	}
	if unknown == nil || unknown.rejected == nil || !strings.Contains(unknown.rejected.Error(), "int_of_another_session") {
		t.Fatalf("an unknown interrupt: %+v, want rejected by the validator", unknown)
	}
	if invalid == nil || invalid.rejected == nil || !strings.Contains(invalid.rejected.Error(), "env") {
		t.Fatalf("invalid arguments: %+v, want rejected by the validator", invalid)
	}
	if first == nil || first.err != nil || first.result == nil || first.result.Status != cairn.StatusCompleted || first.result.Output != "deployed to prod" {
		t.Fatalf("the first decision: %+v %+v", first, first.result)
	}
	if second.rejected == nil && second.err == nil {
		t.Fatalf("the second decision on the same pause won too: %+v", second)
	}
	if s := f.session("ses_wf1"); s.Status != cairn.StatusCompleted || s.Output != "deployed to prod" || f.runs.Load() != 1 {
		t.Fatalf("mirror: %s %q, tool ran %d times", s.Status, s.Output, f.runs.Load())
	}
}

// A tool activity that never reports (its worker died) is recovered as an
// in-doubt approval; approving it runs the tool.
func TestLostToolActivityIsInDoubt(t *testing.T) {
	f := newFixture(t, 0)
	var lost atomic.Bool
	f.env.OnActivity(ActivityTools, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, a toolsArgs) ([]engine.ToolOutcome, error) {
			if lost.CompareAndSwap(false, true) {
				return nil, errors.New("activity heartbeat timeout: the worker stopped")
			}
			return []engine.ToolOutcome{{CallID: a.Effect.Calls[0].CallID, Content: "deployed again"}}, nil
		})
	var approve, retry *outcome
	f.run("ses_wf2",
		func() {
			s := f.session("ses_wf2")
			approve = f.update(UpdateDecide, DecideArgs{Seq: s.Seq, Decisions: []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove}}})
		},
		func() {
			s := f.session("ses_wf2")
			if s.Status != cairn.StatusPaused || len(s.Interrupts) != 1 || !s.Interrupts[0].InDoubt {
				t.Errorf("after the lost activity: %+v", s)
				return
			}
			retry = f.update(UpdateDecide, DecideArgs{Seq: s.Seq, Decisions: []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove}}})
		},
	)
	if approve == nil || approve.err != nil || approve.result.Status != cairn.StatusPaused || !approve.result.Interrupts[0].InDoubt {
		t.Fatalf("approve: %+v", approve)
	}
	if retry == nil || retry.err != nil || retry.result.Status != cairn.StatusCompleted || retry.result.Output != "deployed again" {
		t.Fatalf("approve the in-doubt call: %+v %+v", retry, retry.result)
	}
}

// An approval's deadline is a durable timer: nobody decides, the timer
// fires, and the model sees the expiry.
func TestApprovalExpiresOnATimer(t *testing.T) {
	f := newFixture(t, time.Hour)
	f.env.RegisterDelayedCallback(func() {
		if s := f.session("ses_wf3"); s.Status != cairn.StatusPaused {
			t.Errorf("before the deadline: %s", s.Status)
		}
	}, 30*time.Minute)
	f.env.RegisterDelayedCallback(f.env.CancelWorkflow, 2*time.Hour)
	f.env.ExecuteWorkflow(WorkflowName, params{Start: &engine.Start{SessionID: "ses_wf3", Agent: "ops", Text: "ship it"}})
	if s := f.session("ses_wf3"); s.Status != cairn.StatusCompleted || !strings.Contains(s.Output, "approval expired") || f.runs.Load() != 0 {
		t.Fatalf("after the deadline: %s %q, runs %d", s.Status, s.Output, f.runs.Load())
	}
}

// A long history continues as new from a snapshot once the session waits
// for a person; the snapshot holds the same session.
func TestContinueAsNewCarriesTheSession(t *testing.T) {
	f := newFixture(t, 0)
	var suite testsuite.WorkflowTestSuite
	f.env = suite.NewTestWorkflowEnvironment()
	Register(f.env, f.runner, &Options{MaxHistory: 5})
	f.env.SetCurrentHistoryLength(100) // as the server reports it
	f.env.ExecuteWorkflow(WorkflowName, params{Start: &engine.Start{SessionID: "ses_can", Agent: "ops", Text: "ship it"}})
	var can *workflow.ContinueAsNewError
	if err := f.env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("the workflow ended with %v, want continue-as-new", err)
	}
	var p params
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &p); err != nil || p.Snapshot == nil || p.Start != nil {
		t.Fatalf("continue-as-new params: %v %+v", err, p)
	}
	st, _, err := engine.Restore(p.Snapshot, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	carried, mirrored := st.View(), f.session("ses_can")
	if carried.Seq != mirrored.Seq || carried.Status != cairn.StatusPaused || len(carried.Interrupts) != 1 || carried.Interrupts[0].ID != mirrored.Interrupts[0].ID {
		t.Fatalf("carried %+v, mirrored %+v", carried, mirrored)
	}
}

// A message and a cancel sent through the workflow's updates record who
// sent them in the mirrored log, as a decision does.
func TestWorkflowRecordsWhoSpeaksAndCancels(t *testing.T) {
	f := newFixture(t, 0)
	alice := cairn.Actor{Name: "alice", Role: "user"}
	bob := cairn.Actor{Name: "bob", Role: "admin"}
	var cancelled, spoke *outcome
	f.run("ses_wf_actors",
		func() {
			cancelled = f.update(UpdateCancel, CancelArgs{Scope: cairn.CancelAll, Actor: bob})
		},
		func() {
			spoke = f.update(UpdateMessage, MessageArgs{Text: "once more", Actor: alice})
		},
	)
	if cancelled == nil || cancelled.err != nil || cancelled.result == nil || cancelled.result.Status != cairn.StatusCancelled {
		t.Fatalf("cancel: %+v", cancelled)
	}
	if spoke == nil || spoke.err != nil || spoke.result == nil || spoke.result.Status != cairn.StatusPaused {
		t.Fatalf("message: %+v", spoke)
	}
	evs, err := f.runner.Events(context.Background(), "ses_wf_actors", 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ev := range evs {
		if ev.Type == "user_message" || ev.Type == "turn_cancelled" {
			got = append(got, string(ev.Type)+" "+string(ev.Data))
		}
	}
	want := []string{
		`user_message {"text":"ship it"}`,
		`turn_cancelled {"reason":"cancelled by bob (admin)","actor":{"name":"bob","role":"admin"}}`,
		`user_message {"text":"once more","actor":{"name":"alice","role":"user"}}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Provider data (Anthropic's signed thinking, the Responses API's
// encrypted reasoning, Gemini's thought signatures) crosses the workflow's
// history and its activities intact: the follow-up each enforcing fake gets
// after the approval carries what it issued.
func TestProviderDataCrossesTheWorkflow(t *testing.T) {
	claude := fakeanthropic.Start(t, func(r fakeanthropic.Request) fakeanthropic.Reply {
		if last := r.LastBlock(); last.Type == "tool_result" {
			return fakeanthropic.Reply{Thinking: "Report it.", Text: "Done: " + last.ContentText()}
		}
		return fakeanthropic.Reply{Thinking: "Deploying needs the tool.", Redacted: true,
			ToolCalls: []fakeanthropic.Call{{ID: "toolu_01", Name: "deploy", Input: `{"env":"prod"}`}}}
	})
	gpt := fakeresponses.Start(t, func(r fakeresponses.Request) fakeresponses.Reply {
		if last := r.Last(); last.Type == "function_call_output" {
			return fakeresponses.Reply{Text: "Done: " + last.OutputText()}
		}
		return fakeresponses.Reply{Reasoning: "Deploying needs the tool.", ToolCalls: []fakeresponses.Call{{CallID: "call_01", Name: "deploy", Arguments: `{"env":"prod"}`}}}
	})
	gem := fakegemini.Start(t, func(r fakegemini.Request) fakegemini.Reply {
		if res := r.Responses(); len(res) > 0 {
			return fakegemini.Reply{Text: fmt.Sprint("Done: ", res[0].Response["output"])}
		}
		return fakegemini.Reply{Thought: "Deploying needs the tool.", ToolCalls: []fakegemini.Call{{Name: "deploy", Args: map[string]any{"env": "prod"}}}}
	})
	for name, m := range map[string]model.Model{
		"anthropic":        anthropic.New("claude-test", &anthropic.Options{BaseURL: claude.URL, APIKey: "k", MaxTokens: 8000, Thinking: &anthropic.Thinking{BudgetTokens: 2048}}),
		"openai-responses": openai.NewResponses("o4-mini", &openai.ResponsesOptions{Options: openai.Options{BaseURL: gpt.BaseURL(), APIKey: "k"}, ReasoningEffort: "low"}),
		"gemini":           gemini.New("gemini-test", &gemini.Options{BaseURL: gem.URL, APIKey: "k"}),
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixtureWith(t, 0, m)
			var decided *outcome
			f.run("ses_think", func() {
				s := f.session("ses_think")
				if s.Status != cairn.StatusPaused {
					t.Errorf("mirror after the first turn: %+v", s)
					return
				}
				decided = f.update(UpdateDecide, DecideArgs{Seq: s.Seq, Decisions: []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove}}})
			})
			if decided == nil || decided.err != nil || decided.result == nil || decided.result.Status != cairn.StatusCompleted || decided.result.Output != "Done: deployed to prod" {
				t.Fatalf("the approval: %+v (%+v)", decided, decided.result)
			}
		})
	}
}

// Who may decide holds on the workflow as on the local driver (the engine
// asks session.Authority): the wrong group is rejected by the validator,
// an approval of two leaves the interrupt pending, the same person again is
// already_approved, and a second person's approval at the first seq runs
// the tool once.
func TestFourEyesOnTheWorkflow(t *testing.T) {
	f := &fixture{t: t, store: store.NewMemory()}
	deploy := cairn.NewTool(&cairn.Tool{Name: "deploy", Description: "Deploy.", Approval: cairn.Always(),
		Approvers: &cairn.Approvers{Groups: []string{"sre"}, Count: 2}},
		func(ctx context.Context, a deployArgs) (string, error) {
			f.runs.Add(1)
			return "deployed to " + a.Env, nil
		})
	f.start(&cairn.Agent{Name: "ops", Model: scripted.New(
		scripted.Reply{ToolCalls: []scripted.Call{{Name: "deploy", Arguments: `{"env":"prod"}`}}},
		scripted.Reply{Text: "{{.LastResult}}"}), Tools: []*cairn.Tool{deploy}})
	who := func(name string, groups ...string) session.Actor {
		return session.Actor{Name: name, Subject: name, Role: session.RoleApprover, Groups: groups, Via: session.ViaToken}
	}
	var seq int64
	var in string
	var dev, gil, ana, anaAgain, bob *outcome
	f.run("ses_wf4",
		func() {
			s := f.session("ses_wf4")
			seq, in = s.Seq, s.Interrupts[0].ID
			approve := []cairn.Decision{{InterruptID: in, Action: cairn.ActionApprove}}
			dev = f.update(UpdateDecide, DecideArgs{Seq: seq, Decisions: approve, Actor: who("dev", "dev")})
			// In sre too, but of another tenant: the session is not there for gil.
			other := who("gil", "sre")
			other.Tenant = "globex"
			gil = f.update(UpdateDecide, DecideArgs{Seq: seq, Decisions: approve, Actor: other})
			ana = f.update(UpdateDecide, DecideArgs{Seq: seq, Decisions: approve, Actor: who("ana", "sre")})
		},
		func() {
			approve := []cairn.Decision{{InterruptID: in, Action: cairn.ActionApprove}}
			anaAgain = f.update(UpdateDecide, DecideArgs{Seq: seq, Decisions: approve, Actor: who("ana", "sre")})
			bob = f.update(UpdateDecide, DecideArgs{Seq: seq, Decisions: approve, Actor: who("bob", "sre")})
		},
	)
	if dev == nil || dev.rejected == nil || !strings.Contains(dev.rejected.Error(), "member of sre") {
		t.Fatalf("the wrong group: %+v", dev)
	}
	if gil == nil || gil.rejected == nil || !strings.Contains(gil.rejected.Error(), `no session "ses_wf4"`) {
		t.Fatalf("another tenant: %+v", gil)
	}
	if ana == nil || ana.err != nil || ana.result == nil || ana.result.Status != cairn.StatusPaused || len(ana.result.Interrupts[0].Approvals) != 1 {
		t.Fatalf("the first approval: %+v", ana)
	}
	if anaAgain == nil || anaAgain.rejected == nil || !strings.Contains(anaAgain.rejected.Error(), "ana approved") {
		t.Fatalf("the same person again: %+v", anaAgain)
	}
	if bob == nil || bob.err != nil || bob.result == nil || bob.result.Status != cairn.StatusCompleted || f.runs.Load() != 1 {
		t.Fatalf("the second approval: %+v, %d runs", bob, f.runs.Load())
	}
	// The workflow's engine chains the events the mirror records, and the
	// mirror signs them to the end.
	keys := audit.Keys{"wf": f.key.Public()}
	if rep, err := audit.Verify(context.Background(), f.store, audit.Options{Keys: keys}); err != nil || rep.Sessions != 1 || rep.Unchained != 0 || len(rep.Breaks) != 0 || rep.Signed != 1 || rep.Uncovered != 0 {
		t.Fatalf("the mirror's chain: %+v %v", rep, err)
	}
}

// Reminders, escalations and the outcome at expiry are durable timers of
// the workflow: each fires once, when due, recorded with its rule, and the
// mirror keeps one signed chain.
func TestEscalationOnTheWorkflow(t *testing.T) {
	f := &fixture{t: t, store: store.NewMemory()}
	deploy := cairn.NewTool(&cairn.Tool{Name: "deploy", Description: "Deploy.", Approval: cairn.Always(), ApprovalTTL: time.Hour,
		Approvers: &cairn.Approvers{Groups: []string{"sre"}},
		Escalation: &cairn.Escalation{Steps: []cairn.EscalationStep{
			{After: 10 * time.Minute, Remind: true},
			{BeforeExpiry: 10 * time.Minute, EscalateTo: []string{"sre-leads"}},
		}, OnExpiry: &cairn.ExpiryRule{Action: cairn.ExpiryReject, Reason: "Nobody approved the deploy in time."}},
	}, func(ctx context.Context, a deployArgs) (string, error) {
		f.runs.Add(1)
		return "deployed to " + a.Env, nil
	})
	f.start(&cairn.Agent{Name: "ops", Model: scripted.New(
		scripted.Reply{ToolCalls: []scripted.Call{{Name: "deploy", Arguments: `{"env":"prod"}`}}},
		scripted.Reply{Text: "{{.LastResult}}"}), Tools: []*cairn.Tool{deploy}})
	fired := func() (reminded, escalated int) {
		evs, err := f.runner.Events(context.Background(), "ses_wf5", 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			// Only the steps.
			//exhaustive:ignore
			switch ev.Type {
			case cairn.EventInterruptReminded:
				reminded++
			case cairn.EventInterruptEscalated:
				escalated++
			}
		}
		return reminded, escalated
	}
	f.env.RegisterDelayedCallback(func() {
		if r, e := fired(); r != 0 || e != 0 {
			t.Errorf("at 5 min: %d reminders, %d escalations", r, e)
		}
	}, 5*time.Minute)
	f.env.RegisterDelayedCallback(func() {
		if r, e := fired(); r != 1 || e != 0 {
			t.Errorf("at 20 min: %d reminders, %d escalations", r, e)
		}
	}, 20*time.Minute)
	f.env.RegisterDelayedCallback(func() {
		s := f.session("ses_wf5")
		if r, e := fired(); r != 1 || e != 1 || s.Status != cairn.StatusPaused || !slices.Contains(s.Interrupts[0].Approvers.Groups, "sre-leads") {
			t.Errorf("at 55 min: %d reminders, %d escalations, %s, approvers %+v", r, e, s.Status, s.Interrupts[0].Approvers)
		}
	}, 55*time.Minute)
	f.env.RegisterDelayedCallback(f.env.CancelWorkflow, 2*time.Hour)
	f.env.ExecuteWorkflow(WorkflowName, params{Start: &engine.Start{SessionID: "ses_wf5", Agent: "ops", Text: "ship it"}})
	s := f.session("ses_wf5")
	if r, e := fired(); s.Status != cairn.StatusCompleted || !strings.Contains(s.Output, "Nobody approved the deploy in time.") || f.runs.Load() != 0 || r != 1 || e != 1 {
		t.Fatalf("after the deadline: %s %q, runs %d, %d reminders, %d escalations", s.Status, s.Output, f.runs.Load(), r, e)
	}
	evs, _ := f.runner.Events(context.Background(), "ses_wf5", 0)
	var rule string
	for _, ev := range evs {
		if ev.Type == cairn.EventDecision {
			var d session.DecisionMade
			_ = json.Unmarshal(ev.Data, &d)
			rule = d.Rule
		}
	}
	if rule != "tool deploy on_expiry" {
		t.Fatalf("the decision at expiry names rule %q", rule)
	}
	if rep, err := audit.Verify(context.Background(), f.store, audit.Options{Keys: audit.Keys{"wf": f.key.Public()}}); err != nil || len(rep.Breaks) != 0 || rep.Signed != 1 {
		t.Fatalf("the mirror's chain: %+v %v", rep, err)
	}
}
