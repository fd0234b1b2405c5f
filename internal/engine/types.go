// Package engine is Cairn's deterministic core: a state machine that takes a
// session's state and one input (a user message, decisions, a model response,
// tool results) and returns the events to append and the effects a driver must
// perform next (call a model, run tools).
//
// The engine does no I/O: no clock, no randomness, no network. Time is passed
// in; ids are derived from the session id and event sequence numbers. The same
// events replayed through Replay rebuild the same state, which is what makes a
// session durable, resumable after a crash, and runnable inside a
// durable-execution engine.
package engine

import (
	"encoding/json"
	"time"

	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/session"
)

// Frame modes.
const (
	ModeMain        = "main"        // the session's root agent
	ModeTool        = "tool"        // an agent used as a tool: runs to completion, its text is its result
	ModeInteractive = "interactive" // takes over the conversation until it calls complete
)

// CallState is where one tool call of an assistant message stands.
type CallState string

// Tool call states, in the order a call moves through them.
const (
	CallNew       CallState = "new"       // received from the model, not yet classified
	CallAwaiting  CallState = "awaiting"  // waits for a person's decision
	CallApproved  CallState = "approved"  // approved (or answered) by a person, not yet started
	CallStarted   CallState = "started"   // tool_started recorded, no result yet
	CallDelegated CallState = "delegated" // a child frame is working on it
	CallDone      CallState = "done"      // a result is recorded
)

// Call is one tool call of the frame's current assistant message.
type Call struct {
	ID   string
	Tool string
	// Args is the argument JSON that will run: the model's, or the approver's replacement.
	Args string
	// Origin is the seq of the model_response event that asked for the call;
	// with the frame id it makes interrupt ids and idempotency keys unique even
	// when a model reuses call ids across turns.
	Origin    int64
	State     CallState
	Interrupt *session.Interrupt // set while awaiting a decision
	// Child is the frame working on a delegated call.
	Child string
	// Answers are the user's answers to the questions the tool asked, in order.
	Answers []string
	Result  string
	IsError bool
}

// Frame is one agent's execution inside a session.
type Frame struct {
	ID    string
	Agent string
	Mode  string
	// Parent and ParentCall link a child frame to the call it answers.
	Parent     string
	ParentCall string
	Messages   []model.Message
	Iterations int // model calls in the current turn
	// Said is the text an interactive frame sent the user, and SaidSeq the
	// seq of that agent_message; while SaidSeq is set, the frame waits for
	// the user's next message.
	Said    string
	SaidSeq int64
	// Calls are the tool calls of the last assistant message until every one
	// has a result; then their results join Messages in call order.
	Calls []*Call
}

// State is a session as the engine sees it: a projection of its event log.
type State struct {
	SessionID string
	Agent     string
	Status    session.Status
	Seq       int64 // seq of the last event applied
	Frames    []*Frame
	Output    string
	Error     *session.Failure
	Metadata  map[string]any
	Owner     string
	Usage     model.Usage
	// Remembered lists the tools a decision approved for the rest of the session.
	Remembered []session.Remembered
	CreatedAt  time.Time
	UpdatedAt  time.Time
	// Log is the driver's bookkeeping of the log's size since the last
	// snapshot; it is not part of the session.
	Log LogStats `json:"-"`
	// frames counts the frames ever created, for ids.
	frames int
}

// LogStats tracks how much log a load would replay after the last snapshot.
type LogStats struct {
	SnapshotBytes int // size of the last snapshot (0: none)
	TailBytes     int // bytes of events appended after it
}

func (s *State) remembered(agent, tool string) bool {
	for _, r := range s.Remembered {
		if r.Agent == agent && r.Tool == tool {
			return true
		}
	}
	return false
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
		if f.Mode != ModeTool {
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

// Interrupts lists what the session waits for, depth first in call order:
// calls awaiting a decision or an answer, and interactive frames awaiting a
// message. While paused, they are what the session waits for.
func (s *State) Interrupts() []session.Interrupt {
	var out []session.Interrupt
	for _, f := range s.Ordered() {
		if f.SaidSeq != 0 {
			out = append(out, s.messageInterrupt(f))
		}
		for _, c := range f.Calls {
			if c.State == CallAwaiting && c.Interrupt != nil {
				out = append(out, *c.Interrupt)
			}
		}
	}
	return out
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

func (s *State) messageInterrupt(f *Frame) session.Interrupt {
	return session.Interrupt{
		ID:   derivedID(s.SessionID, f.ID, f.SaidSeq, "", "message"),
		Kind: session.KindMessage, Path: s.pathTo(f), Text: f.Said,
	}
}

// ToolArgs is a tool call's arguments, both as the JSON text and decoded.
type ToolArgs struct {
	Raw   json.RawMessage
	Value any
}

// Tool is what the engine needs to know about a tool: pure functions only.
type Tool struct {
	Definition model.ToolDefinition
	// Validate checks decoded arguments against the tool's schema.
	Validate func(v any) error
	// NeedsApproval reports whether a call with these arguments waits for a
	// person. Nil means never.
	NeedsApproval func(args ToolArgs) (bool, error)
	// Confirm renders the confirmation message shown to the approver. Nil
	// means a generic message.
	Confirm func(args ToolArgs) (string, error)
	// Idempotent tools are re-run after a crash; others ask a person first.
	Idempotent bool
	// ApprovalTTL, when positive, is how long an approval request waits for a
	// decision before it counts as rejected ("approval expired").
	ApprovalTTL time.Duration
	// Kind says what a call does: run a function (""), start a child frame
	// (ToolAgent) or hand the frame over to another agent (ToolHandoff).
	Kind ToolKind
	// Target is the agent a ToolAgent or ToolHandoff tool runs.
	Target string
	// Mode is ModeTool or ModeInteractive for a ToolAgent tool.
	Mode string
}

// ToolKind says how the engine carries out a call.
type ToolKind string

// Tool kinds.
const (
	ToolFunction ToolKind = ""
	ToolAgent    ToolKind = "agent"
	ToolHandoff  ToolKind = "handoff"
)

// Agent is what the engine needs to know about an agent.
type Agent struct {
	Name          string
	Instructions  string
	Tools         map[string]*Tool
	Definitions   []model.ToolDefinition // in the order the model sees them
	MaxIterations int
}
