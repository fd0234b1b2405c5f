package engine

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/session"
)

// Payloads of the event types.
type (
	// SessionStarted opens a session: the root frame is created.
	SessionStarted struct {
		SessionID string         `json:"session_id"`
		Agent     string         `json:"agent"`
		Frame     string         `json:"frame"`
		Metadata  map[string]any `json:"metadata,omitempty"`
		Owner     string         `json:"owner,omitempty"`
	}
	// UserMessage is a message from the user to a frame (the top of the stack).
	UserMessage struct {
		Text string `json:"text"`
	}
	// ModelResponse is the assistant message of one model call.
	ModelResponse struct {
		Message model.Message `json:"message"`
		Usage   model.Usage   `json:"usage"`
	}
	// InterruptRequested records that a call waits for a person: a decision
	// (approval_requested) or an answer (input_requested).
	InterruptRequested struct {
		CallID    string            `json:"call_id"`
		Interrupt session.Interrupt `json:"interrupt"`
	}
	// DecisionMade records one decision and who made it.
	DecisionMade struct {
		InterruptID string          `json:"interrupt_id"`
		Kind        string          `json:"kind"`
		CallID      string          `json:"call_id"`
		Tool        string          `json:"tool"`
		Action      string          `json:"action"`
		Reason      string          `json:"reason,omitempty"`
		Text        string          `json:"text,omitempty"`          // answer
		Arguments   json.RawMessage `json:"arguments,omitempty"`     // before
		NewArgs     json.RawMessage `json:"new_arguments,omitempty"` // after, when replaced
		// ArgsDigest and NewArgsDigest are SHA-256 (hex) of the arguments
		// before and after, for audit trails that keep digests only.
		ArgsDigest    string        `json:"arguments_sha256,omitempty"`
		NewArgsDigest string        `json:"new_arguments_sha256,omitempty"`
		Remember      string        `json:"remember,omitempty"`
		Actor         session.Actor `json:"actor"`
	}
	// ToolStarted is recorded durably before a tool runs.
	ToolStarted struct {
		CallID         string          `json:"call_id"`
		Tool           string          `json:"tool"`
		Arguments      json.RawMessage `json:"arguments"`
		IdempotencyKey string          `json:"idempotency_key"`
		Answers        []string        `json:"answers,omitempty"`
	}
	// ToolResult is the result of one call, as the model will see it.
	ToolResult struct {
		CallID  string `json:"call_id"`
		Tool    string `json:"tool"`
		Content string `json:"content"`
		IsError bool   `json:"is_error,omitempty"`
	}
	// FramePushed records a child frame starting on a call of its parent.
	FramePushed struct {
		Frame      string `json:"frame"`
		Agent      string `json:"agent"`
		Mode       string `json:"mode"`
		Parent     string `json:"parent"`
		ParentCall string `json:"parent_call"`
		Input      string `json:"input"`
	}
	// FramePopped records a child frame ending; its result answers the parent's call.
	FramePopped struct {
		Frame   string `json:"frame"`
		Reason  string `json:"reason"` // completed | failed | cancelled
		Result  string `json:"result"`
		IsError bool   `json:"is_error,omitempty"`
	}
	// Handoff records a frame replaced by another agent's frame, which keeps
	// the conversation, the parent link and the mode.
	Handoff struct {
		From   string `json:"from"`
		To     string `json:"to"`
		Agent  string `json:"agent"`
		CallID string `json:"call_id"`
	}
	// AgentMessage records an interactive agent's text to the user; the
	// frame then waits for the user's reply.
	AgentMessage struct {
		Text string `json:"text"`
	}
	// TurnPaused records that the session waits for a person.
	TurnPaused struct {
		Interrupts []session.Interrupt `json:"interrupts"`
	}
	// TurnCompleted records the root agent's answer.
	TurnCompleted struct {
		Output string `json:"output"`
	}
	// TurnFailed records why a turn could not finish.
	TurnFailed struct {
		Error session.Failure `json:"error"`
	}
	// TurnCancelled records that the user cancelled the whole turn.
	TurnCancelled struct {
		Reason string `json:"reason,omitempty"`
	}
	// TurnInterrupted records that a runner stopped driving the turn before
	// its end and released the session; it stays running until taken over.
	TurnInterrupted struct {
		Reason string `json:"reason"`
	}
)

// Pop reasons.
const (
	PopCompleted = "completed"
	PopFailed    = "failed"
	PopCancelled = "cancelled"
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

// removeFrame removes f and every frame below it.
func (s *State) removeFrame(f *Frame) {
	doomed := map[string]bool{f.ID: true}
	for changed := true; changed; {
		changed = false
		for _, g := range s.Frames {
			if !doomed[g.ID] && doomed[g.Parent] {
				doomed[g.ID], changed = true, true
			}
		}
	}
	s.Frames = slices.DeleteFunc(s.Frames, func(g *Frame) bool { return doomed[g.ID] })
}

func (s *State) frame(id string) *Frame {
	for _, f := range s.Frames {
		if f.ID == id {
			return f
		}
	}
	return nil
}

func (s *State) call(ev *session.Event, f *Frame, callID string) (*Call, error) {
	if f == nil {
		return nil, fmt.Errorf("event %d (%s): unknown frame %q", ev.Seq, ev.Type, ev.Frame)
	}
	if c := f.call(callID); c != nil {
		return c, nil
	}
	return nil, fmt.Errorf("event %d (%s): frame %q has no pending call %q", ev.Seq, ev.Type, f.ID, callID)
}

func (f *Frame) call(id string) *Call {
	for _, c := range f.Calls {
		if c.ID == id {
			return c
		}
	}
	return nil
}
func (p *SessionStarted) project(st *State, ev *session.Event, frame *Frame) error {
	if st.Seq != 1 {
		return fmt.Errorf("event %d: %s after the start", ev.Seq, ev.Type)
	}
	st.SessionID, st.Agent, st.Metadata, st.Owner, st.CreatedAt = p.SessionID, p.Agent, p.Metadata, p.Owner, ev.Time
	st.Status = session.StatusRunning
	st.frames++
	st.Frames = []*Frame{{ID: p.Frame, Agent: p.Agent, Mode: ModeMain}}
	return nil
}

func (p *UserMessage) project(st *State, ev *session.Event, frame *Frame) error {
	if frame == nil {
		return noFrame(ev)
	}
	frame.Messages = append(frame.Messages, model.Message{Role: model.RoleUser, Content: p.Text})
	frame.Iterations, frame.Said, frame.SaidSeq = 0, "", 0
	st.Status, st.Output, st.Error = session.StatusRunning, "", nil
	return nil
}

func (p *ModelResponse) project(st *State, ev *session.Event, frame *Frame) error {
	if frame == nil {
		return noFrame(ev)
	}
	frame.Messages = append(frame.Messages, p.Message)
	frame.Iterations++
	st.Usage.InputTokens += p.Usage.InputTokens
	st.Usage.OutputTokens += p.Usage.OutputTokens
	if id, dup := duplicateCallID(p.Message.ToolCalls); dup {
		return fmt.Errorf("event %d: two tool calls share the id %q (the engine records unique ids)", ev.Seq, id)
	}
	frame.Calls = nil
	for _, tc := range p.Message.ToolCalls {
		// Canonical here too, so a log recorded before replies were
		// normalised replays to what the engine acts on.
		frame.Calls = append(frame.Calls, &Call{ID: tc.ID, Tool: tc.Name, Args: canonicalArgs(tc.Arguments), Origin: ev.Seq, State: CallNew})
	}
	return nil
}

func (p *InterruptRequested) project(st *State, ev *session.Event, frame *Frame) error {
	c, err := st.call(ev, frame, p.CallID)
	if err != nil {
		return err
	}
	in := p.Interrupt
	c.State, c.Interrupt = CallAwaiting, &in
	return nil
}

func (p *DecisionMade) project(st *State, ev *session.Event, frame *Frame) error {
	c, err := st.call(ev, frame, p.CallID)
	if err != nil {
		return err
	}
	c.Interrupt = nil
	st.Status = session.StatusRunning
	switch p.Action {
	case session.ActionApprove:
		c.State = CallApproved
		if len(p.NewArgs) > 0 {
			c.Args = string(p.NewArgs)
		}
		if p.Remember == session.RememberSession && !st.remembered(frame.Agent, c.Tool) {
			st.Remembered = append(st.Remembered, session.Remembered{Agent: frame.Agent, Tool: c.Tool})
		}
	case session.ActionAnswer:
		c.State = CallApproved
		c.Answers = append(c.Answers, p.Text)
	}
	// A rejection is followed by the tool_result the model sees.
	return nil
}

func (p *ToolStarted) project(st *State, ev *session.Event, frame *Frame) error {
	c, err := st.call(ev, frame, p.CallID)
	if err != nil {
		return err
	}
	c.State, c.Args = CallStarted, string(p.Arguments)
	return nil
}

func (p *ToolResult) project(st *State, ev *session.Event, frame *Frame) error {
	c, err := st.call(ev, frame, p.CallID)
	if err != nil {
		return err
	}
	c.State, c.Result, c.IsError, c.Interrupt = CallDone, p.Content, p.IsError, nil
	flushResults(frame)
	return nil
}

func (p *FramePushed) project(st *State, ev *session.Event, frame *Frame) error {
	c, err := st.call(ev, st.frame(p.Parent), p.ParentCall)
	if err != nil {
		return err
	}
	if st.frame(p.Frame) != nil {
		return fmt.Errorf("event %d: frame %q exists", ev.Seq, p.Frame)
	}
	st.frames++
	c.State, c.Child = CallDelegated, p.Frame
	st.Frames = append(st.Frames, &Frame{ID: p.Frame, Agent: p.Agent, Mode: p.Mode, Parent: p.Parent, ParentCall: p.ParentCall,
		Messages: []model.Message{{Role: model.RoleUser, Content: p.Input}}})
	return nil
}

func (p *FramePopped) project(st *State, ev *session.Event, frame *Frame) error {
	f := st.frame(p.Frame)
	if f == nil || f.Parent == "" {
		return fmt.Errorf("event %d: cannot pop frame %q", ev.Seq, p.Frame)
	}
	parent := st.frame(f.Parent)
	st.removeFrame(f)
	if st.Status == session.StatusPaused {
		st.Status = session.StatusRunning // a cancel: the parent goes on
	}
	if c := parent.call(f.ParentCall); c != nil {
		c.State, c.Child, c.Result, c.IsError = CallDone, "", p.Result, p.IsError
		flushResults(parent)
	}
	return nil
}

func (p *Handoff) project(st *State, ev *session.Event, frame *Frame) error {
	f := st.frame(p.From)
	if f == nil || st.frame(p.To) != nil {
		return fmt.Errorf("event %d: bad handoff %s → %s", ev.Seq, p.From, p.To)
	}
	st.frames++
	nf := &Frame{ID: p.To, Agent: p.Agent, Mode: f.Mode, Parent: f.Parent, ParentCall: f.ParentCall, Messages: f.Messages}
	st.Frames[slices.Index(st.Frames, f)] = nf
	if parent := st.frame(f.Parent); parent != nil {
		if c := parent.call(f.ParentCall); c != nil {
			c.Child = nf.ID
		}
	}
	return nil
}

func (p *AgentMessage) project(st *State, ev *session.Event, frame *Frame) error {
	if frame == nil {
		return noFrame(ev)
	}
	frame.Said, frame.SaidSeq = p.Text, ev.Seq
	st.Output = p.Text
	return nil
}

func (p *TurnPaused) project(st *State, ev *session.Event, frame *Frame) error {
	st.Status = session.StatusPaused
	return nil
}

func (p *TurnCompleted) project(st *State, ev *session.Event, frame *Frame) error {
	st.Status, st.Output = session.StatusCompleted, p.Output
	return nil
}

func (p *TurnFailed) project(st *State, ev *session.Event, frame *Frame) error {
	f := p.Error
	st.Status, st.Error = session.StatusFailed, &f
	return nil
}

func (p *TurnInterrupted) project(st *State, ev *session.Event, frame *Frame) error {
	// the state is unchanged: whoever takes over recovers it

	return nil
}

func (p *TurnCancelled) project(st *State, ev *session.Event, frame *Frame) error {
	st.Status = session.StatusCancelled
	root := st.Root()
	st.Frames = []*Frame{root}
	root.Calls, root.Said, root.SaidSeq = nil, "", 0
	return nil
}
