package cairn

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/internal/local"
)

// Pending is what a tool returns when the work it started finishes later,
// on another system (a CI pipeline, a payment that settles by webhook, a
// ticket someone closes):
//
//	url, err := cairn.CallbackURL(ctx)
//	if err != nil { return "", err }
//	run := ci.Start(ctx, args.Ref, url) // the pipeline POSTs its result to url
//	return "", cairn.Pending(run.ID, "pipeline "+run.ID+" started")
//
// The call then waits for its result under an interrupt of kind external
// (with handle and message), the session pauses once the turn's other
// calls are done, and the result arrives by the callback URL, a decision
// {"action": "complete", "output": …} or {"action": "fail", "reason": …},
// or Runner.Complete. The first completion wins; the tool is not run
// again. Tool.Wait sets a deadline.
func Pending(handle, message string) error {
	return &local.PendingError{Handle: handle, Message: message}
}

// CallbackURL returns the signed one-time URL that completes the running
// tool call if it returns Pending: a POST of {"output": …} or {"error":
// "…"} to it, with no other credential, completes or fails the call once
// (POST /v1/callbacks/{token}). It is RunnerOptions.PublicURL followed by
// the path; without a PublicURL it is the path alone. It needs a store that
// keeps secrets (every store of this module does); the key is kept there,
// so any runner on the store takes the URL.
func CallbackURL(ctx context.Context) (string, error) {
	c := local.CallFrom(ctx)
	if c == nil {
		return "", errors.New("cairn.CallbackURL: called outside a tool run by a cairn.Runner")
	}
	return c.CallbackURL(ctx)
}

// CallbackPath is where callback URLs (CallbackURL) point, under
// RunnerOptions.PublicURL; the token follows. The HTTP server (package
// server) serves it: POST /v1/callbacks/{token}.
const CallbackPath = local.CallbackPath

// Wait is the deadline of a tool whose work finishes later (Pending), and
// what happens when it passes with no result.
type Wait struct {
	// Timeout is how long a call waits for its result; 0: no deadline.
	Timeout time.Duration
	// OnTimeout is OnTimeoutError (the default: an error result the model
	// sees), OnTimeoutRetry (the tool starts again, with a new callback
	// URL) or OnTimeoutAsk (a person approves starting it again, or
	// rejects).
	OnTimeout OnTimeout
	// Retries bounds OnTimeoutRetry (0 means 2); after the last, the call
	// fails as with OnTimeoutError.
	Retries int
}

// ClientTool declares a tool the caller runs: it has no Handler here. A
// call waits under an interrupt of kind client (tool, arguments,
// result_schema) for the caller to complete it with the result (checked
// against spec.ResultSchema first) or fail it: a browser reading the
// user's location, a file picker, a dialog of the client's own. spec gives
// Name, Description, Parameters, ResultSchema and approval settings; its
// Handler is ignored. The configuration file's `kind: client`.
func ClientTool(spec *Tool) *Tool {
	t := &Tool{}
	if spec != nil {
		*t = *spec
	}
	t.Handler, t.kind = nil, engine.ToolClient
	return t
}

// Completion is a waiting call's result (Output, any JSON value; a string
// is the text the model reads) or, with Error set, why the work failed.
type Completion struct {
	Output json.RawMessage
	Error  string
}

// Complete completes (or, with c.Error, fails) the call a session waits on
// under interrupt interruptID, of kind external or client, and runs the
// session on like Resume. It needs no seq: the first completion wins, and
// a later one gets ErrConflict naming the first, or ErrExpired once the
// wait's deadline passed. The output is checked against the tool's result
// schema first (ErrInvalidOutput). A completion that arrives while the
// session runs (its batch's other calls are still running, the call has
// not yet said it waits, or its process died and the session is being
// taken over) waits up to RunnerOptions.CompletionWait (30 seconds) for
// the session to wait on it, then gets ErrSessionBusy with nothing
// recorded. A call in doubt (its process died while it ran) is settled by
// a completion naming its wait id, the interrupt its callback URL
// completes. opts.Actor is recorded as who completed it; opts may be nil.
func (r *Runner) Complete(ctx context.Context, sessionID, interruptID string, c Completion, opts *TurnOptions) (*Session, error) {
	return r.rt.Complete(ctx, sessionID, interruptID, local.Completion(c), opts.rt())
}

// Callback completes the call a callback URL names (the token is what
// follows /v1/callbacks/), as Complete does, recorded as done by
// {"name": "callback", "role": "callback"}. ErrInvalidLink when no runner
// on this store signed the token, or it was altered; ErrGone when the
// session it was issued for was purged (even if a later session has its
// id).
func (r *Runner) Callback(ctx context.Context, token string, c Completion) (*Session, error) {
	return r.rt.Callback(ctx, token, local.Completion(c))
}
