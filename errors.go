package cairn

import (
	"errors"
	"fmt"

	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/store"
)

// Errors callers branch on with errors.Is. A request refused with one of them
// changed nothing. ErrorCode gives the code the HTTP API sends.
var (
	// ErrConflict: the session is not in a state that accepts the request
	// (not paused, a turn is running) or seq is stale (another request won).
	ErrConflict error = &session.Error{Code: session.CodeConflict, Message: "conflict"}
	// ErrNotFound: no such session.
	ErrNotFound error = &session.Error{Code: session.CodeNotFound, Message: "not found"}
	// ErrUnknownAgent: no agent by that name.
	ErrUnknownAgent error = &session.Error{Code: session.CodeUnknownAgent, Message: "unknown agent"}
	// ErrUnknownInterrupt: a decision names no pending interrupt.
	ErrUnknownInterrupt error = &session.Error{Code: session.CodeUnknownInterrupt, Message: "unknown interrupt"}
	// ErrInvalidArguments: replacement arguments fail the tool's schema.
	ErrInvalidArguments error = &session.Error{Code: session.CodeInvalidArguments, Message: "invalid arguments"}
	// ErrExpired: a decision came after the interrupt's ExpiresAt; the
	// approval counts as rejected.
	ErrExpired error = &session.Error{Code: session.CodeExpired, Message: "expired"}
	// ErrInvalidRequest: a request is malformed (no decisions, bad action…).
	ErrInvalidRequest error = &session.Error{Code: session.CodeInvalidRequest, Message: "invalid request"}
	// ErrInvalidContinuation: a continuation token is malformed, truncated,
	// modified, signed with an unknown key, or meant for another agent.
	// Nothing ran.
	ErrInvalidContinuation error = &session.Error{Code: session.CodeInvalidContinuation, Message: "invalid continuation"}
	// ErrInvalidLink: an action link that no runner on this store signed,
	// or that was altered.
	ErrInvalidLink error = &session.Error{Code: session.CodeInvalidLink, Message: "invalid action link"}
)

// Errors of the runner's own state and of tools.
var (
	// ErrLeaseLost: another process took the session over while this one
	// ran its turn (this process stalled past its lease). Nothing more was
	// recorded by this process; the new owner goes on. It wraps ErrConflict
	// one way: errors.Is(err, ErrConflict) holds for it (and the HTTP API
	// answers 409 conflict), but a stale seq or another conflict is not
	// ErrLeaseLost, so a caller can tell the two apart.
	ErrLeaseLost error = leaseLost{}
	// ErrShuttingDown: the runner is draining (Shutdown) and takes no new turns.
	ErrShuttingDown = errors.New("cairn: the runner is shutting down and takes no new turns; retry on another process")
	// ErrInDoubt is what a tool returns (wrapped or not) when it cannot tell
	// whether its work took effect, such as a held MCP call lost in a
	// restart. The call then pauses as an in-doubt approval: a person
	// decides whether it runs again, as after a crash.
	ErrInDoubt = errors.New("cairn: the tool cannot tell whether its work took effect")
)

type leaseLost struct{}

func (leaseLost) Error() string { return "lease lost: another process took over the session" }
func (leaseLost) Unwrap() error { return ErrConflict }

// ErrorCode returns the machine-readable code of an error returned by a
// Runner ("conflict", "unknown_interrupt", …), or "" for other errors.
func ErrorCode(err error) string {
	var e *session.Error
	if errors.As(err, &e) {
		return string(e.Code)
	}
	return ""
}

func storeError(err error, id string) error {
	switch {
	case errors.Is(err, store.ErrConflict):
		return &session.Error{Code: session.CodeConflict, Message: fmt.Sprintf("session %s changed since it was read (another request won); reload it and retry", id), Err: err}
	case errors.Is(err, store.ErrNotFound):
		return &session.Error{Code: session.CodeNotFound, Message: fmt.Sprintf("no session %q", id), Err: err}
	}
	return err
}
