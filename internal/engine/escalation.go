package engine

import (
	"cmp"
	"encoding/json"
	"fmt"
	"time"

	"github.com/cairnhq/cairn/session"
)

// schedule resolves what tool's escalation says for interrupt in, asked
// now with these arguments: its steps (from now, or before in.ExpiresAt)
// and its outcome at expiry. An escalation rule that fails leaves the
// interrupt without a schedule: a reminder that cannot be computed must
// not keep a person from deciding.
func (s *stepper) schedule(tool *Tool, args ToolArgs, in *session.Interrupt) {
	if tool == nil || tool.Escalation == nil {
		return
	}
	esc, err := guarded("the escalation rule", func() (*session.Escalation, error) { return tool.Escalation(args) })
	if err != nil || esc == nil {
		return
	}
	in.Schedule = esc.Schedule(s.now, in.ExpiresAt)
	if esc.OnExpiry != nil && in.Kind == session.KindApproval {
		o := *esc.OnExpiry
		in.OnExpiry = &o
	}
}

// fireSchedule records the steps of the pending interrupts' schedules
// that are due, in order, and returns how many fired.
func (s *stepper) fireSchedule() int {
	fired := 0
	for _, f := range s.st.Ordered() {
		for _, c := range f.Calls {
			in := c.Interrupt
			if c.State != CallAwaiting || in == nil {
				continue
			}
			for i, step := range in.Schedule {
				if step.FiredAt != nil || s.now.Before(step.At) {
					continue
				}
				typ := session.EventInterruptReminded
				if len(step.EscalateTo) > 0 {
					typ = session.EventInterruptEscalated
				}
				after := in.Fire(i, s.now)
				s.emit(typ, f, &session.EscalationFired{InterruptID: in.ID, CallID: c.ID, Tool: c.Tool, Step: i,
					Remind: step.Remind, EscalateTo: step.EscalateTo, HandOver: step.HandOver, Rule: step.Rule, Interrupt: &after})
				in = c.Interrupt // the step fired: the next one reads it
				fired++
			}
		}
	}
	return fired
}

// projectEscalationFired marks a step of an interrupt's schedule fired;
// an escalation adds its groups to who may approve, or hands the
// decision to them (session.Interrupt.Fire).
func projectEscalationFired(p *session.EscalationFired, st *State, ev *session.Event, frame *Frame) error {
	c, err := st.call(ev, frame, p.CallID)
	if err != nil {
		return err
	}
	if c.State != CallAwaiting || c.Interrupt == nil || c.Interrupt.ID != p.InterruptID || p.Step < 0 || p.Step >= len(c.Interrupt.Schedule) {
		return fmt.Errorf("event %d: step %d of %q's schedule fired, but call %q does not wait on it", ev.Seq, p.Step, p.InterruptID, p.CallID)
	}
	in := c.Interrupt.Fire(p.Step, ev.Time) // a copy: the earlier one may be shared with a copy of the state
	c.Interrupt = &in
	return nil
}

// expireApproval carries out in's outcome at its deadline: reject (the
// default), approve, fail the turn, or ask again. It reports whether the
// turn failed (nothing more moves then).
func (s *stepper) expireApproval(f *Frame, c *Call, in *session.Interrupt) bool {
	o := session.OnExpiry{Action: session.ExpiryReject}
	if in.OnExpiry != nil {
		o = *in.OnExpiry
	}
	expired := fmt.Sprintf("nobody decided on this call by %s", in.ExpiresAt.UTC().Format(time.RFC3339))
	decision := &DecisionMade{InterruptID: in.ID, Kind: in.Kind, CallID: c.ID, Tool: c.Tool, Action: session.ActionReject,
		Reason: cmp.Or(o.Reason, "approval expired"), Arguments: json.RawMessage(c.Args), ArgsDigest: digest(c.Args),
		Actor: session.Actor{Name: "cairn", Role: "expiry"}, Rule: o.Rule}
	switch o.Action {
	case session.ExpiryApprove:
		decision.Action, decision.Reason = session.ActionApprove, "approved at expiry by rule "+o.Rule
		s.emit(session.EventDecision, f, decision)
	case session.ExpiryAsk:
		decision.Reason = "approval expired; asked again: " + o.Question
		s.emit(session.EventDecision, f, decision)
		again := session.Interrupt{
			ID: derivedID(s.st.scope(), f.ID, c.Origin, c.ID, "expired/"+in.ID), Kind: session.KindApproval,
			Path: in.Path, Tool: c.Tool, Arguments: json.RawMessage(c.Args), Message: o.Question,
			Approvers: in.Approvers, Required: in.Required, RequestedBy: in.RequestedBy,
		}
		s.emit(session.EventApprovalRequested, f, &InterruptRequested{CallID: c.ID, Interrupt: again})
	case session.ExpiryFail:
		s.emit(session.EventDecision, f, decision)
		s.emit(session.EventTurnFailed, s.st.Root(), &TurnFailed{Error: session.Failure{Code: "approval_expired",
			Message: fmt.Sprintf("the approval of tool %s expired (%s) and rule %s fails the session", c.Tool, expired, o.Rule)}})
		return true
	case session.ExpiryReject:
		s.emit(session.EventDecision, f, decision)
		content := fmt.Sprintf("approval expired: %s, so it did not run", expired)
		if o.Reason != "" {
			content = fmt.Sprintf("approval expired (%s), so it did not run: %s", expired, o.Reason)
		}
		s.emit(session.EventToolResult, f, &ToolResult{CallID: c.ID, Tool: c.Tool, IsError: true, Content: content})
	}
	return false
}
