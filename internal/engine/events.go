package engine

import (
	"encoding/json"
	"fmt"

	"github.com/cairnhq/cairn/session"
)

// decodePayload decodes an event's data into the payload of its type.
func decodePayload(ev *session.Event) (eventData, error) {
	var p eventData
	switch ev.Type {
	case session.EventSessionStarted:
		p = &SessionStarted{}
	case session.EventUserMessage:
		p = &UserMessage{}
	case session.EventModelResponse:
		p = &ModelResponse{}
	case session.EventApprovalRequested, session.EventInputRequested:
		p = &InterruptRequested{}
	case session.EventDecision:
		p = &DecisionMade{}
	case session.EventToolStarted:
		p = &ToolStarted{}
	case session.EventToolResult:
		p = &ToolResult{}
	case session.EventFramePushed:
		p = &FramePushed{}
	case session.EventFramePopped:
		p = &FramePopped{}
	case session.EventHandoff:
		p = &Handoff{}
	case session.EventAgentMessage:
		p = &AgentMessage{}
	case session.EventTurnPaused:
		p = &TurnPaused{}
	case session.EventTurnCompleted:
		p = &TurnCompleted{}
	case session.EventTurnFailed:
		p = &TurnFailed{}
	case session.EventTurnCancelled:
		p = &TurnCancelled{}
	case session.EventTurnInterrupted:
		p = &TurnInterrupted{}
	default:
		return nil, fmt.Errorf("event %d: unknown type %q", ev.Seq, ev.Type)
	}
	if err := json.Unmarshal(ev.Data, p); err != nil {
		return nil, fmt.Errorf("event %d (%s): %w", ev.Seq, ev.Type, err)
	}
	return p, nil
}

// Payload is the data of events[i]: payloads[i] when the engine gave it
// (Step.Payloads), else decoded from the event (a *DecisionMade for a
// decision, a *TurnPaused for turn_paused, …). Read it; never change it.
func Payload(events []session.Event, payloads []any, i int) (any, error) {
	if i < len(payloads) && payloads[i] != nil {
		return payloads[i], nil
	}
	return decodePayload(&events[i])
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
		p, err := decodePayload(ev)
		if err != nil {
			return fmt.Errorf("event log: %w", err)
		}
		if err := apply(st, ev, p); err != nil {
			return fmt.Errorf("event log: %w", err)
		}
	}
	return nil
}

// eventData is the payload of an event type: it knows how the event changes
// a session's state. project is the only place where state changes.
type eventData interface {
	project(st *State, ev *session.Event, frame *Frame) error
}

// apply projects one event onto st.
func apply(st *State, ev *session.Event, data eventData) error {
	if _, ok := data.(*SessionStarted); !ok && st.Seq == 0 {
		return fmt.Errorf("event %d (%s): the log does not start with %s", ev.Seq, ev.Type, session.EventSessionStarted)
	}
	st.Seq = ev.Seq
	st.UpdatedAt = ev.Time
	return data.project(st, ev, st.frame(ev.Frame))
}

func noFrame(ev *session.Event) error {
	return fmt.Errorf("event %d (%s): unknown frame %q", ev.Seq, ev.Type, ev.Frame)
}
