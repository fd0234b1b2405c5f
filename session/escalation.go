package session

import (
	"fmt"
	"slices"
	"time"
)

// Escalation is what a tool's config says happens while an approval (or
// an external wait) waits, and when its deadline passes: reminders,
// escalations to other approver groups, and the outcome at expiry. The
// engine resolves it when the interrupt is asked (Interrupt.Schedule and
// Interrupt.OnExpiry), so the schedule a person sees is the one that
// fires, whatever the config says later. See docs/escalation.md.
type Escalation struct {
	Steps []EscalationStep
	// OnExpiry is the outcome at the deadline; nil: reject with "approval
	// expired".
	OnExpiry *OnExpiry
}

// EscalationStep is one step of a schedule, measured from when the
// interrupt was asked (After) or before its deadline (BeforeExpiry).
type EscalationStep struct {
	After        time.Duration
	BeforeExpiry time.Duration
	// Remind announces the interrupt again (webhook interrupt.reminder,
	// with fresh action links; a badge in the inbox).
	Remind bool
	// EscalateTo are approver groups to add to who may decide (or, with
	// HandOver, to hand the decision to: they replace the groups).
	EscalateTo []string
	HandOver   bool
	// Rule names where the step was configured (tools.refund.escalation[1]),
	// as the events it fires record it.
	Rule string
}

// ScheduledStep is a step of an interrupt's schedule, resolved: when it
// fires, what it does, and when it fired (nil: not yet).
type ScheduledStep struct {
	At         time.Time  `json:"at"`
	Remind     bool       `json:"remind,omitempty"`
	EscalateTo []string   `json:"escalate_to,omitempty"`
	HandOver   bool       `json:"hand_over,omitempty"`
	Rule       string     `json:"rule"`
	FiredAt    *time.Time `json:"fired_at,omitempty"`
}

// ExpiryAction is what happens when an approval's deadline passes with no
// decision.
type ExpiryAction string

// Outcomes at expiry.
const (
	// ExpiryReject rejects the call; the model sees the reason.
	ExpiryReject ExpiryAction = "reject"
	// ExpiryApprove approves the call (a rule's CEL condition held for
	// its arguments): it runs.
	ExpiryApprove ExpiryAction = "approve"
	// ExpiryFail fails the session's turn (error code approval_expired).
	ExpiryFail ExpiryAction = "fail"
	// ExpiryAsk asks another question instead: the call becomes an input
	// interrupt whose answer the model gets as the tool's result.
	ExpiryAsk ExpiryAction = "ask"
)

// OnExpiry is the outcome at an approval's deadline, and the rule that
// chose it.
type OnExpiry struct {
	Action ExpiryAction `json:"action"`
	// Reason is what the model is told on reject (default "approval
	// expired").
	Reason string `json:"reason,omitempty"`
	// Question is what ask asks.
	Question string `json:"question,omitempty"`
	Rule     string `json:"rule,omitempty"`
}

// Check says what is wrong with o, if anything.
func (o *OnExpiry) Check() error {
	switch o.Action {
	case ExpiryReject, ExpiryApprove, ExpiryFail:
	case ExpiryAsk:
		if o.Question == "" {
			return fmt.Errorf("on_expiry ask needs a question")
		}
	default:
		return fmt.Errorf("on_expiry action %q is none of %v", o.Action, AllExpiryActions())
	}
	return nil
}

// Schedule resolves the steps for an interrupt asked at asked that
// expires at expires (nil: no deadline; steps measured before it are
// left out then). Steps already due are kept: they fire at the next sweep.
func (e *Escalation) Schedule(asked time.Time, expires *time.Time) []ScheduledStep {
	if e == nil {
		return nil
	}
	var out []ScheduledStep
	for _, s := range e.Steps {
		at := asked.Add(s.After)
		if s.BeforeExpiry > 0 {
			if expires == nil {
				continue
			}
			at = expires.Add(-s.BeforeExpiry)
		}
		out = append(out, ScheduledStep{At: at.UTC(), Remind: s.Remind, EscalateTo: s.EscalateTo, HandOver: s.HandOver, Rule: s.Rule})
	}
	return out
}

// EscalationFired records a step of an interrupt's schedule that fired
// (event interrupt_reminded or interrupt_escalated).
type EscalationFired struct {
	InterruptID string `json:"interrupt_id"`
	CallID      string `json:"call_id"`
	Tool        string `json:"tool"`
	// Step is the step's index in Interrupt.Schedule.
	Step       int      `json:"step"`
	Remind     bool     `json:"remind,omitempty"`
	EscalateTo []string `json:"escalate_to,omitempty"`
	HandOver   bool     `json:"hand_over,omitempty"`
	Rule       string   `json:"rule"`
	// Interrupt is the interrupt as the step leaves it (who may decide
	// it, its schedule so far), for readers: the engine's state does not
	// read it.
	Interrupt *Interrupt `json:"interrupt,omitempty"`
}

func (*EscalationFired) isPayload() {}

// Fire is in once step i of its schedule fired at at: the step marked,
// and an escalation's groups added to who may approve it (or, with
// HandOver, instead of its groups). With no groups to restrict it, anyone
// who may approve still may: the groups are who is told.
func (in Interrupt) Fire(i int, at time.Time) Interrupt {
	in.Schedule = append([]ScheduledStep(nil), in.Schedule...)
	at = at.UTC()
	step := &in.Schedule[i]
	step.FiredAt = &at
	if len(step.EscalateTo) == 0 {
		return in
	}
	var ap Approvers
	if in.Approvers != nil {
		ap = *in.Approvers
	}
	switch {
	case step.HandOver:
		ap.Groups = append([]string(nil), step.EscalateTo...)
	case len(ap.Groups) > 0:
		groups := append(append([]string(nil), ap.Groups...), step.EscalateTo...)
		slices.Sort(groups)
		ap.Groups = slices.Compact(groups)
	}
	if ap.Restricts() {
		in.Approvers = &ap
	}
	return in
}
