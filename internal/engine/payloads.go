package engine

import "github.com/cairnhq/cairn/session"

// The event payloads are defined in package session (public, data only);
// the engine projects them onto its State (project).
type (
	SessionStarted     = session.SessionStarted
	UserMessage        = session.UserMessage
	ModelResponse      = session.ModelResponse
	InterruptRequested = session.InterruptRequested
	WaitExpired        = session.WaitExpired
	DecisionMade       = session.DecisionMade
	ApprovalAdded      = session.ApprovalAdded
	ToolStarted        = session.ToolStarted
	ToolResult         = session.ToolResult
	FramePushed        = session.FramePushed
	FramePopped        = session.FramePopped
	Handoff            = session.Handoff
	AgentMessage       = session.AgentMessage
	OutputRejected     = session.OutputRejected
	ReviewRequested    = session.ReviewRequested
	TurnPaused         = session.TurnPaused
	TurnCompleted      = session.TurnCompleted
	TurnFailed         = session.TurnFailed
	TurnCancelled      = session.TurnCancelled
	TurnInterrupted    = session.TurnInterrupted
	SessionForked      = session.SessionForked
	DefinitionChanged  = session.DefinitionChanged
)
