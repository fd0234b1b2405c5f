package session

import (
	"encoding/json"
	"time"
)

// Event is one immutable entry of a session's log. Data is the JSON payload
// of its Type; docs/http-api.md lists the types and their data. Events with
// Seq 0 (types EventModelDelta and EventModelDeltasSkipped) are streamed to subscribers and never stored.
type Event struct {
	Seq  int64     `json:"seq"`
	Type EventType `json:"type"`
	Time time.Time `json:"time"`
	// Frame is the id of the agent frame the event belongs to, and Agent
	// that frame's agent.
	Frame string          `json:"frame,omitempty"`
	Agent string          `json:"agent,omitempty"`
	Data  json.RawMessage `json:"data"`
	// Hash is EventHash of the event, chained to Prev, the Hash of the
	// session's event before it ("" for the first): the tamper-evident
	// chain cairn audit verify recomputes. Hash is empty on events
	// recorded before the chain existed. Stores keep Hash only (Prev is
	// the event before's): readers fill Prev in where they read that
	// event too (Runner.Events, Runner.Follow after its first event).
	Hash string `json:"hash,omitempty"`
	Prev string `json:"prev,omitempty"`
}

// EventType names what an event records; its Data is that type's payload.
type EventType string

// Event types. They are part of the outside contract: stored, streamed and
// documented in docs/http-api.md.
const (
	EventSessionStarted    EventType = "session_started"
	EventUserMessage       EventType = "user_message"
	EventModelResponse     EventType = "model_response"
	EventApprovalRequested EventType = "approval_requested"
	EventInputRequested    EventType = "input_requested"
	// EventReviewRequested pauses an agent's final answer for a person
	// (an interrupt of kind review).
	EventReviewRequested EventType = "review_requested"
	// EventExternalRequested: a call started work that finishes later
	// (an interrupt of kind external).
	EventExternalRequested EventType = "external_requested"
	// EventClientRequested: a call waits for the caller to run the tool
	// (an interrupt of kind client).
	EventClientRequested EventType = "client_requested"
	// EventWaitExpired: an external call's deadline passed with no result;
	// its Outcome (error, retry or ask) follows.
	EventWaitExpired EventType = "wait_expired"
	EventDecision    EventType = "decision"
	// EventApprovalAdded: one person approved a call that needs several
	// (Interrupt.Required); the interrupt stays pending until the last
	// approval, which is a decision event.
	EventApprovalAdded EventType = "approval_added"
	// EventInterruptReminded: a step of a pending interrupt's schedule
	// reminded the people who may decide it (webhook interrupt.reminder).
	EventInterruptReminded EventType = "interrupt_reminded"
	// EventInterruptEscalated: a step of a pending interrupt's schedule
	// added approver groups, or handed the decision to them (webhook
	// interrupt.escalated).
	EventInterruptEscalated EventType = "interrupt_escalated"
	EventToolStarted        EventType = "tool_started"
	EventToolResult         EventType = "tool_result"
	EventFramePushed        EventType = "frame_pushed"
	EventFramePopped        EventType = "frame_popped"
	EventHandoff            EventType = "handoff"
	EventAgentMessage       EventType = "agent_message"
	// EventOutputRejected sends an agent's final answer back to it: it did
	// not match the agent's output schema. The model sees the reason as a
	// user message and answers again.
	EventOutputRejected  EventType = "output_rejected"
	EventTurnPaused      EventType = "turn_paused"
	EventTurnCompleted   EventType = "turn_completed"
	EventTurnFailed      EventType = "turn_failed"
	EventTurnCancelled   EventType = "turn_cancelled"
	EventTurnInterrupted EventType = "turn_interrupted"
	// EventSessionForked follows the copy of another session's log (up to
	// a point it paused or waited for a message at) that a fork starts
	// with: the session goes on from there in its own way (SessionForked).
	EventSessionForked EventType = "session_forked"
	// EventDefinitionChanged records that a session goes on under another
	// definition of its agent than the one it ran under so far: its agent
	// says on_new_version: latest, and the deployment changed
	// (DefinitionChanged).
	EventDefinitionChanged EventType = "definition_changed"
	// EventModelDelta is streamed text, never stored (Seq 0); only for
	// agents whose model streams.
	EventModelDelta EventType = "model_delta"
	// EventModelDeltasSkipped (Seq 0, never stored) tells a subscriber that
	// it does not get the rest of the reply's deltas (its reader fell
	// behind, or it came in after the reply began), nor those of replies
	// that begin while it is that far behind: the deltas it got of a reply
	// are a beginning of its text, and the reply's model_response has all
	// of it.
	EventModelDeltasSkipped EventType = "model_deltas_skipped"
)
