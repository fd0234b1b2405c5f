package session

import (
	"encoding/json"
	"fmt"
	"time"

	segjson "github.com/segmentio/encoding/json"

	"github.com/cairnhq/cairn/model"
)

// The payloads of the stored event types: Event.Data decoded (DecodeEvent).
// They are data only; the engine's projections read them to rebuild a
// session's state, and every reader (the HTTP adapters, the CLI, webhooks)
// reads them instead of walking JSON by hand. docs/http-api.md lists them.

// Payload is the decoded data of a stored event: one of the types below,
// as a pointer.
type Payload interface{ isPayload() }

// DecodeEvent decodes ev.Data into the payload of ev.Type (a
// *DecisionMade for a decision, a *TurnPaused for turn_paused, …). An
// unknown type (a streamed model_delta, or a type of a newer server) is an
// error that says so; so is data that does not fit the type.
func DecodeEvent(ev Event) (Payload, error) {
	var p Payload
	switch ev.Type {
	case EventSessionStarted:
		p = &SessionStarted{}
	case EventUserMessage:
		p = &UserMessage{}
	case EventModelResponse:
		p = &ModelResponse{}
	case EventApprovalRequested, EventInputRequested, EventExternalRequested, EventClientRequested:
		p = &InterruptRequested{}
	case EventWaitExpired:
		p = &WaitExpired{}
	case EventReviewRequested:
		p = &ReviewRequested{}
	case EventDecision:
		p = &DecisionMade{}
	case EventApprovalAdded:
		p = &ApprovalAdded{}
	case EventInterruptReminded, EventInterruptEscalated:
		p = &EscalationFired{}
	case EventToolStarted:
		p = &ToolStarted{}
	case EventToolResult:
		p = &ToolResult{}
	case EventFramePushed:
		p = &FramePushed{}
	case EventFramePopped:
		p = &FramePopped{}
	case EventHandoff:
		p = &Handoff{}
	case EventAgentMessage:
		p = &AgentMessage{}
	case EventOutputRejected:
		p = &OutputRejected{}
	case EventTurnPaused:
		p = &TurnPaused{}
	case EventTurnCompleted:
		p = &TurnCompleted{}
	case EventTurnFailed:
		p = &TurnFailed{}
	case EventTurnCancelled:
		p = &TurnCancelled{}
	case EventTurnInterrupted:
		p = &TurnInterrupted{}
	case EventSessionForked:
		p = &SessionForked{}
	case EventDefinitionChanged:
		p = &DefinitionChanged{}
	case EventModelDelta:
		p = &ModelDelta{}
	case EventModelDeltasSkipped:
		p = &ModelDeltasSkipped{}
	default:
		return nil, fmt.Errorf("event %d: unknown type %q", ev.Seq, ev.Type)
	}
	if err := json.Unmarshal(ev.Data, p); err != nil {
		return nil, fmt.Errorf("event %d (%s): %w", ev.Seq, ev.Type, err)
	}
	return p, nil
}

// SessionStarted opens a session: the root frame is created.
type SessionStarted struct {
	SessionID string `json:"session_id"`
	// Nonce is drawn at random when the session is created (empty in logs
	// written before it existed); see Session.Nonce.
	Nonce    string         `json:"nonce,omitempty"`
	Agent    string         `json:"agent"`
	Frame    string         `json:"frame"`
	Metadata map[string]any `json:"metadata,omitempty"`
	Owner    string         `json:"owner,omitempty"`
	// Tenant is the session's tenant (Session.Tenant).
	Tenant string `json:"tenant,omitempty"`
	// Definition is the content hash of the agent's definition the session
	// starts under (Session.Definition); empty in logs written before
	// versions were recorded.
	Definition string `json:"definition,omitempty"`
}

// UserMessage is a message from the user to a frame (the top of the stack).
type UserMessage struct {
	Text string `json:"text"`
	// Actor is who sent it, when known (the audit trail).
	Actor Actor `json:"actor,omitzero"`
	// Call, in the first message of a session of a direct agent, is the
	// one call the sender asks to have made (an approval request, a gateway
	// call): no model is asked, and the session's answer is its result.
	Call *CallRequest `json:"call,omitempty"`
	// Tools are tools the sender runs itself, declared with the message
	// (AG-UI frontend tools): offered to the model until the next
	// message, their calls wait for the sender's result.
	Tools []model.ToolDefinition `json:"tools,omitempty"`
}

// CallRequest is a tool call a caller asks for, not a model: the one call
// of a session of a direct agent (POST /v1/approvals, the MCP gateway).
type CallRequest struct {
	// ID is the call's id (the session's only call).
	ID        string          `json:"id"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	// Message, when set, is what the approver reads instead of the tool's
	// confirmation.
	Message string `json:"message,omitempty"`
	// Schema, when set, is the JSON Schema the arguments (and an
	// approver's edit of them) must match.
	Schema json.RawMessage `json:"schema,omitempty"`
	// ExpiresAt, when set, is when the approval stops waiting (its outcome
	// at expiry applies), instead of the tool's approval TTL.
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
}

// ModelResponse is the assistant message of one model call.
type ModelResponse struct {
	Message model.Message `json:"message"`
	Usage   model.Usage   `json:"usage"`
}

// InterruptRequested records that a call waits: for a person's decision
// (approval_requested) or answer (input_requested), for a system to finish
// the work the tool started (external_requested), or for the caller to run
// the tool (client_requested).
type InterruptRequested struct {
	CallID    string    `json:"call_id"`
	Interrupt Interrupt `json:"interrupt"`
	// Held: the tool holds its work in flight across this question.
	Held bool `json:"held,omitempty"`
	// State is what the tool keeps for when it runs again with the answer
	// (cairn.Question.State): it comes back with the answer.
	State json.RawMessage `json:"state,omitempty"`
	// Asked: the tool running asked for this approval
	// (cairn.Question.Approval); its decision goes to the tool.
	Asked bool `json:"asked,omitempty"`
}

// MarshalJSON records the interrupt without its Ask (see recorded), with
// github.com/segmentio/encoding/json, which writes encoding/json's bytes
// in a fraction of its time: every pause records one
// (TestPausePayloadsEncodeAsEncodingJSON).
func (p InterruptRequested) MarshalJSON() ([]byte, error) {
	type plain InterruptRequested
	return segjson.Marshal(struct {
		plain
		Interrupt recorded `json:"interrupt"`
	}{plain(p), recorded(p.Interrupt)})
}

// WaitExpired records that an external call's deadline passed with no
// result. What follows depends on Outcome: an error result the model
// sees (OnTimeoutError), the tool started again (OnTimeoutRetry), or an
// approval that asks a person whether to start it again (OnTimeoutAsk).
type WaitExpired struct {
	CallID      string    `json:"call_id"`
	Tool        string    `json:"tool"`
	InterruptID string    `json:"interrupt_id"`
	Outcome     OnTimeout `json:"outcome"`
	// Attempt counts the waits of this call so far, this one included.
	Attempt int `json:"attempt"`
}

// DecisionMade records one decision and who made it.
type DecisionMade struct {
	InterruptID string          `json:"interrupt_id"`
	Kind        Kind            `json:"kind"`
	CallID      string          `json:"call_id"`
	Tool        string          `json:"tool"`
	Action      Action          `json:"action"`
	Reason      string          `json:"reason,omitempty"`
	Text        string          `json:"text,omitempty"`          // answer
	Content     json.RawMessage `json:"content,omitempty"`       // answer to a question with a schema
	Output      json.RawMessage `json:"output,omitempty"`        // a review's edited answer
	Arguments   json.RawMessage `json:"arguments,omitempty"`     // before
	NewArgs     json.RawMessage `json:"new_arguments,omitempty"` // after, when replaced
	// ArgsDigest and NewArgsDigest are SHA-256 (hex) of the arguments
	// before and after, for audit trails that keep digests only.
	ArgsDigest    string `json:"arguments_sha256,omitempty"`
	NewArgsDigest string `json:"new_arguments_sha256,omitempty"`
	Remember      string `json:"remember,omitempty"`
	Actor         Actor  `json:"actor"`
	// Approvals, on the last approval of a call that needed several, are
	// all of them, this one included.
	Approvals []Approval `json:"approvals,omitempty"`
	// Rule, on a decision made by a rule rather than a person, names it:
	// a standing rule's id ("rul_…", decided for its grantor, the Actor),
	// or the outcome at expiry (tools.refund.on_expiry).
	Rule string `json:"rule,omitempty"`
	// Granted is the standing rule this decision granted (Decision.Rule).
	Granted *Rule `json:"granted_rule,omitempty"`
	// AskedAt is when the interrupt was asked (absent where none was: a
	// standing rule's or an auto-approval's decision), for the time a
	// person took to decide.
	AskedAt *time.Time `json:"asked_at,omitempty"`
	// Batch is the bulk decision this one was part of (BulkResponse.Batch).
	Batch string `json:"batch,omitempty"`
}

// ApprovalAdded records one approval of a call that needs several: the
// call waits for the rest (see Interrupt.Required).
type ApprovalAdded struct {
	InterruptID string `json:"interrupt_id"`
	CallID      string `json:"call_id"`
	Tool        string `json:"tool"`
	// Count is the approvals so far, this one included, of Required.
	Count    int `json:"count"`
	Required int `json:"required"`
	// NewArgs, when this approval edited the arguments, replace them: the
	// approvals before it no longer count, and the others approve these.
	NewArgs       json.RawMessage `json:"new_arguments,omitempty"`
	ArgsDigest    string          `json:"arguments_sha256,omitempty"`
	NewArgsDigest string          `json:"new_arguments_sha256,omitempty"`
	// Message, with NewArgs, is the confirmation text for them, and
	// Preview their tool's dry run (the one of the old arguments no longer
	// holds): what the approvers after the edit see.
	Message string   `json:"message,omitempty"`
	Preview *Preview `json:"preview,omitempty"`
	Actor   Actor    `json:"actor"`
	// Batch is the bulk decision this approval was part of.
	Batch string `json:"batch,omitempty"`
}

// ToolStarted is recorded durably before a tool runs.
type ToolStarted struct {
	CallID         string          `json:"call_id"`
	Tool           string          `json:"tool"`
	Arguments      json.RawMessage `json:"arguments"`
	IdempotencyKey string          `json:"idempotency_key"`
	Answers        []Answer        `json:"answers,omitempty"`
	// WaitID, for a tool that finishes later (it has a wait), is the id of
	// the interrupt the call waits under once it says it started, which its
	// callback URL completes: a completion naming it is taken while the
	// call still runs, and settles the call if it falls in doubt.
	WaitID string `json:"wait_id,omitempty"`
}

// ToolResult is the result of one call, as the model will see it.
type ToolResult struct {
	CallID  string `json:"call_id"`
	Tool    string `json:"tool"`
	Content string `json:"content"`
	IsError bool   `json:"is_error,omitempty"`
}

// FramePushed records a child frame starting on a call of its parent.
type FramePushed struct {
	Frame      string `json:"frame"`
	Agent      string `json:"agent"`
	Mode       Mode   `json:"mode"`
	Parent     string `json:"parent"`
	ParentCall string `json:"parent_call"`
	Input      string `json:"input"`
}

// FramePopped records a child frame ending; its result answers the parent's call.
type FramePopped struct {
	Frame   string `json:"frame"`
	Reason  string `json:"reason"` // completed | failed | cancelled
	Result  string `json:"result"`
	IsError bool   `json:"is_error,omitempty"`
	// Actor is who cancelled the frame (Reason cancelled), when known.
	Actor Actor `json:"actor,omitzero"`
}

// Handoff records a frame replaced by another agent's frame, which keeps
// the conversation, the parent link and the mode.
type Handoff struct {
	From   string `json:"from"`
	To     string `json:"to"`
	Agent  string `json:"agent"`
	CallID string `json:"call_id"`
}

// AgentMessage records an interactive agent's text to the user; the
// frame then waits for the user's reply.
type AgentMessage struct {
	Text string `json:"text"`
}

// TurnPaused records that the session waits for a person.
type TurnPaused struct {
	Interrupts []Interrupt `json:"interrupts"`
	// Created lists the ids of the interrupts that no earlier pause listed:
	// asked for in this turn (a parallel batch decided in part pauses again
	// on the rest, which are not new). Webhooks announce these.
	Created []string `json:"created,omitempty"`
}

// MarshalJSON records the interrupts without their Ask (see recorded), as
// InterruptRequested's does.
func (p TurnPaused) MarshalJSON() ([]byte, error) {
	type plain TurnPaused
	return segjson.Marshal(struct {
		plain
		Interrupts []recorded `json:"interrupts"`
	}{plain(p), recordedAll(p.Interrupts)})
}

// TurnCompleted records the root agent's answer.
type TurnCompleted struct {
	Output string `json:"output"`
	// OutputJSON is the answer as a JSON value, for an agent with an
	// output schema (Output is then its text).
	OutputJSON json.RawMessage `json:"output_json,omitempty"`
}

// ReviewRequested records that an agent's final answer waits for a person.
type ReviewRequested struct {
	Interrupt Interrupt `json:"interrupt"`
	// Text is the answer as the model gave it (Interrupt.Output is its
	// value).
	Text string `json:"text"`
}

// MarshalJSON records the interrupt without its Ask (see recorded).
func (p ReviewRequested) MarshalJSON() ([]byte, error) {
	type plain ReviewRequested
	return json.Marshal(struct {
		plain
		Interrupt recorded `json:"interrupt"`
	}{plain(p), recorded(p.Interrupt)})
}

// OutputRejected sends a final answer back to the model that gave it, with
// the reason it sees.
type OutputRejected struct {
	// Reason is why, as the model reads it.
	Reason string `json:"reason"`
	// Attempt counts the answers rejected in this frame so far, this one
	// included.
	Attempt int `json:"attempt"`
}

// TurnFailed records why a turn could not finish.
type TurnFailed struct {
	Error Failure `json:"error"`
}

// TurnCancelled records that the user cancelled the whole turn.
type TurnCancelled struct {
	Reason string `json:"reason,omitempty"`
	// Actor is who cancelled, when known (the audit trail).
	Actor Actor `json:"actor,omitzero"`
}

// TurnInterrupted records that a runner stopped driving the turn before
// its end and released the session; it stays running until taken over.
type TurnInterrupted struct {
	Reason string `json:"reason"`
}

// SessionForked ends the copy of another session's log a fork starts
// with (Runner.Fork): the session is a fork of From, and every deadline of
// what it waits for (an approval's expiry, its reminders) is moved by
// Shift, the time between the pause it was forked at and the fork, so the
// fork's approvals have the time the original's had.
type SessionForked struct {
	From  ForkOrigin    `json:"from"`
	Shift time.Duration `json:"shift_ns,omitempty"`
	// Interrupts are what the fork waits for (its deadlines moved): the
	// copy's pending interrupts, which webhooks announce as created.
	Interrupts []Interrupt `json:"interrupts,omitempty"`
}

// MarshalJSON records the interrupts without their Ask (see recorded).
func (p SessionForked) MarshalJSON() ([]byte, error) {
	type plain SessionForked
	return json.Marshal(struct {
		plain
		Interrupts []recorded `json:"interrupts,omitempty"`
	}{plain(p), recordedAll(p.Interrupts)})
}

// DefinitionChanged: from here on the session runs under the definition
// To of its agent instead of From (both content hashes; see
// Session.Definition).
type DefinitionChanged struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// IsForkPoint reports whether a session may be forked at an event of type
// t (Runner.Fork): one that ends a run of its turn, after which it paused
// or waited for the user's next message, or a fork's own start.
func (t EventType) IsForkPoint() bool {
	// A filter of event types: those that end a run.
	//exhaustive:ignore
	switch t {
	case EventTurnPaused, EventTurnCompleted, EventTurnFailed, EventTurnCancelled, EventSessionForked:
		return true
	}
	return false
}

// ForkOrigin is where a fork comes from: the session and the seq of the
// event its copy ends with (Session.ForkedFrom).
type ForkOrigin struct {
	SessionID string `json:"session_id"`
	Seq       int64  `json:"seq"`
}

// ModelDelta is streamed text of a model's reply (never stored).
type ModelDelta struct {
	Text string `json:"text"`
}

// ModelDeltasSkipped tells a subscriber it gets no more of a reply's
// deltas (never stored); see EventModelDeltasSkipped.
type ModelDeltasSkipped struct {
	// Reason is "behind" (the reader fell behind) or "joined" (it came in
	// after the reply began).
	Reason string `json:"reason"`
}

func (*ModelDelta) isPayload()         {}
func (*OutputRejected) isPayload()     {}
func (*ReviewRequested) isPayload()    {}
func (*ModelDeltasSkipped) isPayload() {}
func (*SessionStarted) isPayload()     {}
func (*UserMessage) isPayload()        {}
func (*ModelResponse) isPayload()      {}
func (*InterruptRequested) isPayload() {}
func (*WaitExpired) isPayload()        {}
func (*DecisionMade) isPayload()       {}
func (*ApprovalAdded) isPayload()      {}
func (*ToolStarted) isPayload()        {}
func (*ToolResult) isPayload()         {}
func (*FramePushed) isPayload()        {}
func (*FramePopped) isPayload()        {}
func (*Handoff) isPayload()            {}
func (*AgentMessage) isPayload()       {}
func (*TurnPaused) isPayload()         {}
func (*TurnCompleted) isPayload()      {}
func (*TurnFailed) isPayload()         {}
func (*TurnCancelled) isPayload()      {}
func (*TurnInterrupted) isPayload()    {}
func (*SessionForked) isPayload()      {}
func (*DefinitionChanged) isPayload()  {}
