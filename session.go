package cairn

import "github.com/cairnhq/cairn/session"

// The vocabulary of a session, defined in package session and re-exported
// here so that a program needs only package cairn.
type (
	// Session is one conversation thread as clients see it.
	// Checkpoint is a signed statement of a session's log up to a seq
	// (see docs/audit.md).
	Checkpoint = session.Checkpoint
	// CheckpointSigner signs checkpoints: RunnerOptions.Signer.
	CheckpointSigner = session.CheckpointSigner
	// ScheduledStep is a step of an interrupt's schedule, resolved
	// (Interrupt.Schedule): when it fires, and when it fired.
	ScheduledStep = session.ScheduledStep
	// OnExpiry is what happens at an interrupt's deadline (Interrupt.OnExpiry).
	OnExpiry = session.OnExpiry
	Session  = session.Session
	// Status is the lifecycle state of a session.
	Status = session.Status
	// Kind is what an interrupt waits for.
	Kind = session.Kind
	// Action is what a decision does with an interrupt.
	Action = session.Action
	// Mode is how an agent's frame relates to the one that started it.
	Mode = session.Mode
	// CancelScope is how much of a session a cancel ends.
	CancelScope = session.CancelScope
	// EventType names what an event records.
	EventType = session.EventType
	// StackFrame is one frame of the chain of agents that talk with the user.
	StackFrame = session.StackFrame
	// Failure says why a turn failed.
	Failure = session.Failure
	// Interrupt is why a session is paused.
	Interrupt = session.Interrupt
	// PathStep is one hop of an interrupt's path.
	PathStep = session.PathStep
	// Remote is the task of a remote agent that asked a question (A2A).
	Remote = session.Remote
	// PendingInterrupt is an interrupt in the cross-session inbox.
	PendingInterrupt = session.PendingInterrupt
	// Decision answers one interrupt.
	Decision = session.Decision
	// Actor is who decides.
	Actor = session.Actor
	// Approvers says who may approve a tool's calls (Tool.Approvers).
	Approvers = session.Approvers
	// Approval is one person's approval of a call that needs several.
	Approval = session.Approval
	// Via is how an actor was authenticated.
	Via = session.Via
	// Answer is the user's reply to a question a tool asked (AskFor).
	Answer = session.Answer
	// Remembered is a tool approved for the rest of the session.
	Remembered = session.Remembered
	// Event is one immutable entry of a session's log.
	Event = session.Event
	// Error is a refused request; see ErrorCode and the Err values.
	Error = session.Error
	// OnTimeout is what happens when a call's wait passes its deadline.
	OnTimeout = session.OnTimeout
	// CallRequest is the one call a direct agent's session makes
	// (StartOptions.Call).
	CallRequest = session.CallRequest
	// CallApproval is where an approval request stands (RequestApproval).
	CallApproval = session.CallApproval
	// CallResult is what the caller's function did after its approval.
	CallResult = session.CallResult
	// ApprovalStatus is where an approval request stands: pending,
	// approved, rejected, expired or cancelled.
	ApprovalStatus = session.ApprovalStatus
	// Preview is what an approval's call would do: its tool's dry run
	// (Tool.Preview), shown beside the arguments.
	Preview = session.Preview
	// PreviewFormat says how a preview reads: text, diff or json.
	PreviewFormat = session.PreviewFormat
	// BulkRequest decides many pending calls across sessions at once
	// (Runner.DecideMany): a list, or a Selector with one action.
	BulkRequest = session.BulkRequest
	// BulkDecision is one decision of a BulkRequest's list, with its session.
	BulkDecision = session.BulkDecision
	// Selector picks the pending interrupts a BulkRequest decides.
	Selector = session.Selector
	// BulkResponse is what a bulk decision did, call by call.
	BulkResponse = session.BulkResponse
	// BulkResult is what happened to one call of a bulk decision.
	BulkResult = session.BulkResult
	// ErrorBody is an error as the HTTP API answers it.
	ErrorBody = session.ErrorBody
	// ForkOrigin is where a fork comes from (Session.ForkedFrom).
	ForkOrigin = session.ForkOrigin
	// DefinitionVersion is the version of its agent a session runs under
	// (Session.Definition; Agent.OnNewVersion).
	DefinitionVersion = session.DefinitionVersion
	// Rule is a standing rule: a decision granted once for every matching
	// call of a tool, within a scope, until it expires or is revoked
	// (docs/rules.md).
	Rule = session.Rule
	// RuleGrant turns a decision into a standing rule (Decision.Rule).
	RuleGrant = session.RuleGrant
	// RuleScope is where a standing rule applies.
	RuleScope = session.RuleScope
)

// Where a standing rule applies (RuleGrant.Scope).
const (
	ScopeSession = session.ScopeSession
	ScopeAgent   = session.ScopeAgent
	ScopeTenant  = session.ScopeTenant
)

// Preview formats (Preview.Format), and the most a preview's content
// may have (longer text is cut, longer JSON refused).
const (
	PreviewText     = session.PreviewText
	PreviewDiff     = session.PreviewDiff
	PreviewJSON     = session.PreviewJSON
	MaxPreviewBytes = session.MaxPreviewBytes
)

// TextPreview is a preview of plain text (PreviewText) or of a unified
// diff (PreviewDiff), for a Tool.Preview to return.
func TextPreview(format PreviewFormat, text string) Preview { return session.TextPreview(format, text) }

// JSONPreview is a preview of a JSON value (PreviewJSON), for a
// Tool.Preview to return.
func JSONPreview(v any) (Preview, error) { return session.JSONPreview(v) }

// Statuses, interrupt kinds, decision actions, frame modes, cancel scopes
// and the streamed event type; see package session.
const (
	StatusRunning   = session.StatusRunning
	StatusPaused    = session.StatusPaused
	StatusCompleted = session.StatusCompleted
	StatusFailed    = session.StatusFailed
	StatusCancelled = session.StatusCancelled

	KindApproval = session.KindApproval
	KindInput    = session.KindInput
	KindMessage  = session.KindMessage
	KindReview   = session.KindReview
	KindExternal = session.KindExternal
	KindClient   = session.KindClient

	ActionApprove   = session.ActionApprove
	ActionReject    = session.ActionReject
	ActionAnswer    = session.ActionAnswer
	ActionEdit      = session.ActionEdit
	ActionComplete  = session.ActionComplete
	ActionFail      = session.ActionFail
	RememberSession = session.RememberSession

	ModeMain        = session.ModeMain
	ModeTool        = session.ModeTool
	ModeInteractive = session.ModeInteractive

	OnTimeoutError = session.OnTimeoutError
	OnTimeoutRetry = session.OnTimeoutRetry
	OnTimeoutAsk   = session.OnTimeoutAsk

	CancelTop = session.CancelTop
	CancelAll = session.CancelAll

	// How an actor was authenticated (Actor.Via; empty: the program).
	ViaToken      = session.ViaToken
	ViaOIDC       = session.ViaOIDC
	ViaActionLink = session.ViaActionLink
	ViaCallback   = session.ViaCallback

	// Event types (every one of session.AllEventTypes).
	EventSessionStarted     = session.EventSessionStarted
	EventUserMessage        = session.EventUserMessage
	EventModelResponse      = session.EventModelResponse
	EventApprovalRequested  = session.EventApprovalRequested
	EventInputRequested     = session.EventInputRequested
	EventReviewRequested    = session.EventReviewRequested
	EventExternalRequested  = session.EventExternalRequested
	EventClientRequested    = session.EventClientRequested
	EventWaitExpired        = session.EventWaitExpired
	EventDecision           = session.EventDecision
	EventToolStarted        = session.EventToolStarted
	EventToolResult         = session.EventToolResult
	EventFramePushed        = session.EventFramePushed
	EventFramePopped        = session.EventFramePopped
	EventHandoff            = session.EventHandoff
	EventAgentMessage       = session.EventAgentMessage
	EventOutputRejected     = session.EventOutputRejected
	EventApprovalAdded      = session.EventApprovalAdded
	EventInterruptReminded  = session.EventInterruptReminded
	EventInterruptEscalated = session.EventInterruptEscalated
	EventTurnPaused         = session.EventTurnPaused
	EventTurnCompleted      = session.EventTurnCompleted
	EventTurnFailed         = session.EventTurnFailed
	EventTurnCancelled      = session.EventTurnCancelled
	EventTurnInterrupted    = session.EventTurnInterrupted
	EventSessionForked      = session.EventSessionForked
	EventDefinitionChanged  = session.EventDefinitionChanged
	EventModelDelta         = session.EventModelDelta
	EventModelDeltasSkipped = session.EventModelDeltasSkipped
)

// Kinds lists the interrupt kinds, for messages that name them.
func Kinds() string { return session.Kinds() }
