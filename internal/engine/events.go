package engine

import (
	"encoding/json"
	"fmt"

	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/store"
)

// Event types. They are part of the outside contract: stored, streamed and
// documented in docs/http-api.md.
const (
	EventSessionStarted    = "session_started"
	EventUserMessage       = "user_message"
	EventModelResponse     = "model_response"
	EventApprovalRequested = "approval_requested"
	EventDecision          = "decision"
	EventToolStarted       = "tool_started"
	EventToolResult        = "tool_result"
	EventTurnPaused        = "turn_paused"
	EventTurnCompleted     = "turn_completed"
	EventTurnFailed        = "turn_failed"
)

// Event is one immutable entry of a session's log.
type Event = store.Event

// Payloads of the event types.
type (
	// SessionStarted opens a session: the root frame is created.
	SessionStarted struct {
		SessionID string         `json:"session_id"`
		Agent     string         `json:"agent"`
		Frame     string         `json:"frame"`
		Metadata  map[string]any `json:"metadata,omitempty"`
	}
	// UserMessage is a message from the user to the top frame; it starts a turn.
	UserMessage struct {
		Text string `json:"text"`
	}
	// ModelResponse is the assistant message of one model call.
	ModelResponse struct {
		Message model.Message `json:"message"`
		Usage   model.Usage   `json:"usage"`
	}
	// ApprovalRequested records that a call waits for a decision.
	ApprovalRequested struct {
		CallID    string    `json:"call_id"`
		Interrupt Interrupt `json:"interrupt"`
	}
	// DecisionMade records one decision and who made it.
	DecisionMade struct {
		InterruptID string          `json:"interrupt_id"`
		CallID      string          `json:"call_id"`
		Tool        string          `json:"tool"`
		Action      string          `json:"action"`
		Reason      string          `json:"reason,omitempty"`
		Arguments   json.RawMessage `json:"arguments,omitempty"`     // before
		NewArgs     json.RawMessage `json:"new_arguments,omitempty"` // after, when replaced
		Actor       Actor           `json:"actor"`
	}
	// ToolStarted is recorded durably before a tool runs.
	ToolStarted struct {
		CallID         string          `json:"call_id"`
		Tool           string          `json:"tool"`
		Arguments      json.RawMessage `json:"arguments"`
		IdempotencyKey string          `json:"idempotency_key"`
	}
	// ToolResult is the result of one call, as the model will see it.
	ToolResult struct {
		CallID  string `json:"call_id"`
		Tool    string `json:"tool"`
		Content string `json:"content"`
		IsError bool   `json:"is_error,omitempty"`
	}
	// TurnPaused records that the session waits for a person.
	TurnPaused struct {
		Interrupts []Interrupt `json:"interrupts"`
	}
	// TurnCompleted records the root agent's answer.
	TurnCompleted struct {
		Output string `json:"output"`
	}
	// TurnFailed records why a turn could not finish.
	TurnFailed struct {
		Error Failure `json:"error"`
	}
)

// decodePayload decodes an event's data into the payload of its type.
func decodePayload(ev *Event) (any, error) {
	var p any
	switch ev.Type {
	case EventSessionStarted:
		p = &SessionStarted{}
	case EventUserMessage:
		p = &UserMessage{}
	case EventModelResponse:
		p = &ModelResponse{}
	case EventApprovalRequested:
		p = &ApprovalRequested{}
	case EventDecision:
		p = &DecisionMade{}
	case EventToolStarted:
		p = &ToolStarted{}
	case EventToolResult:
		p = &ToolResult{}
	case EventTurnPaused:
		p = &TurnPaused{}
	case EventTurnCompleted:
		p = &TurnCompleted{}
	case EventTurnFailed:
		p = &TurnFailed{}
	default:
		return nil, fmt.Errorf("event %d: unknown type %q", ev.Seq, ev.Type)
	}
	if err := json.Unmarshal(ev.Data, p); err != nil {
		return nil, fmt.Errorf("event %d (%s): %w", ev.Seq, ev.Type, err)
	}
	return p, nil
}

// Replay rebuilds a session's state from its log. Events must be in seq order
// starting at 1.
func Replay(events []Event) (*State, error) {
	st := &State{}
	for i := range events {
		ev := &events[i]
		if ev.Seq != st.Seq+1 {
			return nil, fmt.Errorf("event log: expected seq %d, found %d", st.Seq+1, ev.Seq)
		}
		p, err := decodePayload(ev)
		if err != nil {
			return nil, fmt.Errorf("event log: %w", err)
		}
		if err := apply(st, ev, p); err != nil {
			return nil, fmt.Errorf("event log: %w", err)
		}
	}
	return st, nil
}

// apply is the projection: the only place state changes.
func apply(st *State, ev *Event, payload any) error {
	st.Seq = ev.Seq
	st.UpdatedAt = ev.Time
	frame := st.frame(ev.Frame)
	needFrame := func() error {
		if frame == nil {
			return fmt.Errorf("event %d (%s): unknown frame %q", ev.Seq, ev.Type, ev.Frame)
		}
		return nil
	}
	switch p := payload.(type) {
	case *SessionStarted:
		st.SessionID = p.SessionID
		st.Agent = p.Agent
		st.Metadata = p.Metadata
		st.CreatedAt = ev.Time
		st.Status = StatusRunning
		st.Frames = []*Frame{{ID: p.Frame, Agent: p.Agent, Mode: ModeMain}}
	case *UserMessage:
		if err := needFrame(); err != nil {
			return err
		}
		frame.Messages = append(frame.Messages, model.Message{Role: model.RoleUser, Content: p.Text})
		frame.Iterations = 0
		st.Status = StatusRunning
		st.Output = ""
		st.Error = nil
	case *ModelResponse:
		if err := needFrame(); err != nil {
			return err
		}
		frame.Messages = append(frame.Messages, p.Message)
		frame.Iterations++
		st.Usage.InputTokens += p.Usage.InputTokens
		st.Usage.OutputTokens += p.Usage.OutputTokens
		frame.Calls = nil
		for _, tc := range p.Message.ToolCalls {
			frame.Calls = append(frame.Calls, &Call{ID: tc.ID, Tool: tc.Name, Args: tc.Arguments, Origin: ev.Seq, State: CallNew})
		}
	case *ApprovalRequested:
		c, err := st.call(ev, frame, p.CallID)
		if err != nil {
			return err
		}
		in := p.Interrupt
		c.State = CallAwaiting
		c.Interrupt = &in
	case *DecisionMade:
		c, err := st.call(ev, frame, p.CallID)
		if err != nil {
			return err
		}
		c.Interrupt = nil
		st.Status = StatusRunning
		if p.Action == ActionApprove {
			c.State = CallApproved
			if len(p.NewArgs) > 0 {
				c.Args = string(p.NewArgs)
			}
		}
		// A rejection is followed by the tool_result the model sees.
	case *ToolStarted:
		c, err := st.call(ev, frame, p.CallID)
		if err != nil {
			return err
		}
		c.State = CallStarted
		c.Args = string(p.Arguments)
	case *ToolResult:
		c, err := st.call(ev, frame, p.CallID)
		if err != nil {
			return err
		}
		c.State, c.Result, c.IsError, c.Interrupt = CallDone, p.Content, p.IsError, nil
		flushResults(frame)
	case *TurnPaused:
		st.Status = StatusPaused
	case *TurnCompleted:
		st.Status = StatusCompleted
		st.Output = p.Output
	case *TurnFailed:
		st.Status = StatusFailed
		f := p.Error
		st.Error = &f
	default:
		return fmt.Errorf("event %d: no projection for %T", ev.Seq, payload)
	}
	return nil
}

// flushResults moves the results into the history, in the model's call order,
// once every call of the assistant message has one.
func flushResults(f *Frame) {
	for _, c := range f.Calls {
		if c.State != CallDone {
			return
		}
	}
	for _, c := range f.Calls {
		f.Messages = append(f.Messages, model.Message{Role: model.RoleTool, ToolCallID: c.ID, Content: c.Result, IsError: c.IsError})
	}
	f.Calls = nil
}

func (s *State) frame(id string) *Frame {
	for _, f := range s.Frames {
		if f.ID == id {
			return f
		}
	}
	return nil
}

func (s *State) call(ev *Event, f *Frame, callID string) (*Call, error) {
	if f == nil {
		return nil, fmt.Errorf("event %d (%s): unknown frame %q", ev.Seq, ev.Type, ev.Frame)
	}
	for _, c := range f.Calls {
		if c.ID == callID {
			return c, nil
		}
	}
	return nil, fmt.Errorf("event %d (%s): frame %q has no pending call %q", ev.Seq, ev.Type, f.ID, callID)
}
