package runtime

import (
	"github.com/cairnhq/cairn/continuation"
	"github.com/cairnhq/cairn/session"
)

// The session vocabulary under the short names the runtime's code reads
// best with; package cairn re-exports the same types.
type (
	Session          = session.Session
	Status           = session.Status
	Event            = session.Event
	Actor            = session.Actor
	Decision         = session.Decision
	Interrupt        = session.Interrupt
	PendingInterrupt = session.PendingInterrupt
	Answer           = session.Answer
	CancelScope      = session.CancelScope
	Mode             = session.Mode
	Result           = continuation.Result
	Codec            = continuation.Codec
	Continuation     = continuation.Continuation
)

const (
	StatusPaused    = session.StatusPaused
	StatusRunning   = session.StatusRunning
	ModeInteractive = session.ModeInteractive
	CancelTop       = session.CancelTop
	CancelAll       = session.CancelAll
)

// The errors the runtime returns and branches on (package session defines them).
var (
	ErrConflict     = session.ErrConflict
	ErrNotFound     = session.ErrNotFound
	ErrLeaseLost    = session.ErrLeaseLost
	ErrShuttingDown = session.ErrShuttingDown
	ErrInDoubt      = session.ErrInDoubt
	ErrInvalidLink  = session.ErrInvalidLink
	ErrExpired      = session.ErrExpired
)
