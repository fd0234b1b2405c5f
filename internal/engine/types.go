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
)

// Status is the lifecycle state of a session.
type Status string

// Session statuses.
const (
	StatusRunning   Status = "running"
	StatusPaused    Status = "paused"
	StatusCompleted Status = "completed"
	StatusFailed    Status = "failed"
	StatusCancelled Status = "cancelled"
)

// Frame modes.
const (
	ModeMain = "main"
)

// CallState is where one tool call of an assistant message stands.
type CallState string

// Tool call states, in the order a call moves through them.
const (
	CallNew      CallState = "new"      // received from the model, not yet classified
	CallAwaiting CallState = "awaiting" // waits for a person's decision
	CallApproved CallState = "approved" // approved by a person, not yet started
	CallStarted  CallState = "started"  // tool_started recorded, no result yet
	CallDone     CallState = "done"     // a result is recorded
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
	Interrupt *Interrupt // set while awaiting a decision
	Result    string
	IsError   bool
}

// Frame is one agent's execution inside a session.
type Frame struct {
	ID         string
	Agent      string
	Mode       string
	Messages   []model.Message
	Iterations int // model calls in the current turn
	// Calls are the tool calls of the last assistant message until every one
	// has a result; then their results join Messages in call order.
	Calls []*Call
}

// Failure explains why a turn failed.
type Failure struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// State is a session as the engine sees it: a projection of its event log.
type State struct {
	SessionID string
	Agent     string
	Status    Status
	Seq       int64 // seq of the last event applied
	Frames    []*Frame
	Output    string
	Error     *Failure
	Metadata  map[string]any
	Usage     model.Usage
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Top returns the frame that receives the user's messages, or nil.
func (s *State) Top() *Frame {
	if len(s.Frames) == 0 {
		return nil
	}
	return s.Frames[len(s.Frames)-1]
}

// Interrupts lists the calls waiting for a decision, in frame and call
// order. While paused, they are what the session waits for.
func (s *State) Interrupts() []Interrupt {
	var out []Interrupt
	for _, f := range s.Frames {
		for _, c := range f.Calls {
			if c.State == CallAwaiting && c.Interrupt != nil {
				out = append(out, *c.Interrupt)
			}
		}
	}
	return out
}

// PathStep is one hop from the root frame towards a tool call.
type PathStep struct {
	Agent  string `json:"agent"`
	Tool   string `json:"tool"`
	CallID string `json:"call_id"`
}

// Interrupt kinds.
const (
	KindApproval = "approval"
)

// Interrupt is why a session is paused.
type Interrupt struct {
	ID        string          `json:"id"`
	Kind      string          `json:"kind"`
	Path      []PathStep      `json:"path"`
	Tool      string          `json:"tool,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Message   string          `json:"message,omitempty"`
	InDoubt   bool            `json:"in_doubt"`
	ExpiresAt *time.Time      `json:"expires_at"`
}

// Decision actions.
const (
	ActionApprove = "approve"
	ActionReject  = "reject"
)

// Decision answers one interrupt.
type Decision struct {
	InterruptID string          `json:"interrupt_id"`
	Action      string          `json:"action"`
	Arguments   json.RawMessage `json:"arguments,omitempty"`
	Reason      string          `json:"reason,omitempty"`
}

// Actor is who made a decision, for the audit trail.
type Actor struct {
	Name string `json:"name,omitempty"`
	Role string `json:"role,omitempty"`
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
}

// Agent is what the engine needs to know about an agent.
type Agent struct {
	Name          string
	Instructions  string
	Tools         map[string]*Tool
	Definitions   []model.ToolDefinition // in the order the model sees them
	MaxIterations int
}
