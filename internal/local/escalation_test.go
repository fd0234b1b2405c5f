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
