package continuation

import "github.com/cairnhq/cairn/session"

// Result is the answer of a stateless invocation.
type Result struct {
	Status     session.Status      `json:"status"`
	Output     string              `json:"output"`
	Interrupts []session.Interrupt `json:"interrupts"`
	Error      *session.Failure    `json:"error,omitempty"`
	// Continuation is present while paused: hand it back with decisions to resume.
	Continuation string `json:"continuation,omitempty"`
}

// SpentError answers a continuation token that was already
// resumed. It wraps ErrConflict.
type SpentError struct {
	// TokenID is the spent token's id.
	TokenID string
	// Result is the answer of the resume that spent the token, or nil while
	// that resume runs or when it ended with an error or its process
	// stopped first.
	Result *Result
	// Failure is the error that resume ended with, if it did.
	Failure string
}

// Error implements error.
func (e *SpentError) Error() string {
	switch {
	case e.Result != nil:
		return "this continuation was already resumed; its answer is attached (continue from its continuation)"
	case e.Failure != "":
		return "this continuation was already resumed and that resume failed: " + e.Failure
	}
	return "this continuation was already resumed (the resume is running, or its process stopped before it answered)"
}

// Unwrap makes the error errors.Is ErrConflict.
func (e *SpentError) Unwrap() error { return session.ErrConflict }
