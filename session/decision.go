package session

import "encoding/json"

// Action is what a decision does with an interrupt.
type Action string

// Decision actions.
const (
	// ActionApprove runs an awaited call, with Decision.Arguments if set.
	ActionApprove Action = "approve"
	// ActionReject refuses a call or a question; the model sees the reason.
	ActionReject Action = "reject"
	// ActionAnswer answers a question (KindInput) with Decision.Text.
	ActionAnswer Action = "answer"
	// ActionEdit replaces a reviewed answer (KindReview) with
	// Decision.Output, checked against the agent's output schema, and lets
	// it go.
	ActionEdit Action = "edit"
	// ActionComplete gives a waiting call (KindExternal, KindClient) its
	// result, Decision.Output: a JSON value (a string is the text the model
	// reads), checked against the interrupt's ResultSchema. It also
	// settles a call in doubt (Interrupt.InDoubt) whose work is known to
	// have finished.
	ActionComplete Action = "complete"
	// ActionFail ends a waiting call (KindExternal, KindClient), or a call
	// in doubt, with an error the model sees: Decision.Reason.
	ActionFail Action = "fail"
)

// Completes reports whether a is a completion (complete or fail): the
// result of work that was started, whoever sends it.
func (a Action) Completes() bool { return a == ActionComplete || a == ActionFail }

// RememberSession is the Decision.Remember value that applies an approval
// or a rejection to the same tool of the same agent for the rest of the
// session.
const RememberSession = "session"

// Decision answers one interrupt.
type Decision struct {
	InterruptID string `json:"interrupt_id"`
	// Action is ActionApprove or ActionReject for an approval, ActionAnswer
	// (with Text) or ActionReject for a question.
	Action Action `json:"action"`
	// Arguments, on approve, replace the call's arguments. They are validated
	// against the tool's schema before anything runs.
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Reason, on reject or fail, is shown to the model.
	Reason string `json:"reason,omitempty"`
	// Text, on answer, is the answer to an input interrupt's question;
	// required unless the question has a Schema or a URL.
	Text string `json:"text,omitempty"`
	// Content, on answer, is the answer to a question with a Schema: a JSON
	// object valid under it; required for those, refused for the others.
	Content json.RawMessage `json:"content,omitempty"`
	// Output, on edit, is the answer that replaces a reviewed one: a JSON
	// value matching the agent's output schema. On complete, it is the
	// waiting call's result.
	Output json.RawMessage `json:"output,omitempty"`
	// Remember, set to RememberSession on approve or reject, applies the
	// decision to every later call of the same tool by the same agent for
	// the rest of the session: approved calls run without asking, rejected
	// ones are refused with the same Reason (recorded in the decision
	// event; listed in Session.Remembered).
	Remember string `json:"remember,omitempty"`
	// Rule, on approve or reject of a call, grants a standing rule: later
	// calls of the same tool that match it are decided the same way,
	// without asking (see Rule). Granting one needs what deciding the call
	// needs, for a tool whose configuration allows rules and a call that
	// one person decides.
	Rule *RuleGrant `json:"rule,omitempty"`
}

// Remembered is a tool of an agent that a decision approved, or rejected,
// for the rest of the session (Decision.Remember).
type Remembered struct {
	Agent string `json:"agent"`
	Tool  string `json:"tool"`
	// Action is ActionApprove (later calls run without asking) or
	// ActionReject (later calls are refused with Reason, without asking).
	// Empty, in sessions recorded before rejections could be remembered,
	// means ActionApprove.
	Action Action `json:"action,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// Answer is the user's reply to a question a tool asked, as the tool gets
// it when it runs again (see cairn.AskFor).
type Answer struct {
	// Text answers a plain question.
	Text string `json:"text,omitempty"`
	// Content answers a question with a schema: an object valid under it.
	Content json.RawMessage `json:"content,omitempty"`
	// Declined: the user rejected the question, with Reason. A tool sees a
	// declined answer only when it holds its work across the pause (an MCP
	// elicitation, answered "decline"); otherwise a rejection ends the call.
	Declined bool   `json:"declined,omitempty"`
	Reason   string `json:"reason,omitempty"`
	// State is what the tool kept with the question (cairn.Question.State).
	State json.RawMessage `json:"state,omitempty"`
	// Approved: the approval the tool asked for was given
	// (cairn.Question.Approval).
	Approved bool `json:"approved,omitempty"`
}

// UnmarshalJSON reads an answer, or a plain string: the form logs written
// before questions had schemas hold.
func (a *Answer) UnmarshalJSON(b []byte) error {
	var text string
	if err := json.Unmarshal(b, &text); err == nil {
		*a = Answer{Text: text}
		return nil
	}
	type plain Answer
	return json.Unmarshal(b, (*plain)(a))
}
