package engine

import (
	"errors"
	"fmt"
)

// Code classifies an Error; the HTTP API sends it as error.code.
type Code string

// Error codes callers branch on.
const (
	CodeInvalidRequest      Code = "invalid_request"
	CodeUnknownAgent        Code = "unknown_agent"
	CodeUnknownInterrupt    Code = "unknown_interrupt"
	CodeInvalidArguments    Code = "invalid_arguments"
	CodeConflict            Code = "conflict"
	CodeNotFound            Code = "not_found"
	CodeExpired             Code = "expired"
	CodeInvalidContinuation Code = "invalid_continuation"
	// CodeTooLarge: a paused session no longer fits in a continuation token.
	CodeTooLarge Code = "too_large"
	// CodeInternal is an engine fault, not a refused input: the state it
	// was applied to must be discarded.
	CodeInternal Code = "internal"
)

// Error is a refused input. A refused input changes nothing.
type Error struct {
	Code    Code
	Message string
	// Interrupt is the interrupt id the error is about, if any.
	Interrupt string
}

// Error returns the message.
func (e *Error) Error() string { return e.Message }

// Is reports whether target is an *Error with the same code, so sentinel
// values work with errors.Is.
func (e *Error) Is(target error) bool {
	var t *Error
	return errors.As(target, &t) && t.Code == e.Code
}

func errorf(code Code, format string, args ...any) error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}
