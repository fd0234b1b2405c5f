package engine

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/session"
)

// Pop reasons.
const (
	PopCompleted = "completed"
	PopFailed    = "failed"
	PopCancelled = "cancelled"
)

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

func projectFramePushed(p *FramePushed, st *State, ev *session.Event, frame *Frame) error {
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

func projectFramePopped(p *FramePopped, st *State, ev *session.Event, frame *Frame) error {
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

func projectHandoff(p *Handoff, st *State, ev *session.Event, frame *Frame) error {
	f := st.frame(p.From)
	if f == nil || st.frame(p.To) != nil {
		return fmt.Errorf("event %d: bad handoff %s → %s", ev.Seq, p.From, p.To)
	}
	st.frames++
	nf := &Frame{ID: p.To, Agent: p.Agent, Mode: f.Mode, Parent: f.Parent, ParentCall: f.ParentCall, Messages: f.Messages,
		sealed: sealed{keys: slices.Clone(f.sealed.keys), msgs: f.sealed.msgs, bytes: f.sealed.bytes}}
	st.Frames[slices.Index(st.Frames, f)] = nf
	if parent := st.frame(f.Parent); parent != nil {
		if c := parent.call(f.ParentCall); c != nil {
			c.Child = nf.ID
		}
	}
	return nil
}

func projectAgentMessage(p *AgentMessage, st *State, ev *session.Event, frame *Frame) error {
	if frame == nil {
		return noFrame(ev)
	}
	frame.Said, frame.SaidSeq = p.Text, ev.Seq
	st.Output = p.Text
	return nil
}

// CompleteTool is the tool interactive frames call to end and hand their
// result to the parent.
const CompleteTool = "complete"

var completeDefinition = model.ToolDefinition{
	Name:        CompleteTool,
	Description: "Call when your task is done: the result goes back to the agent that started you, and the user's conversation returns to it.",
	Parameters:  json.RawMessage(`{"type":"object","properties":{"result":{"type":"string","description":"what you found or did"}},"required":["result"],"additionalProperties":false}`),
}

func (s *stepper) newFrameID() string { return "f" + strconv.Itoa(s.st.frames+1) }

// finishFrame handles a frame's final text: the root answers the user, a
// tool-mode child gives its result to the parent, an interactive child
// speaks to the user and waits.
func (s *stepper) finishFrame(f *Frame, text string, value json.RawMessage) {
	switch f.Mode {
	case session.ModeMain:
		s.emit(session.EventTurnCompleted, f, &TurnCompleted{Output: text, OutputJSON: value})
	case session.ModeTool:
		s.emit(session.EventFramePopped, f, &FramePopped{Frame: f.ID, Reason: PopCompleted, Result: s.parentCall(f).told(text)})
	case session.ModeInteractive:
		s.emit(session.EventAgentMessage, f, &AgentMessage{Text: text})
	}
}

// failFrame ends a frame with an error: at the root the turn fails; in a
// child the error becomes the parent's (error) tool result.
func (s *stepper) failFrame(f *Frame, why session.Failure) {
	if f.Parent == "" {
		s.emit(session.EventTurnFailed, f, &TurnFailed{Error: why})
		return
	}
	s.emit(session.EventFramePopped, f, &FramePopped{Frame: f.ID, Reason: PopFailed, Result: s.parentCall(f).told(why.Message), IsError: true})
}

// parentCall is the call a child frame answers (a zero Call if it is gone).
func (s *stepper) parentCall(f *Frame) *Call {
	if p := s.st.frame(f.Parent); p != nil {
		if c := p.call(f.ParentCall); c != nil {
			return c
		}
	}
	return &Call{}
}

// interactiveBusy reports whether an interactive frame other than f and its
// ancestors holds the conversation: only one interactive child is active at
// a time, and later ones wait in call order.
func (s *stepper) interactiveBusy(f *Frame) bool {
	ancestors := map[string]bool{}
	for g := f; g != nil; g = s.st.frame(g.Parent) {
		ancestors[g.ID] = true
		if g.Parent == "" {
			break
		}
	}
	for _, g := range s.st.Frames {
		if g.Mode == session.ModeInteractive && !ancestors[g.ID] {
			return true
		}
	}
	return false
}

// handoff replaces frame f by a frame of the target agent, which keeps the
// conversation, the parent link and the mode. The other calls of the
// message do not run.
func (s *stepper) handoff(f *Frame, h *Call, target string) {
	for _, c := range f.Calls {
		if c.State == CallDone {
			continue
		}
		res := &ToolResult{CallID: c.ID, Tool: c.Tool, Content: fmt.Sprintf("Transferred to %s.", target)}
		if c != h {
			res.Content, res.IsError = fmt.Sprintf("not run: the conversation was handed off to %s", target), true
		}
		s.emit(session.EventToolResult, f, res)
	}
	s.emit(session.EventHandoff, f, &Handoff{From: f.ID, To: s.newFrameID(), Agent: target, CallID: h.ID})
}

// completeResult validates a complete call; a bad one gets an error result.
func (s *stepper) completeResult(f *Frame, c *Call) (string, bool) {
	var args struct {
		Result *string `json:"result"`
	}
	if err := json.Unmarshal([]byte(c.Args), &args); err != nil || args.Result == nil {
		s.emit(session.EventToolResult, f, &ToolResult{CallID: c.ID, Tool: c.Tool, IsError: true,
			Content: `complete needs the arguments {"result": "<what you found or did>"}`})
		return "", false
	}
	return *args.Result, true
}

// Frame is one agent's execution inside a session.
type Frame struct {
	ID    string
	Agent string
	Mode  session.Mode
	// Parent and ParentCall link a child frame to the call it answers.
	Parent     string
	ParentCall string
	Messages   []model.Message
	Iterations int // model calls in the current turn
	// Rejected counts the final answers sent back this turn for not
	// matching the agent's output schema.
	Rejected int `json:",omitempty"`
	// Said is the text an interactive frame sent the user, and SaidSeq the
	// seq of that agent_message; while SaidSeq is set, the frame waits for
	// the user's next message.
	Said    string
	SaidSeq int64
	// Review, while set, is the frame's final answer waiting for a person.
	Review *Review `json:",omitempty"`
	// Calls are the tool calls of the last assistant message until every one
	// has a result; then their results join Messages in call order.
	Calls []*Call
	// SenderTools are the tools the sender of the frame's last message
	// runs itself (UserMessage.Tools): offered to its model besides the
	// agent's, until the next message.
	SenderTools []model.ToolDefinition `json:",omitempty"`
	// sealed: the chunks a snapshot already wrote for these messages.
	sealed sealed
}

// Root returns the session's root frame, or nil before it starts.
func (s *State) Root() *Frame {
	for _, f := range s.Frames {
		if f.Parent == "" {
			return f
		}
	}
	return nil
}

// Ordered returns the frames depth first: each frame, then its children in
// the order of the calls they answer. It is the order in which frames run.
func (s *State) Ordered() []*Frame {
	if len(s.Frames) == 1 {
		return s.Frames // the common case, without allocating
	}
	var out []*Frame
	var visit func(f *Frame)
	visit = func(f *Frame) {
		out = append(out, f)
		for _, c := range f.Calls {
			if c.State == CallDelegated {
				if child := s.frame(c.Child); child != nil {
					visit(child)
				}
			}
		}
	}
	if r := s.Root(); r != nil {
		visit(r)
	}
	return out
}

// Stack returns the frames that talk with the user: the root, then each
// active interactive frame, outermost first. The last one receives the
// user's messages. Tool-mode children are not in it.
func (s *State) Stack() []*Frame {
	var out []*Frame
	for _, f := range s.Ordered() {
		if f.Mode != session.ModeTool {
			out = append(out, f)
		}
	}
	return out
}

// Top returns the frame that receives the user's messages, or nil.
func (s *State) Top() *Frame {
	st := s.Stack()
	if len(st) == 0 {
		return nil
	}
	return st[len(st)-1]
}

// pathTo returns the path from the root to frame f: one step per ancestor
// call that created a frame on the way.
func (s *State) pathTo(f *Frame) []session.PathStep {
	var rev []session.PathStep
	for f != nil && f.Parent != "" {
		p := s.frame(f.Parent)
		if p == nil {
			break
		}
		step := session.PathStep{Agent: p.Agent, CallID: f.ParentCall}
		if c := p.call(f.ParentCall); c != nil {
			step.Tool = c.Tool
		}
		rev = append(rev, step)
		f = p
	}
	out := make([]session.PathStep, 0, len(rev)+1)
	for i := len(rev) - 1; i >= 0; i-- {
		out = append(out, rev[i])
	}
	return out
}
