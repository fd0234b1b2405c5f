package cairn

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/session"
)

// EscalationStep is one step of an approval's schedule: after a time
// since it was asked (After) or before its deadline (BeforeExpiry), remind
// the people who may decide it (Remind: webhook interrupt.reminder with
// fresh action links, a badge in the inbox) and/or escalate to other
// approver groups (EscalateTo: added to who may decide, or, with
// HandOver, instead of them; webhook interrupt.escalated). Rule names it
// in the events it fires (default "tool NAME escalation[i]").
type EscalationStep = session.EscalationStep

// ExpiryAction is what happens at an approval's deadline: ExpiryReject,
// ExpiryApprove, ExpiryFail or ExpiryAsk.
type ExpiryAction = session.ExpiryAction

// The outcomes at an approval's deadline.
const (
	ExpiryReject  = session.ExpiryReject
	ExpiryApprove = session.ExpiryApprove
	ExpiryFail    = session.ExpiryFail
	ExpiryAsk     = session.ExpiryAsk
)

// Escalation is when an undecided approval (or an external wait) reminds
// and escalates, and what happens at its deadline (Tool.ApprovalTTL, or
// Wait.Timeout). See docs/escalation.md.
type Escalation struct {
	Steps []EscalationStep
	// OnExpiry is the outcome at the deadline of an approval; nil:
	// rejected with "approval expired". External waits have theirs in
	// Wait.OnTimeout.
	OnExpiry *ExpiryRule
}

// ExpiryRule is the outcome at an approval's deadline.
type ExpiryRule struct {
	Action ExpiryAction
	// Reason is what the model is told on reject (and the session's error
	// on fail); default "approval expired".
	Reason string
	// Question is what ExpiryAsk asks: a new approval, with no deadline,
	// for the same people.
	Question string
	// If, with ExpiryApprove, is a condition over the call's arguments
	// (ApprovalIf, or the configuration's CEL): the call is approved at
	// expiry only if it holds, else rejected with Reason. A condition that
	// fails to evaluate rejects (fail closed).
	If Policy
	// Rule names it in the decision it records (default "tool NAME
	// on_expiry").
	Rule string
}

// check refuses an escalation that could not fire as written.
func (e *Escalation) check() error {
	if e == nil {
		return nil
	}
	for i, s := range e.Steps {
		switch {
		case s.After < 0 || s.BeforeExpiry < 0:
			return fmt.Errorf("step %d: After and BeforeExpiry cannot be negative", i)
		case s.After > 0 && s.BeforeExpiry > 0:
			return fmt.Errorf("step %d: give After or BeforeExpiry, not both", i)
		case !s.Remind && len(s.EscalateTo) == 0:
			return fmt.Errorf("step %d does nothing: set Remind, EscalateTo or both", i)
		case s.HandOver && len(s.EscalateTo) == 0:
			return fmt.Errorf("step %d hands the decision over to no group: set EscalateTo", i)
		}
		if err := checkApprovers(&Approvers{Groups: s.EscalateTo}); err != nil {
			return fmt.Errorf("step %d: EscalateTo: %w", i, err)
		}
	}
	if o := e.OnExpiry; o != nil {
		if err := (&session.OnExpiry{Action: o.Action, Question: o.Question}).Check(); err != nil {
			return err
		}
		if !o.If.IsNever() && o.Action != ExpiryApprove {
			return fmt.Errorf("OnExpiry.If is the condition of approve, not of %s", o.Action)
		}
	}
	return nil
}

// compile is e for the engine, its unnamed rules named after where it
// was given ("tool refund ", "tool refund approval_rules[0] ", "agent
// main ").
func (e *Escalation) compile(where string) *compiledEscalation {
	if e == nil {
		return nil
	}
	c := &compiledEscalation{steps: slices.Clone(e.Steps)}
	for i := range c.steps {
		c.steps[i].Rule = cmp.Or(c.steps[i].Rule, fmt.Sprintf("%sescalation[%d]", where, i))
	}
	if o := e.OnExpiry; o != nil {
		r := *o
		r.Rule = cmp.Or(r.Rule, where+"on_expiry")
		c.onExpiry = &r
	}
	return c
}

type compiledEscalation struct {
	steps    []EscalationStep
	onExpiry *ExpiryRule
}

// resolve is the schedule and outcome for a call with these arguments.
func (c *compiledEscalation) resolve(a engine.ToolArgs) *session.Escalation {
	if c == nil {
		return nil
	}
	out := &session.Escalation{Steps: c.steps}
	if r := c.onExpiry; r != nil {
		o := &session.OnExpiry{Action: r.Action, Reason: r.Reason, Question: r.Question, Rule: r.Rule}
		if r.Action == ExpiryApprove && !r.If.IsNever() {
			// Decided now, from the arguments the approval is asked about:
			// they do not change while it waits.
			if holds, err := r.If.Asks(a.Raw); err != nil || !holds {
				o.Action = ExpiryReject
				if err != nil {
					o.Reason = strings.TrimSpace(o.Reason + fmt.Sprintf(" (the condition of %s could not be evaluated: %v)", r.Rule, err))
				}
			}
		}
		out.OnExpiry = o
	}
	return out
}

// escalationOf is the engine's rule for a call's escalation: that of the
// first approval rule whose If holds and that has one, else def (named
// after where: "tool refund ").
func escalationOf(where string, def *Escalation, rules []ApprovalRule) func(engine.ToolArgs) (*session.Escalation, error) {
	tool := def.compile(where)
	perRule := make([]*compiledEscalation, len(rules))
	for i := range rules {
		perRule[i] = rules[i].Escalation.compile(fmt.Sprintf("%sapproval_rules[%d] ", where, i))
	}
	rules = slices.Clone(rules)
	return func(a engine.ToolArgs) (*session.Escalation, error) {
		for i := range rules {
			if holds, err := rules[i].If.Asks(a.Raw); holds || err != nil {
				if perRule[i] != nil {
					return perRule[i].resolve(a), nil
				}
				break
			}
		}
		return tool.resolve(a), nil
	}
}
