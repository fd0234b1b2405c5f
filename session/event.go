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
	Type string    `json:"type"`
	Time time.Time `json:"time"`
	// Frame is the id of the agent frame the event belongs to, and Agent
	// that frame's agent.
	Frame string          `json:"frame,omitempty"`
	Agent string          `json:"agent,omitempty"`
	Data  json.RawMessage `json:"data"`
}

// Event types. They are part of the outside contract: stored, streamed and
// documented in docs/http-api.md.
const (
	EventSessionStarted    = "session_started"
	EventUserMessage       = "user_message"
	EventModelResponse     = "model_response"
	EventApprovalRequested = "approval_requested"
	EventInputRequested    = "input_requested"
	EventDecision          = "decision"
	EventToolStarted       = "tool_started"
	EventToolResult        = "tool_result"
	EventFramePushed       = "frame_pushed"
	EventFramePopped       = "frame_popped"
	EventHandoff           = "handoff"
	EventAgentMessage      = "agent_message"
	EventTurnPaused        = "turn_paused"
	EventTurnCompleted     = "turn_completed"
	EventTurnFailed        = "turn_failed"
	EventTurnCancelled     = "turn_cancelled"
	EventTurnInterrupted   = "turn_interrupted"
	// EventModelDelta is streamed text, never stored (Seq 0); only for
	// agents whose model streams.
	EventModelDelta = "model_delta"
	// EventModelDeltasSkipped (Seq 0, never stored) tells a subscriber that
	// it does not get the rest of the reply's deltas (its reader fell
	// behind, or it came in after the reply began), nor those of replies
	// that begin while it is that far behind: the deltas it got of a reply
	// are a beginning of its text, and the reply's model_response has all
	// of it.
	EventModelDeltasSkipped = "model_deltas_skipped"
)
