package session

import "encoding/json"

// Decision actions.
const (
	// ActionApprove runs an awaited call, with Decision.Arguments if set.
	ActionApprove = "approve"
	// ActionReject refuses a call or a question; the model sees the reason.
	ActionReject = "reject"
	// ActionAnswer answers a question (KindInput) with Decision.Text.
	ActionAnswer = "answer"
)

// RememberSession is the Decision.Remember value that applies an approval
// to the same tool of the same agent for the rest of the session.
const RememberSession = "session"

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
	// Remember, set to RememberSession on approve, auto-approves the tool
	// for the rest of the session (recorded in the decision event; listed
	// in Session.Remembered).
	Remember string `json:"remember,omitempty"`
}

// Actor is who decides, recorded in the decision's event for the audit trail.
type Actor struct {
	Name string `json:"name,omitempty"`
	Role string `json:"role,omitempty"`
}

// Remembered is a tool of an agent that a decision approved for the rest
// of the session.
type Remembered struct {
	Agent string `json:"agent"`
	Tool  string `json:"tool"`
}
