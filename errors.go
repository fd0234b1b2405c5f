package cairn

import (
	"github.com/cairnhq/cairn/session"
)

// Errors callers branch on with errors.Is. A request refused with one of them
// changed nothing. ErrorCode gives the code the HTTP API sends.
var (
	// ErrConflict: the session is not in a state that accepts the request
	// (not paused, a turn is running) or seq is stale (another request won).
	ErrConflict = session.ErrConflict
	// ErrNotFound: no such session.
	ErrNotFound = session.ErrNotFound
	// ErrUnknownAgent: no agent by that name.
	ErrUnknownAgent = session.ErrUnknownAgent
	// ErrUnknownInterrupt: a decision names no pending interrupt.
	ErrUnknownInterrupt = session.ErrUnknownInterrupt
	// ErrInvalidArguments: replacement arguments fail the tool's schema.
	ErrInvalidArguments = session.ErrInvalidArguments
	// ErrInvalidOutput: an edited answer fails the agent's output schema.
	ErrInvalidOutput = session.ErrInvalidOutput
	// ErrExpired: a decision came after the interrupt's ExpiresAt; the
	// approval counts as rejected, a wait on a system has its tool's
	// timeout outcome.
	ErrExpired = session.ErrExpired
	// ErrInvalidRequest: a request is malformed (no decisions, bad action…).
	ErrInvalidRequest = session.ErrInvalidRequest
	// ErrInvalidContinuation: a continuation token is malformed, truncated,
	// modified, signed with an unknown key, or meant for another agent.
	// Nothing ran.
	ErrInvalidContinuation = session.ErrInvalidContinuation
	// ErrInvalidLink: an action link that no runner on this store signed,
	// or that was altered.
	ErrInvalidLink = session.ErrInvalidLink
	// ErrSessionBusy: a completion (Complete, Callback) arrived while its
	// session ran, and the session did not come to wait on the call within
	// 30 seconds. Nothing was recorded; send the completion again.
	ErrSessionBusy = session.ErrSessionBusy
	// ErrAlreadyDecided: the interrupt a decision (or completion) names was
	// decided before: the message says what, by whom and when. It wraps
	// ErrConflict one way, so errors.Is(err, ErrConflict) holds for it and
	// the HTTP API answers 409, with error.code "already_decided".
	ErrAlreadyDecided = session.ErrAlreadyDecided
	// ErrGone: an action link or callback URL of a session that was
	// purged. It never acts again, not even on a later session given the
	// same id (each session's links carry its random nonce); the HTTP API
	// answers 410 with error.code "gone".
	ErrGone = session.ErrGone
	// ErrForbidden: the actor's role does not decide this interrupt (a
	// user approving a call; only an owner answers its own questions).
	ErrForbidden = session.ErrForbidden
	// ErrNotAnApprover: the actor is not among the interrupt's approvers:
	// not in one of its groups, or the person who asked for the call under
	// separation of duties. The message names who may decide.
	ErrNotAnApprover = session.ErrNotAnApprover
	// ErrAlreadyApproved: the same person approved, twice, a call that
	// needs several approvals from distinct people; it counted once.
	ErrAlreadyApproved = session.ErrAlreadyApproved
	// ErrNotAForkPoint: Fork at an event where the session neither paused
	// nor waited for a message; the message names the nearest points
	// before and after. The HTTP API answers 400 not_a_fork_point.
	ErrNotAForkPoint = session.ErrNotAForkPoint
)

// Errors of the runner's own state and of tools.
var (
	// ErrLeaseLost: another process took the session over while this one
	// ran its turn (this process stalled past its lease). Nothing more was
	// recorded by this process; the new owner goes on. It wraps ErrConflict
	// one way: errors.Is(err, ErrConflict) holds for it, but a stale seq or
	// another conflict is not ErrLeaseLost, so a caller can tell the two
	// apart; the HTTP API answers 409 with error.code "lease_lost".
	ErrLeaseLost = session.ErrLeaseLost
	// ErrShuttingDown: the runner is draining (Shutdown) and takes no new
	// turns; nothing was recorded. The HTTP API answers 503 with
	// Retry-After and error.code "stopping": send it to another server.
	ErrShuttingDown = session.ErrShuttingDown
	// ErrInDoubt is what a tool returns (wrapped or not) when it cannot tell
	// whether its work took effect, such as a held MCP call lost in a
	// restart. The call then pauses as an in-doubt approval: a person
	// decides whether it runs again, as after a crash.
	ErrInDoubt = session.ErrInDoubt
)

// ErrorCode returns the machine-readable code of an error returned by a
// Runner ("conflict", "unknown_interrupt", …), or "" for other errors.
func ErrorCode(err error) string {
	return string(session.CodeOf(err))
}
