package cairn

import (
	"encoding/json"
	"time"

	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/store"
)

// Session statuses.
const (
	StatusRunning   = "running"
	StatusPaused    = "paused"
	StatusCompleted = "completed"
	StatusFailed    = "failed"
	StatusCancelled = "cancelled"
)

// Session is one conversation thread as clients see it: what it is doing,
// what it said last, and what it waits for.
type Session struct {
	ID     string `json:"id"`
	Agent  string `json:"agent"`
	Status string `json:"status"`
	// Seq is the seq of the session's last event. Decisions must name it.
	Seq    int64         `json:"seq"`
	Output string        `json:"output"`
	Error  *SessionError `json:"error"`
	// Interrupts is non-empty exactly when Status is paused.
	Interrupts []Interrupt  `json:"interrupts"`
	Stack      []StackFrame `json:"stack"`
	// Remembered lists the tools approved for the rest of the session.
	Remembered []RememberedTool `json:"remembered"`
	Metadata   map[string]any   `json:"metadata,omitempty"`
	// Owner is who started the session (the auth token's name), if known.
	Owner string `json:"owner,omitempty"`
	// LeaseOwner names the process that runs the turn of a running session,
	// and LeaseExpiresAt when another process may take it over unless the
	// owner renews. A released or expired lease means it is being taken over.
	LeaseOwner     string      `json:"lease_owner,omitempty"`
	LeaseExpiresAt *time.Time  `json:"lease_expires_at,omitempty"`
	Usage          model.Usage `json:"usage"`
	CreatedAt      time.Time   `json:"created_at"`
	UpdatedAt      time.Time   `json:"updated_at"`
}

// SessionError says why a turn failed.
type SessionError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// RememberedTool is a tool of an agent that a decision approved for the
// rest of the session.
type RememberedTool struct {
	Agent string `json:"agent"`
	Tool  string `json:"tool"`
}

// StackFrame is one frame of the chain from the root agent to the agent that
// receives the user's messages.
type StackFrame struct {
	Agent string `json:"agent"`
	Mode  string `json:"mode"`
}

// Interrupt kinds.
const (
	// KindApproval: a tool call waits for a decision (approve or reject).
	KindApproval = "approval"
	// KindInput: a tool asked the user a question (answer or reject).
	KindInput = "input"
	// KindMessage: an interactive sub-agent spoke; reply with Runner.Send.
	KindMessage = "message"
)

// Interrupt is why a session is paused: a tool call that waits for a
// decision, a question, or an interactive agent waiting for the user.
type Interrupt struct {
	// ID is stable for the life of the pause and unique in the session.
	ID   string `json:"id"`
	Kind string `json:"kind"`
	// Path is the chain of (agent, tool, call id) from the root frame to the call.
	Path      []PathStep      `json:"path"`
	Tool      string          `json:"tool,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Message is the rendered confirmation text (approval).
	Message string `json:"message,omitempty"`
	// Question is what the tool asked (input).
	Question string `json:"question,omitempty"`
	// Text is what the interactive agent said (message).
	Text string `json:"text,omitempty"`
	// InDoubt marks a call that was running when the process stopped: it
	// may or may not have taken effect.
	InDoubt   bool       `json:"in_doubt"`
	ExpiresAt *time.Time `json:"expires_at"`
}

// PathStep is one hop of an interrupt's path.
type PathStep struct {
	Agent  string `json:"agent"`
	Tool   string `json:"tool"`
	CallID string `json:"call_id"`
}

// PendingInterrupt is an interrupt in the cross-session approval inbox.
type PendingInterrupt struct {
	Interrupt
	SessionID string `json:"session_id"`
	// Seq is the seq a decision on this interrupt must name.
	Seq int64 `json:"seq"`
}

// Decision actions.
const (
	ActionApprove = "approve"
	ActionReject  = "reject"
	ActionAnswer  = "answer"
)

// Decision answers one interrupt.
type Decision struct {
	InterruptID string `json:"interrupt_id"`
	// Action is ActionApprove or ActionReject for an approval, ActionAnswer
	// (with Text) or ActionReject for a question.
	Action string `json:"action"`
	// Arguments, on approve, replace the call's arguments. They are validated
	// against the tool's schema before anything runs.
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Reason, on reject, is shown to the model.
	Reason string `json:"reason,omitempty"`
	// Text, on answer, is the answer to an input interrupt's question; required.
	Text string `json:"text,omitempty"`
	// Remember, set to "session" on approve, auto-approves the tool for the
	// rest of the session (recorded in the decision event; listed in
	// Session.Remembered).
	Remember string `json:"remember,omitempty"`
}

// RememberSession is the Decision.Remember value that auto-approves a tool
// for the rest of the session.
const RememberSession = "session"

// Actor is who decides, recorded in the decision's event.
type Actor struct {
	Name string `json:"name,omitempty"`
	Role string `json:"role,omitempty"`
}

// Event is one immutable entry of a session's log; see docs/http-api.md for
// the types and their data. Events with Seq 0 (type "model_delta") are
// streamed to subscribers and never stored.
type Event = store.Event

// EventModelDelta is the type of streamed, unstored text deltas.
const EventModelDelta = "model_delta"

// Empty, zero-capacity lists: JSON [] rather than null, without allocating
// (appending to them copies, so they are never written).
var (
	noInterrupts = []Interrupt{}
	noRemembered = []RememberedTool{}
)

func sessionFromState(st *engine.State) *Session {
	s := &Session{
		ID: st.SessionID, Agent: st.Agent, Status: string(st.Status), Seq: st.Seq,
		Output: st.Output, Metadata: st.Metadata, Owner: st.Owner, Usage: st.Usage,
		CreatedAt: st.CreatedAt, UpdatedAt: st.UpdatedAt,
		Interrupts: noInterrupts, Stack: make([]StackFrame, 0, len(st.Frames)), Remembered: noRemembered,
	}
	for _, r := range st.Remembered {
		s.Remembered = append(s.Remembered, RememberedTool(r))
	}
	if st.Error != nil {
		s.Error = &SessionError{Code: st.Error.Code, Message: st.Error.Message}
	}
	if st.Status == engine.StatusPaused {
		for _, in := range st.Interrupts() {
			s.Interrupts = append(s.Interrupts, interruptFromEngine(in))
		}
	}
	for _, f := range st.Stack() {
		s.Stack = append(s.Stack, StackFrame{Agent: f.Agent, Mode: f.Mode})
	}
	return s
}

func interruptFromEngine(in engine.Interrupt) Interrupt {
	out := Interrupt{ID: in.ID, Kind: in.Kind, Tool: in.Tool, Arguments: in.Arguments,
		Message: in.Message, Question: in.Question, Text: in.Text, InDoubt: in.InDoubt, ExpiresAt: in.ExpiresAt}
	for _, p := range in.Path {
		out.Path = append(out.Path, PathStep(p))
	}
	return out
}
