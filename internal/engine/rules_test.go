package engine

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/cond"
	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/session"
)

// rulesMachine has deploy (approvers: sre for prod, ops otherwise), payout
// (four-eyes) and wipe (standing rules forbidden, at most 7 days else).
func rulesMachine() *Machine {
	always := func(ToolArgs) (bool, error) { return true, nil }
	deploy := &Tool{Definition: model.ToolDefinition{Name: "deploy"}, NeedsApproval: always,
		Approvers: func(a ToolArgs) (*session.Approvers, error) {
			if a.Value.(map[string]any)["env"] == "prod" {
				return &session.Approvers{Groups: []string{"sre"}}, nil
			}
			return &session.Approvers{Groups: []string{"ops"}}, nil
		},
		Rules: RulePolicy{MaxDuration: 7 * 24 * time.Hour}}
	payout := &Tool{Definition: model.ToolDefinition{Name: "payout"}, NeedsApproval: always,
		Approvers: func(ToolArgs) (*session.Approvers, error) { return &session.Approvers{Count: 2}, nil }}
	wipe := &Tool{Definition: model.ToolDefinition{Name: "wipe"}, NeedsApproval: always, Rules: RulePolicy{Forbidden: true}}
	conds := cond.NewCache("args", 64)
	return New(map[string]*Agent{"main": {
		Name: "main", Tools: map[string]*Tool{"deploy": deploy, "payout": payout, "wipe": wipe},
		Definitions: []model.ToolDefinition{deploy.Definition, payout.Definition, wipe.Definition}, MaxIterations: 5,
	}}, &Options{RuleCondition: conds.Eval})
}

var alice = session.Actor{Name: "alice", Subject: "alice", Role: session.RoleApprover, Groups: []string{"ops"}, Via: session.ViaToken}

// pausedOn starts a session whose model calls tool with args, and returns
// the state paused on it (or not, when rules decide it).
func pausedOn(t *testing.T, m *Machine, id, tool, args string, rules ...session.Rule) (*State, Step) {
	t.Helper()
	st := &State{}
	s := step(t, m, st, Start{SessionID: id, Agent: "main", Text: "go"})
	s = step(t, m, st, ModelDone{Frame: s.Effects[0].(CallModel).Frame, Response: assistant(model.ToolCall{ID: "c1", Name: tool, Arguments: args}), Rules: rules})
	return st, s
}

func TestGrantingAStandingRule(t *testing.T) {
	t.Parallel()
	m := rulesMachine()
	decide := func(st *State, d session.Decision) (Step, error) {
		d.InterruptID = st.Interrupts()[0].ID
		return m.Step(st, Decide{Seq: st.Seq, Decisions: []session.Decision{d}, Actor: alice}, t0)
	}
	refused := func(tool, args string, d session.Decision, code session.Code, says string) {
		t.Helper()
		st, _ := pausedOn(t, m, "s-"+tool, tool, args)
		seq := st.Seq
		_, err := decide(st, d)
		var e *session.Error
		if !errors.As(err, &e) || e.Code != code || !strings.Contains(e.Message, says) {
			t.Fatalf("%s %s %+v: %v, want %s saying %q", tool, args, d.Rule, err, code, says)
		}
		if st.Seq != seq || len(st.Interrupts()) != 1 {
			t.Fatalf("a refused grant changed the session")
		}
	}
	approve := session.ActionApprove
	refused("payout", `{}`, session.Decision{Action: approve, Rule: &session.RuleGrant{}}, session.CodeForbidden, "four-eyes")
	refused("wipe", `{}`, session.Decision{Action: approve, Rule: &session.RuleGrant{}}, session.CodeForbidden, "forbids standing rules")
	refused("deploy", `{"env":"prod"}`, session.Decision{Action: approve, Rule: &session.RuleGrant{}}, session.CodeNotAnApprover, "sre")
	refused("deploy", `{"env":"staging"}`, session.Decision{Action: approve, Rule: &session.RuleGrant{Duration: "8d"}}, session.CodeForbidden, "longer than the 7d")
	refused("deploy", `{"env":"staging"}`, session.Decision{Action: approve, Rule: &session.RuleGrant{Duration: "unbounded"}}, session.CodeForbidden, "at most 7d")
	refused("deploy", `{"env":"staging"}`, session.Decision{Action: approve, Rule: &session.RuleGrant{If: `args.env == "qa"`}}, session.CodeInvalidRequest, "does not hold")
	refused("deploy", `{"env":"staging"}`, session.Decision{Action: approve, Rule: &session.RuleGrant{If: `args.env ==`}}, session.CodeInvalidRequest, "CEL")
	refused("deploy", `{"env":"staging"}`, session.Decision{Action: approve, Rule: &session.RuleGrant{Scope: "world"}}, session.CodeInvalidRequest, "scope")
	refused("deploy", `{"env":"staging"}`, session.Decision{Action: approve, Remember: session.RememberSession, Rule: &session.RuleGrant{}}, session.CodeInvalidRequest, "not both")
	refused("deploy", `{"env":"staging"}`, session.Decision{Action: approve, Arguments: []byte(`{"env":"qa"}`), Rule: &session.RuleGrant{}}, session.CodeInvalidRequest, "edited arguments")

	// Four-eyes: even one who may approve cannot grant (403).
	st, _ := pausedOn(t, m, "s-four", "payout", `{}`)
	_, err := m.Step(st, Decide{Seq: st.Seq, Decisions: []session.Decision{{InterruptID: st.Interrupts()[0].ID, Action: approve, Rule: &session.RuleGrant{}}}}, t0)
	if !errors.Is(err, session.ErrForbidden) {
		t.Fatalf("a four-eyes grant by the program: %v", err)
	}

	st, _ = pausedOn(t, m, "s1", "deploy", `{"env":"staging"}`)
	s, err := decide(st, session.Decision{Action: approve, Rule: &session.RuleGrant{If: `args.env == "staging"`, Duration: "72h"}})
	if err != nil {
		t.Fatal(err)
	}
	d := s.Payloads[0].(*DecisionMade)
	g := d.Granted
	if g == nil || g.ID != RuleID("s1", d.InterruptID) || g.Tool != "deploy" || g.Agent != "main" || g.Scope != session.ScopeAgent || g.Action != approve ||
		g.GrantedBy.Name != "alice" || g.ExpiresAt == nil || !g.ExpiresAt.Equal(t0.Add(72*time.Hour)) || g.If != `args.env == "staging"` {
		t.Fatalf("granted %+v", g)
	}
	if _, ok := s.Effects[0].(RunTools); !ok {
		t.Fatalf("the granting decision did not run the call: %s", types(s.Events))
	}
	// The default duration is the tool's maximum when shorter than 30 days.
	st, _ = pausedOn(t, m, "s2", "deploy", `{"env":"staging"}`)
	s, _ = decide(st, session.Decision{Action: session.ActionReject, Reason: "freeze", Rule: &session.RuleGrant{Scope: session.ScopeTenant}})
	if g := s.Payloads[0].(*DecisionMade).Granted; g == nil || !g.ExpiresAt.Equal(t0.Add(7*24*time.Hour)) || g.Agent != "" || g.Reason != "freeze" {
		t.Fatalf("granted %+v", g)
	}
}

func TestStandingRulesDecideCalls(t *testing.T) {
	t.Parallel()
	m := rulesMachine()
	rule := session.Rule{ID: "rul_1", Tool: "deploy", Agent: "main", Action: session.ActionApprove, If: `args.env == "staging"`, Scope: session.ScopeAgent,
		Session: "s0", GrantedBy: alice, GrantedAt: t0.Add(-time.Hour)}
	expired, revoked, elsewhere, otherTenant := rule, rule, rule, rule
	expired.ExpiresAt = &t0
	revoked.RevokedAt = &t0
	elsewhere.Scope = session.ScopeSession
	otherTenant.Tenant = "acme"
	everywhere := rule
	everywhere.If = ""

	decidedBy := func(s Step) *DecisionMade {
		for _, p := range s.Payloads {
			if d, ok := p.(*DecisionMade); ok {
				return d
			}
		}
		return nil
	}
	for _, c := range []struct {
		name  string
		args  string
		rules []session.Rule
		want  string // the rule that decides, "" for a pause
	}{
		{"matches", `{"env":"staging"}`, []session.Rule{rule}, "rul_1"},
		{"outside its condition", `{"env":"qa"}`, []session.Rule{rule}, ""},
		{"expired", `{"env":"staging"}`, []session.Rule{expired}, ""},
		{"revoked", `{"env":"staging"}`, []session.Rule{revoked}, ""},
		{"another session's", `{"env":"staging"}`, []session.Rule{elsewhere}, ""},
		{"another tenant's", `{"env":"staging"}`, []session.Rule{otherTenant}, ""},
		{"beyond its grantor's groups", `{"env":"prod"}`, []session.Rule{everywhere}, ""},
		{"no rules read", `{"env":"staging"}`, nil, ""},
	} {
		st, s := pausedOn(t, m, "s1", "deploy", c.args, c.rules...)
		d := decidedBy(s)
		switch {
		case c.want == "" && (d != nil || st.Status != session.StatusPaused):
			t.Errorf("%s: decided %+v, want a pause", c.name, d)
		case c.want != "" && (d == nil || d.Rule != c.want || d.Actor.Name != "alice" || d.Action != session.ActionApprove || st.Status != session.StatusRunning):
			t.Errorf("%s: %s %+v, want decided by %s", c.name, types(s.Events), d, c.want)
		case c.want != "":
			if run, ok := s.Effects[0].(RunTools); !ok || run.Calls[0].CallID != "c1" {
				t.Errorf("%s: the approved call does not run: %+v", c.name, s.Effects)
			}
		}
	}
	// A rejecting rule wins over an approving one; the model reads why.
	reject := rule
	reject.ID, reject.Action, reject.Reason = "rul_2", session.ActionReject, "deploys are frozen"
	st, s := pausedOn(t, m, "s1", "deploy", `{"env":"staging"}`, rule, reject)
	d := decidedBy(s)
	if d == nil || d.Rule != "rul_2" || d.Action != session.ActionReject || st.Status != session.StatusRunning {
		t.Fatalf("reject: %s %+v", types(s.Events), d)
	}
	var res *ToolResult
	for _, p := range s.Payloads {
		if r, ok := p.(*ToolResult); ok {
			res = r
		}
	}
	if res == nil || !res.IsError || !strings.Contains(res.Content, "deploys are frozen") {
		t.Fatalf("the model reads %+v", res)
	}
	// Four-eyes calls and tools that forbid rules are never decided by one.
	for _, tool := range []string{"payout", "wipe"} {
		r := everywhere
		r.Tool = tool
		if st, s := pausedOn(t, m, "s1", tool, `{}`, r); decidedBy(s) != nil || st.Status != session.StatusPaused {
			t.Errorf("%s decided by a rule: %s", tool, types(s.Events))
		}
	}
}
