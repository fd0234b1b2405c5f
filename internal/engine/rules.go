package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/cairnhq/cairn/session"
)

// RuleID is the id of the standing rule granted by the decision of
// interrupt in session: one decision grants at most one rule, so the id
// is the same on every process that records it.
func RuleID(sessionID, interruptID string) string {
	h := sha256.Sum256([]byte(sessionID + "\x00" + interruptID))
	return "rul_" + hex.EncodeToString(h[:10])
}

// grant checks decision i's standing rule grant (d.Rule) on the call c of
// frame f, which actor decides, and returns the rule to record with the
// decision; nil when the decision grants none.
func (s *stepper) grant(i int, d session.Decision, f *Frame, c *Call, actor session.Actor) (*session.Rule, error) {
	g := d.Rule
	if g == nil {
		return nil, nil
	}
	in := c.Interrupt
	bad := func(format string, args ...any) error {
		return &session.Error{Code: session.CodeInvalidRequest, Interrupt: d.InterruptID, Message: fmt.Sprintf("decisions[%d].rule: ", i) + fmt.Sprintf(format, args...)}
	}
	forbidden := func(format string, args ...any) error {
		return &session.Error{Code: session.CodeForbidden, Interrupt: d.InterruptID, Message: fmt.Sprintf("decisions[%d].rule: ", i) + fmt.Sprintf(format, args...)}
	}
	switch {
	case in.Kind != session.KindApproval || c.AskedApproval || in.InDoubt:
		return nil, bad("a standing rule decides the approval of a call as the model asks for it; %s %s is not one", in.Kind.Spec().Label, d.InterruptID)
	case d.Action != session.ActionApprove && d.Action != session.ActionReject:
		return nil, bad("only an approval or a rejection grants a standing rule")
	case d.Remember != "":
		return nil, bad("a decision either remembers (remember) or grants a standing rule (rule), not both")
	case len(d.Arguments) > 0 && string(d.Arguments) != "null":
		return nil, bad("a standing rule approves calls as they are asked; approve without edited arguments to grant one")
	case in.Required > 1 || in.Approvers != nil && in.Approvers.NotRequester:
		return nil, forbidden("%s needs several approvers or forbids its requester (four-eyes): one person cannot grant a standing rule for it", c.Tool)
	case actor.Override:
		return nil, forbidden("%s decides %s only by an admin's override: a standing rule cannot carry an override", actor.Who(), d.InterruptID)
	}
	var tool *Tool
	if a := s.m.agents[f.Agent]; a != nil {
		tool = s.toolOf(a, f, c.Tool)
	}
	if tool == nil || tool.Rules.Forbidden {
		return nil, forbidden("the configuration forbids standing rules for tool %q (tools.%s.standing_rules)", c.Tool, c.Tool)
	}
	scope := g.Scope
	if scope == "" {
		scope = session.ScopeAgent
	}
	if !scope.Valid() {
		return nil, bad("scope %q is not session, agent or tenant", g.Scope)
	}
	if g.If != "" {
		if len(g.If) > session.MaxRuleCondition {
			return nil, bad("the condition is %d bytes; at most %d", len(g.If), session.MaxRuleCondition)
		}
		if s.m.opts.RuleCondition == nil {
			return nil, bad("this runner evaluates no conditions; grant the rule without if")
		}
		v, err := decodeArgs(in.Arguments)
		var holds bool
		if err == nil {
			holds, err = guarded("the rule's condition", func() (bool, error) { return s.m.opts.RuleCondition(g.If, v) })
		}
		if err != nil {
			return nil, bad("if: %v (a CEL expression over args, e.g. args.environment == \"staging\")", err)
		}
		if !holds {
			return nil, bad("if: %q does not hold for this call's arguments; a rule granted from a call covers it", g.If)
		}
	}
	rule := &session.Rule{
		ID: RuleID(s.st.SessionID, d.InterruptID), Tool: c.Tool, Agent: f.Agent, Action: d.Action, If: g.If, Scope: scope,
		Session: s.st.SessionID, Interrupt: d.InterruptID, Tenant: s.st.Tenant, GrantedBy: actor, GrantedAt: s.now.UTC(),
	}
	if d.Action == session.ActionReject {
		rule.Reason = d.Reason
	}
	if scope == session.ScopeTenant {
		rule.Agent = ""
	}
	dur := tool.Rules.Max()
	if g.Duration != "" {
		d, unbounded, err := session.ParseRuleDuration(g.Duration)
		switch {
		case err != nil:
			return nil, bad("duration: %v", err)
		case unbounded && !tool.Rules.Unbounded:
			return nil, forbidden("duration: the configuration allows rules for %q to last at most %s (tools.%s.standing_rules.max_duration)", c.Tool, session.FormatRuleDuration(dur), c.Tool)
		case unbounded:
			dur = 0
		case d > dur:
			return nil, forbidden("duration: %s is longer than the %s the configuration allows for %q (tools.%s.standing_rules.max_duration)", g.Duration, session.FormatRuleDuration(dur), c.Tool, c.Tool)
		default:
			dur = d
		}
	}
	if dur > 0 {
		exp := s.now.Add(dur).UTC()
		rule.ExpiresAt = &exp
	}
	return rule, nil
}

// standingRule returns the standing rule that decides call c of frame f
// (on tool, with decoded arguments v), which would wait on interrupt in:
// one the step brought, live now, whose scope covers the call, whose
// condition holds, and whose grantor may decide in as it is (no
// override). A rejecting rule wins over an approving one. Nil: none.
func (s *stepper) standingRule(f *Frame, c *Call, tool *Tool, v any, in *session.Interrupt) *session.Rule {
	if len(s.rules) == 0 || tool.Rules.Forbidden || in.Required > 1 || in.Approvers != nil && in.Approvers.NotRequester {
		return nil
	}
	var approve *session.Rule
	for i := range s.rules {
		r := &s.rules[i]
		if !r.LiveAt(s.now) || !r.Covers(s.st.Tenant, s.st.SessionID, f.Agent, c.Tool) {
			continue
		}
		if r.Action != session.ActionApprove && r.Action != session.ActionReject {
			continue
		}
		if r.If != "" {
			if s.m.opts.RuleCondition == nil {
				continue
			}
			holds, err := guarded("the rule's condition", func() (bool, error) { return s.m.opts.RuleCondition(r.If, v) })
			if err != nil || !holds { // fail closed: a condition that cannot be evaluated matches nothing
				continue
			}
		}
		if override, err := s.m.opts.Authority.MayDecide(r.GrantedBy, s.st.Owner, in, r.Action); err != nil || override {
			continue
		}
		if r.Action == session.ActionReject {
			return r
		}
		if approve == nil {
			approve = r
		}
	}
	return approve
}
