package engine

import (
	"fmt"

	"github.com/cairnhq/cairn/session"
)

// Payload is the data of events[i]: payloads[i] when the engine gave it
// (Step.Payloads), else decoded from the event (a *DecisionMade for a
// decision, a *TurnPaused for turn_paused, …). Read it; never change it.
func Payload(events []session.Event, payloads []any, i int) (any, error) {
	if i < len(payloads) && payloads[i] != nil {
		return payloads[i], nil
	}
	return session.DecodeEvent(events[i])
}

// Replay rebuilds a session's state from its log. Events must be in seq order
// starting at 1.
func Replay(events []session.Event) (*State, error) {
	st := &State{}
	if err := applyLog(st, events); err != nil {
		return nil, err
	}
	return st, nil
}

// applyLog applies events that must follow st's seq without a gap.
func applyLog(st *State, events []session.Event) error {
	for i := range events {
		ev := &events[i]
		if ev.Seq != st.Seq+1 {
			return fmt.Errorf("event log: expected seq %d, found %d", st.Seq+1, ev.Seq)
		}
		p, err := session.DecodeEvent(*ev)
		if err != nil {
			return fmt.Errorf("event log: %w", err)
		}
		if err := apply(st, ev, p); err != nil {
			return fmt.Errorf("event log: %w", err)
		}
	}
	return nil
}

// eventData is the payload of an event type (package session's types).
type eventData = session.Payload

// project changes st by one event: the only place where state changes.
func project(st *State, ev *session.Event, frame *Frame, data eventData) error {
	switch p := data.(type) {
	case *SessionStarted:
		return projectSessionStarted(p, st, ev, frame)
	case *UserMessage:
		return projectUserMessage(p, st, ev, frame)
	case *ModelResponse:
		return projectModelResponse(p, st, ev, frame)
	case *InterruptRequested:
		return projectInterruptRequested(p, st, ev, frame)
	case *WaitExpired:
		return projectWaitExpired(p, st, ev, frame)
	case *DecisionMade:
		return projectDecisionMade(p, st, ev, frame)
	case *ApprovalAdded:
		return projectApprovalAdded(p, st, ev, frame)
	case *session.EscalationFired:
		return projectEscalationFired(p, st, ev, frame)
	case *ToolStarted:
		return projectToolStarted(p, st, ev, frame)
	case *ToolResult:
		return projectToolResult(p, st, ev, frame)
	case *FramePushed:
		return projectFramePushed(p, st, ev, frame)
	case *FramePopped:
		return projectFramePopped(p, st, ev, frame)
	case *Handoff:
		return projectHandoff(p, st, ev, frame)
	case *AgentMessage:
		return projectAgentMessage(p, st, ev, frame)
	case *TurnPaused:
		return projectTurnPaused(p, st, ev, frame)
	case *ReviewRequested:
		return projectReviewRequested(p, st, ev, frame)
	case *OutputRejected:
		return projectOutputRejected(p, st, ev, frame)
	case *TurnCompleted:
		return projectTurnCompleted(p, st, ev, frame)
	case *TurnFailed:
		return projectTurnFailed(p, st, ev, frame)
	case *TurnCancelled:
		return projectTurnCancelled(p, st, ev, frame)
	case *TurnInterrupted:
		return projectTurnInterrupted(p, st, ev, frame)
	case *SessionForked:
		return projectSessionForked(p, st, ev, frame)
	case *DefinitionChanged:
		st.Definition = p.To
		return nil
	}
	return fmt.Errorf("event %d (%s): no projection for %T", ev.Seq, ev.Type, data)
}

// apply projects one event onto st.
func apply(st *State, ev *session.Event, data eventData) error {
	if _, ok := data.(*SessionStarted); !ok && st.Seq == 0 {
		return fmt.Errorf("event %d (%s): the log does not start with %s", ev.Seq, ev.Type, session.EventSessionStarted)
	}
	st.Seq = ev.Seq
	st.UpdatedAt = ev.Time
	st.Head = ev.Hash // a replayed event's; emit sets a new one's after
	return project(st, ev, st.frame(ev.Frame), data)
}

func noFrame(ev *session.Event) error {
	return fmt.Errorf("event %d (%s): unknown frame %q", ev.Seq, ev.Type, ev.Frame)
}
