package session

import (
	"errors"

	"github.com/cairnhq/cairn/model"
)

// Failure says why a turn failed (Session.Error, the turn_failed event). It
// is an error; for a failed model call, errors.As on it reaches the
// *model.ProviderError with the provider's HTTP status and request id.
type Failure struct {
	// Code classifies the failure: "model_error", "model_timeout",
	// "model_reply_too_large" (a limit of the model ended its call),
	// "max_iterations",
	// "unknown_agent", "internal".
	Code    string `json:"code"`
	Message string `json:"message"`
	// Provider describes the model call that failed, when the provider
	// refused or failed it.
	Provider *model.ProviderError `json:"provider,omitempty"`
}

// Error returns the message.
func (f *Failure) Error() string { return f.Message }

// Unwrap returns the provider error, if any.
func (f *Failure) Unwrap() error {
	if f == nil || f.Provider == nil {
		return nil
	}
	return f.Provider
}

// Code classifies a refused request; the HTTP API sends it as error.code.
type Code string

// Codes callers branch on.
const (
	CodeInvalidRequest   Code = "invalid_request"
	CodeUnknownAgent     Code = "unknown_agent"
	CodeUnknownInterrupt Code = "unknown_interrupt"
	CodeInvalidArguments Code = "invalid_arguments"
	// CodeInvalidOutput: an edited answer does not match the agent's
	// output schema.
	CodeInvalidOutput       Code = "invalid_output"
	CodeConflict            Code = "conflict"
	CodeNotFound            Code = "not_found"
	CodeExpired             Code = "expired"
	CodeInvalidContinuation Code = "invalid_continuation"
	// CodeInvalidLink: an action link no server on the store signed, or altered.
	CodeInvalidLink Code = "invalid_link"
	// CodeAlreadyDecided: a decision (or completion) on an interrupt that
	// was decided before; the message says what was decided, by whom and
	// when. It is a conflict (errors.Is ErrConflict holds).
	CodeAlreadyDecided Code = "already_decided"
	// CodeForbidden: the actor's role does not decide this (a user
	// approving a call); HTTP 403.
	CodeForbidden Code = "forbidden"
	// CodeNotAnApprover: the actor is not among the interrupt's approvers
	// (another group, or the requester under separation of duties); the
	// message names who may decide. HTTP 403.
	CodeNotAnApprover Code = "not_an_approver"
	// CodeAlreadyApproved: the same person approved a call that needs
	// several approvals twice; it counts once. A conflict (errors.Is
	// ErrConflict holds); HTTP 409.
	CodeAlreadyApproved Code = "already_approved"
	// CodeSessionBusy: a completion arrived while its session ran and did
	// not wait on the call in time; nothing was recorded: send it again.
	CodeSessionBusy Code = "session_busy"
	// CodeLeaseLost: another process took the session over while this
	// one ran its turn; it is a conflict (errors.Is ErrConflict holds),
	// told apart from a stale seq.
	CodeLeaseLost Code = "lease_lost"
	// CodeStopping: the process is draining (shutting down) and takes no
	// new turns; nothing was recorded: send the request again, to another
	// process.
	CodeStopping Code = "stopping"
	// CodeGone: a link or callback URL issued for a session that was
	// purged (its id may since be used by a later session, which the link
	// never acts on).
	CodeGone Code = "gone"
	// CodeTooLarge: a paused session no longer fits in a continuation token.
	CodeTooLarge Code = "too_large"
	// CodeNotAForkPoint: a fork at an event where the session neither
	// paused nor waited for a message; the message names the nearest
	// points before and after. HTTP 400.
	CodeNotAForkPoint Code = "not_a_fork_point"
	// CodeInternal is an engine fault, not a refused input: the state it
	// was applied to must be discarded.
	CodeInternal Code = "internal"
)

// HTTPStatus is the status the HTTP API answers a refusal of code c with
// (0: not a refusal, an internal error: 500).
func (c Code) HTTPStatus() int {
	switch c {
	case CodeInvalidRequest, CodeUnknownAgent, CodeUnknownInterrupt, CodeInvalidArguments, CodeInvalidOutput, CodeInvalidContinuation, CodeNotAForkPoint:
		return 400
	case CodeConflict, CodeAlreadyDecided, CodeAlreadyApproved, CodeLeaseLost:
		return 409
	case CodeInvalidLink, CodeForbidden, CodeNotAnApprover:
		return 403
	case CodeNotFound:
		return 404
	case CodeExpired, CodeGone:
		return 410
	case CodeTooLarge:
		return 413
	case CodeSessionBusy, CodeStopping:
		return 503
	}
	return 0
}

// Error is a refused request. A refused request changes nothing. Match a
// kind with errors.Is against the sentinel errors of package cairn (same
// Code), or read Code and Interrupt with errors.As.
type Error struct {
	Code    Code
	Message string
	// Interrupt is the id of the interrupt the error is about, if any.
	Interrupt string
	// Err is the cause, if any (a store's ErrConflict, …).
	Err error
}

// Error returns the message.
func (e *Error) Error() string { return e.Message }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is an *Error with the same code, so sentinel
// values work with errors.Is. Only target itself counts, not what it
// wraps: an error that wraps a sentinel (cairn.ErrLeaseLost wraps
// ErrConflict) is not matched by every error of that code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// CodeOf returns the code of the *Error in err's chain, or "" if there is
// none.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// The errors callers branch on with errors.Is, defined once here and
// re-exported by package cairn (which documents each). A request refused
// with one of the coded ones changed nothing.
var (
	ErrConflict            error = &Error{Code: CodeConflict, Message: "conflict"}
	ErrNotFound            error = &Error{Code: CodeNotFound, Message: "not found"}
	ErrUnknownAgent        error = &Error{Code: CodeUnknownAgent, Message: "unknown agent"}
	ErrUnknownInterrupt    error = &Error{Code: CodeUnknownInterrupt, Message: "unknown interrupt"}
	ErrInvalidArguments    error = &Error{Code: CodeInvalidArguments, Message: "invalid arguments"}
	ErrInvalidOutput       error = &Error{Code: CodeInvalidOutput, Message: "invalid output"}
	ErrExpired             error = &Error{Code: CodeExpired, Message: "expired"}
	ErrInvalidRequest      error = &Error{Code: CodeInvalidRequest, Message: "invalid request"}
	ErrInvalidContinuation error = &Error{Code: CodeInvalidContinuation, Message: "invalid continuation"}
	ErrInvalidLink         error = &Error{Code: CodeInvalidLink, Message: "invalid action link"}
	ErrSessionBusy         error = &Error{Code: CodeSessionBusy, Message: "session busy"}
	ErrAlreadyDecided      error = &Error{Code: CodeAlreadyDecided, Message: "already decided"}
	ErrGone                error = &Error{Code: CodeGone, Message: "gone"}
	ErrForbidden           error = &Error{Code: CodeForbidden, Message: "forbidden"}
	ErrNotAnApprover       error = &Error{Code: CodeNotAnApprover, Message: "not an approver"}
	ErrAlreadyApproved     error = &Error{Code: CodeAlreadyApproved, Message: "already approved"}
	ErrNotAForkPoint       error = &Error{Code: CodeNotAForkPoint, Message: "not a fork point"}

	// ErrLeaseLost wraps ErrConflict one way: errors.Is(ErrLeaseLost,
	// ErrConflict) holds, errors.Is(ErrConflict, ErrLeaseLost) does not.
	ErrLeaseLost    error = &Error{Code: CodeLeaseLost, Message: "lease lost: another process took over the session", Err: ErrConflict}
	ErrShuttingDown error = &Error{Code: CodeStopping, Message: "cairn: the runner is shutting down and takes no new turns; nothing was recorded: retry on another process"}
	ErrInDoubt            = errors.New("cairn: the tool cannot tell whether its work took effect")
)
