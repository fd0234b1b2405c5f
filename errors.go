package cairn

import (
	"errors"
	"fmt"

	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/store"
)

// Errors callers branch on with errors.Is. A request refused with one of them
// changed nothing. ErrorCode gives the code the HTTP API sends.
var (
	// ErrConflict: the session is not in a state that accepts the request
	// (not paused, a turn is running) or seq is stale (another request won).
	ErrConflict error = &engine.Error{Code: engine.CodeConflict, Message: "conflict"}
	// ErrNotFound: no such session.
	ErrNotFound error = &engine.Error{Code: engine.CodeNotFound, Message: "not found"}
	// ErrUnknownAgent: no agent by that name.
	ErrUnknownAgent error = &engine.Error{Code: engine.CodeUnknownAgent, Message: "unknown agent"}
	// ErrUnknownInterrupt: a decision names no pending interrupt.
	ErrUnknownInterrupt error = &engine.Error{Code: engine.CodeUnknownInterrupt, Message: "unknown interrupt"}
	// ErrInvalidArguments: replacement arguments fail the tool's schema.
	ErrInvalidArguments error = &engine.Error{Code: engine.CodeInvalidArguments, Message: "invalid arguments"}
	// ErrExpired: a decision came after the interrupt's ExpiresAt; the
	// approval counts as rejected.
	ErrExpired error = &engine.Error{Code: engine.CodeExpired, Message: "expired"}
	// ErrInvalidRequest: a request is malformed (no decisions, bad action…).
	ErrInvalidRequest error = &engine.Error{Code: engine.CodeInvalidRequest, Message: "invalid request"}
)

// ErrorCode returns the machine-readable code of an error returned by a
// Runner ("conflict", "unknown_interrupt", …), or "" for other errors.
func ErrorCode(err error) string {
	var e *engine.Error
	if errors.As(err, &e) {
		return string(e.Code)
	}
	return ""
}

func storeError(err error, id string) error {
	switch {
	case errors.Is(err, store.ErrConflict):
		return &engine.Error{Code: engine.CodeConflict, Message: fmt.Sprintf("session %s changed since it was read (another request won); reload it and retry", id)}
	case errors.Is(err, store.ErrNotFound):
		return &engine.Error{Code: engine.CodeNotFound, Message: fmt.Sprintf("no session %q", id)}
	}
	return err
}
