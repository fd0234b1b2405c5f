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
)

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
