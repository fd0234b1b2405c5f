package local

import (
	"errors"
	"fmt"

	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/store"
)

// storeError words a store's conflict or absence of session id as the
// runner's refusal of the request.
func storeError(err error, id string) error {
	switch {
	case errors.Is(err, store.ErrConflict):
		return &session.Error{Code: session.CodeConflict, Message: fmt.Sprintf("session %s changed since it was read (another request won); reload it and retry", id), Err: err}
	case errors.Is(err, store.ErrNotFound):
		return &session.Error{Code: session.CodeNotFound, Message: fmt.Sprintf("no session %q", id), Err: err}
	}
	return err
}

// invalid is an ErrInvalidContinuation; a %w in format makes that error
// its cause.
func invalid(format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	return &session.Error{Code: session.CodeInvalidContinuation, Message: "invalid continuation: " + err.Error(), Err: errors.Unwrap(err)}
}
