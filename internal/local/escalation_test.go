package local_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/model/scripted"
	"github.com/cairnhq/cairn/session"
)

type refundArgs struct {
	Amount int `json:"amount"`
}

// escalationRunner runs an agent that asks for a refund of amount, whose
// approval (1 h, finance) reminds after 10 min and escalates to
// finance-leads 10 min before its deadline, with esc's outcome at expiry.
func escalationRunner(t *testing.T, clk *clock, amount string, onExpiry *cairn.ExpiryRule) (*cairn.Runner, *int) {
	t.Helper()
	runs := new(int)
	refund := cairn.NewTool(&cairn.Tool{Name: "refund", Description: "Refund.", Approval: cairn.Always(), ApprovalTTL: time.Hour,
		Approvers: &cairn.Approvers{Groups: []string{"finance"}},
		Escalation: &cairn.Escalation{Steps: []cairn.EscalationStep{
			{After: 10 * time.Minute, Remind: true},
			{BeforeExpiry: 10 * time.Minute, EscalateTo: []string{"finance-leads"}},
		}, OnExpiry: onExpiry},
	}, func(ctx context.Context, a refundArgs) (string, error) { *runs++; return "refunded", nil })
	m := scripted.New(scripted.Reply{ToolCalls: []scripted.Call{{Name: "refund", Arguments: `{"amount":` + amount + `}`}}}, scripted.Reply{Text: "{{.LastResult}}"})
	return runnerFor(t, []*cairn.Agent{{Name: "main", Model: m, Tools: []*cairn.Tool{refund}}}, &cairn.RunnerOptions{Now: clk.now, ExpirySweep: -1}), runs
}

// A reminder and an escalation fire once each, when due; the outcome at
// expiry (a rule's reason) is recorded with its rule, and the model sees
// the reason.
func TestEscalationRemindsEscalatesAndExpires(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	r, runs := escalationRunner(t, clk, "40", &cairn.ExpiryRule{Action: cairn.ExpiryReject, Reason: "Nobody approved in time."})
	s, err := r.Start(ctx, "main", "refund 40", nil)
	if err != nil || s.Status != cairn.StatusPaused {
		t.Fatalf("%+v %v", s, err)
	}
	in := s.Interrupts[0]
	if len(in.Schedule) != 2 || !in.Schedule[0].At.Equal(clk.now().Add(10*time.Minute)) || !in.Schedule[1].At.Equal(clk.now().Add(50*time.Minute)) ||
		in.OnExpiry == nil || in.OnExpiry.Rule != "tool refund on_expiry" || in.Schedule[0].Rule != "tool refund escalation[0]" {
		t.Fatalf("the schedule: %+v, on expiry %+v", in.Schedule, in.OnExpiry)
	}
	expire := func(want int) *cairn.Session {
		t.Helper()
		if n, err := r.ExpireDue(ctx); n != want || err != nil {
			t.Fatalf("ExpireDue = %d, %v; want %d", n, err, want)
		}
		s, err := r.Session(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	clk.add(9 * time.Minute)
	expire(0)
	clk.add(time.Minute)
	s = expire(1)
	if s.Status != cairn.StatusPaused || s.Interrupts[0].Schedule[0].FiredAt == nil || s.Interrupts[0].Schedule[1].FiredAt != nil {
		t.Fatalf("after the reminder: %+v", s.Interrupts[0].Schedule)
	}
	expire(0) // once
	clk.add(40 * time.Minute)
	s = expire(1)
	if ap := s.Interrupts[0].Approvers; ap == nil || !slices.Equal(ap.Groups, []string{"finance", "finance-leads"}) {
		t.Fatalf("after the escalation: approvers %+v", ap)
	}
	clk.add(10 * time.Minute)
	s = expire(1)
	if s.Status != cairn.StatusCompleted || *runs != 0 || !strings.Contains(s.Output, "Nobody approved in time.") {
		t.Fatalf("after the deadline: %s %q, %d runs", s.Status, s.Output, *runs)
	}
	evs, err := r.Events(ctx, s.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	var types []session.EventType
	var decision session.DecisionMade
	var fired []session.EscalationFired
	for _, ev := range evs {
		types = append(types, ev.Type)
		// Only the steps and the decision.
		//exhaustive:ignore
		switch ev.Type {
		case session.EventDecision:
			_ = json.Unmarshal(ev.Data, &decision)
		case session.EventInterruptReminded, session.EventInterruptEscalated:
			var f session.EscalationFired
			_ = json.Unmarshal(ev.Data, &f)
			fired = append(fired, f)
		}
	}
	if len(fired) != 2 || !fired[0].Remind || fired[0].Rule != "tool refund escalation[0]" || !slices.Equal(fired[1].EscalateTo, []string{"finance-leads"}) {
		t.Fatalf("fired: %+v (%v)", fired, types)
	}
	if decision.Action != session.ActionReject || decision.Rule != "tool refund on_expiry" || decision.Reason != "Nobody approved in time." || decision.Actor.Role != "expiry" {
		t.Fatalf("the decision at expiry: %+v", decision)
	}
}

// The other outcomes at expiry: approve when the rule's condition holds
// for the arguments (else reject), fail the session, ask again.
func TestEscalationOutcomes(t *testing.T) {
	ctx := context.Background()
	small := cairn.ApprovalIf(func(a refundArgs) bool { return a.Amount < 100 })
	for _, c := range []struct {
		name, amount string
		rule         cairn.ExpiryRule
		status       cairn.Status
		runs         int
	}{
		{"approve when it holds", "40", cairn.ExpiryRule{Action: cairn.ExpiryApprove, If: small}, cairn.StatusCompleted, 1},
		{"reject when it does not", "400", cairn.ExpiryRule{Action: cairn.ExpiryApprove, If: small, Reason: "too large to approve unattended"}, cairn.StatusCompleted, 0},
		{"fail", "40", cairn.ExpiryRule{Action: cairn.ExpiryFail, Reason: "refunds wait for no one"}, cairn.StatusFailed, 0},
		{"ask", "40", cairn.ExpiryRule{Action: cairn.ExpiryAsk, Question: "Nobody approved the refund in an hour. Approve it now?"}, cairn.StatusPaused, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			clk := newClock()
			rule := c.rule
			r, runs := escalationRunner(t, clk, c.amount, &rule)
			s, err := r.Start(ctx, "main", "refund", nil)
			if err != nil {
				t.Fatal(err)
			}
			clk.add(time.Hour)
			for range 3 { // the reminder, the escalation and the deadline are all due: one sweep does them
				if _, err := r.ExpireDue(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if s, err = r.Session(ctx, s.ID); err != nil || s.Status != c.status || *runs != c.runs {
				t.Fatalf("%s, %d runs, %v; want %s, %d", s.Status, *runs, err, c.status, c.runs)
			}
			switch c.rule.Action {
			case cairn.ExpiryFail:
				if s.Error == nil || s.Error.Code != "approval_expired" {
					t.Fatalf("error %+v", s.Error)
				}
			case cairn.ExpiryAsk:
				in := s.Interrupts[0]
				if in.Message != c.rule.Question || in.ExpiresAt != nil || in.Approvers == nil || !slices.Contains(in.Approvers.Groups, "finance-leads") {
					t.Fatalf("asked again: %+v", in)
				}
				if s, err = r.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: in.ID, Action: cairn.ActionApprove}}, nil); err != nil || s.Status != cairn.StatusCompleted || *runs != 1 {
					t.Fatalf("approved after asking again: %+v %v, %d runs", s, err, *runs)
				}
			case cairn.ExpiryApprove:
				if c.runs == 0 && !strings.Contains(s.Output, "too large to approve unattended") {
					t.Fatalf("output %q", s.Output)
				}
			case cairn.ExpiryReject:
			}
		})
	}
}

// An agent's escalation is that of its tools that have none; a tool's
// own wins.
func TestAgentEscalationForItsTools(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	plain := cairn.NewTool(&cairn.Tool{Name: "restart", Description: "Restart.", Approval: cairn.Always(), ApprovalTTL: time.Hour},
		func(ctx context.Context, a struct{}) (string, error) { return "restarted", nil })
	own := cairn.NewTool(&cairn.Tool{Name: "refund", Description: "Refund.", Approval: cairn.Always(), ApprovalTTL: time.Hour,
		Escalation: &cairn.Escalation{Steps: []cairn.EscalationStep{{After: time.Minute, Remind: true}}}},
		func(ctx context.Context, a refundArgs) (string, error) { return "refunded", nil })
	m := scripted.New(scripted.Reply{ToolCalls: []scripted.Call{{Name: "restart", Arguments: `{}`}, {Name: "refund", Arguments: `{"amount":1}`}}}, scripted.Reply{Text: "done"})
	r := runnerFor(t, []*cairn.Agent{{Name: "main", Model: m, Tools: []*cairn.Tool{plain, own},
		Escalation: &cairn.Escalation{Steps: []cairn.EscalationStep{{After: 30 * time.Minute, EscalateTo: []string{"oncall"}}},
			OnExpiry: &cairn.ExpiryRule{Action: cairn.ExpiryFail}}}}, &cairn.RunnerOptions{Now: clk.now, ExpirySweep: -1})
	s, err := r.Start(ctx, "main", "restart and refund", nil)
	if err != nil || len(s.Interrupts) != 2 {
		t.Fatalf("%+v %v", s, err)
	}
	restart, refund := s.Interrupts[0], s.Interrupts[1]
	if len(restart.Schedule) != 1 || restart.Schedule[0].Rule != "agent main escalation[0]" || restart.OnExpiry == nil || restart.OnExpiry.Action != cairn.ExpiryFail {
		t.Fatalf("restart, which has no escalation: %+v %+v", restart.Schedule, restart.OnExpiry)
	}
	if len(refund.Schedule) != 1 || refund.Schedule[0].Rule != "tool refund escalation[0]" || refund.OnExpiry != nil {
		t.Fatalf("refund, which has its own: %+v %+v", refund.Schedule, refund.OnExpiry)
	}
}

// A wait on a system reminds, and escalates to the people who may
// complete it by hand, on the same schedule as an approval: before its
// deadline, once each.
func TestWaitOnASystemEscalates(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	tool := pipelineTool(func(string) {}, &cairn.Wait{Timeout: 30 * time.Minute})
	tool.Escalation = &cairn.Escalation{Steps: []cairn.EscalationStep{
		{After: 5 * time.Minute, Remind: true},
		{BeforeExpiry: 5 * time.Minute, EscalateTo: []string{"release-managers"}},
	}}
	m := scripted.New(scripted.Reply{ToolCalls: []scripted.Call{{Name: "run_pipeline", Arguments: `{"ref":"main"}`}}}, scripted.Reply{Text: "{{.LastResult}}"})
	r := runnerFor(t, []*cairn.Agent{{Name: "ci", Model: m, Tools: []*cairn.Tool{tool}}}, &cairn.RunnerOptions{Now: clk.now, ExpirySweep: -1})
	s, err := r.Start(ctx, "ci", "ship main", nil)
	if err != nil || s.Status != cairn.StatusPaused || s.Interrupts[0].Kind != cairn.KindExternal || len(s.Interrupts[0].Schedule) != 2 {
		t.Fatalf("%+v %v", s, err)
	}
	for _, step := range []time.Duration{5 * time.Minute, 20 * time.Minute} {
		clk.add(step)
		if n, err := r.ExpireDue(ctx); n != 1 || err != nil {
			t.Fatalf("after %s: ExpireDue = %d, %v", step, n, err)
		}
		if n, _ := r.ExpireDue(ctx); n != 0 {
			t.Fatalf("after %s: a second sweep fired again", step)
		}
	}
	s, _ = r.Session(ctx, s.ID)
	in := s.Interrupts[0]
	if s.Status != cairn.StatusPaused || in.Schedule[0].FiredAt == nil || in.Schedule[1].FiredAt == nil ||
		in.Approvers != nil && !slices.Contains(in.Approvers.Groups, "release-managers") {
		t.Fatalf("before the deadline: %s, %+v", s.Status, in)
	}
	clk.add(5 * time.Minute)
	if n, err := r.ExpireDue(ctx); n != 1 || err != nil {
		t.Fatalf("at the deadline: %d %v", n, err)
	}
	if s, _ = r.Session(ctx, s.ID); s.Status != cairn.StatusCompleted || !strings.Contains(s.Output, "did not finish") {
		t.Fatalf("after the deadline: %s %q", s.Status, s.Output)
	}
}
