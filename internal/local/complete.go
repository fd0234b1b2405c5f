package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/store"
)

// CallbackPath is where callback URLs point, under Options.PublicURL; the
// token follows.
const CallbackPath = "/v1/callbacks/"

// Completion is cairn.Completion: a waiting call's result, or its error.
type Completion struct {
	Output json.RawMessage
	Error  string
}

// decision is the decision c makes on interrupt id.
func (c Completion) decision(id string) (session.Decision, error) {
	hasOutput := len(c.Output) > 0 && string(c.Output) != "null"
	switch {
	case hasOutput && c.Error != "":
		return session.Decision{}, &session.Error{Code: session.CodeInvalidRequest, Interrupt: id,
			Message: `send either "output" (the result) or "error" (why the work failed), not both`}
	case c.Error != "":
		return session.Decision{InterruptID: id, Action: session.ActionFail, Reason: c.Error}, nil
	case hasOutput:
		return session.Decision{InterruptID: id, Action: session.ActionComplete, Output: c.Output}, nil
	}
	return session.Decision{}, &session.Error{Code: session.CodeInvalidRequest, Interrupt: id,
		Message: `"output" (the result, any JSON value but null) or "error" (why the work failed) is required`}
}

// DefaultCompletionWait is how long Complete waits for a running session
// to pause before it refuses a completion with session.ErrSessionBusy,
// unless Options.CompletionWait says otherwise.
const DefaultCompletionWait = 30 * time.Second

// Complete is cairn.Runner.Complete (documented there).
func (r *Runner) Complete(ctx context.Context, sessionID, interruptID string, c Completion, opts *TurnOptions) (*session.Session, error) {
	d, err := c.decision(interruptID)
	if err != nil {
		return nil, err
	}
	return r.complete(ctx, sessionID, d, opts)
}

// complete takes completion d (complete or fail) of the call waiting
// under d.InterruptID, or of a call in doubt: one whose process stopped
// while it ran, which the completion settles (the engine tells which
// completions settle it: its own interrupt's id, or the wait id of the
// callback URL its run handed out). While the session runs it waits, up
// to completionWait, for the session to wait on the call.
func (r *Runner) complete(ctx context.Context, sessionID string, d session.Decision, opts *TurnOptions) (*session.Session, error) {
	interruptID := d.InterruptID
	waitCtx, cancel := context.WithTimeout(ctx, r.completionWait)
	defer cancel()
	checked := int64(0) // the log up to here holds no decision on the interrupt
	for {
		sess, err := r.Session(ctx, sessionID)
		if err != nil {
			return nil, err
		}
		if sess.Status == session.StatusPaused && slices.ContainsFunc(sess.Interrupts, func(in session.Interrupt) bool { return in.ID == interruptID || in.InDoubt }) {
			out, err := r.resume(ctx, sessionID, sess.Seq, []session.Decision{d}, opts, "")
			if errors.Is(err, session.ErrAlreadyDecided) {
				return nil, err // another completion won meanwhile: say which, even while its turn runs
			}
			if session.CodeOf(err) == session.CodeUnknownInterrupt {
				return nil, r.completionRefused(ctx, sess, interruptID) // the calls in doubt are others
			}
			if errors.Is(err, session.ErrConflict) && !errors.Is(err, session.ErrLeaseLost) && waitCtx.Err() == nil {
				continue // the session moved on between the read and the decision: read it again
			}
			return out, err
		}
		if sess.Status != session.StatusRunning {
			return nil, r.completionRefused(ctx, sess, interruptID)
		}
		// Running: another completion may have won and its turn runs on
		// (say which at once); or the call has not said it waits yet (its
		// batch's other calls run). Wait for the session's next event,
		// then look again.
		if err := r.decidedBefore(ctx, sessionID, checked, []session.Decision{{InterruptID: interruptID}}); err != nil {
			return nil, err
		}
		checked = sess.Seq // each event wakes this loop: read only what is new
		if !r.nextEvent(waitCtx, sessionID, sess.Seq) {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, &session.Error{Code: session.CodeSessionBusy, Interrupt: interruptID,
				Message: fmt.Sprintf("session %s has been running for %s without waiting on interrupt %s; nothing was recorded: send the completion again later", sessionID, r.completionWait, interruptID)}
		}
	}
}

// nextEvent waits for an event of the session after seq; false when ctx
// ends first.
func (r *Runner) nextEvent(ctx context.Context, sessionID string, after int64) bool {
	for _, err := range r.Follow(ctx, sessionID, after) {
		return err == nil
	}
	return false
}

// completionRefused says why interrupt id of a session that no longer
// waits on it cannot be completed: its deadline passed (expired), it was
// completed or failed already (conflict, naming by whom), or the session
// never waited on it.
func (r *Runner) completionRefused(ctx context.Context, sess *session.Session, id string) error {
	if err := r.decidedBefore(ctx, sess.ID, 0, []session.Decision{{InterruptID: id}}); err != nil {
		return err
	}
	return &session.Error{Code: session.CodeConflict, Interrupt: id,
		Message: fmt.Sprintf("session %s (%s) does not wait on interrupt %s", sess.ID, sess.Status, id)}
}

// decidedBefore says, for the first of decisions whose interrupt the
// session's log (its events after seq after) shows ended, how it ended: decided (ErrAlreadyDecided,
// naming the action, who and when) or past its deadline (ErrExpired). It
// is nil when none ended, or the log cannot be read (the caller's own
// error then stands). Read only on a refused decision: the log is not
// read on the way of one that is taken.
func (r *Runner) decidedBefore(ctx context.Context, sessionID string, after int64, decisions []session.Decision) error {
	evs, err := r.store.Events(ctx, sessionID, after)
	if err != nil {
		return nil
	}
	for _, d := range decisions {
		for _, ev := range slices.Backward(evs) {
			// A filter of event types: only the events that settle a wait.
			//exhaustive:ignore
			switch ev.Type {
			case session.EventWaitExpired:
				var p session.WaitExpired
				if json.Unmarshal(ev.Data, &p) == nil && p.InterruptID == d.InterruptID {
					return &session.Error{Code: session.CodeExpired, Interrupt: d.InterruptID,
						Message: fmt.Sprintf("interrupt %s of session %s passed its deadline at %s (outcome: %s); a late result is not recorded", d.InterruptID, sessionID, ev.Time.UTC().Format(time.RFC3339), p.Outcome)}
				}
			case session.EventDecision:
				var p session.DecisionMade
				if json.Unmarshal(ev.Data, &p) == nil && p.InterruptID == d.InterruptID {
					by := p.Actor.Name + " (" + p.Actor.Role + ")"
					switch {
					case p.Actor.Name == "" && p.Actor.Role == "":
						by = "an unnamed caller"
					case p.Actor.Name == "":
						by = "an unnamed " + p.Actor.Role // a server without auth: an admin with no name
					case p.Actor.Role == "":
						by = p.Actor.Name
					}
					return &session.Error{Code: session.CodeAlreadyDecided, Interrupt: d.InterruptID, Err: session.ErrConflict,
						Message: fmt.Sprintf("interrupt %s of session %s was already decided: %s by %s at %s", d.InterruptID, sessionID, p.Action, by, ev.Time.UTC().Format(time.RFC3339))}
				}
			default:
			}
		}
	}
	return nil
}

// callbackSigner signs callback URLs: the one-time credential a tool that
// finishes later hands to the system doing the work.
type callbackSigner struct{ tokenSigner }

// callbackKeyName is where the callback URLs' key is kept in the store.
const callbackKeyName = "callback-hmac-v1"

// callbackClaims is a callback token's payload.
type callbackClaims struct {
	Session   string `json:"s"`
	Nonce     string `json:"n,omitempty"` // the session's; none in URLs signed before nonces
	Interrupt string `json:"i"`
}

// CallbackURL is the URL a system completes interrupt id of a session at:
// PublicURL (or nothing: a path) + CallbackPath + a signed token.
func (r *Runner) callbackURL(ctx context.Context, sessionID, nonce, id string) (string, error) {
	if r.callbacks == nil {
		return "", fmt.Errorf("cairn: callback URLs need a signing key kept in the store; %T does not implement store.Secrets", r.store)
	}
	tok, err := r.callbacks.seal(ctx, callbackClaims{Session: sessionID, Nonce: nonce, Interrupt: id})
	if err != nil {
		return "", err
	}
	return r.publicURL + CallbackPath + tok, nil
}

// Callback is cairn.Runner.Callback (documented there).
func (r *Runner) Callback(ctx context.Context, token string, c Completion) (*session.Session, error) {
	if r.callbacks == nil {
		return nil, &session.Error{Code: session.CodeInvalidLink, Message: "invalid callback: this runner's store keeps no signing key, so it signed no callback URL"}
	}
	bad := func(why string) error {
		return &session.Error{Code: session.CodeInvalidLink, Message: "invalid callback URL: " + why + "; use the URL exactly as the tool was given it"}
	}
	var claims callbackClaims
	if err := r.callbacks.open(ctx, token, &claims, bad, "not a Cairn callback URL"); err != nil {
		return nil, err
	}
	if claims.Session == "" || claims.Interrupt == "" {
		return nil, bad("the payload is malformed")
	}
	if _, err := r.issuedFor(ctx, claims.Session, claims.Nonce, "callback URL"); err != nil {
		return nil, err
	}
	return r.Complete(ctx, claims.Session, claims.Interrupt, c, &TurnOptions{Actor: session.Actor{Name: "callback", Role: "callback", Via: session.ViaCallback}})
}

// newCallbackSigner returns the store's callback signer, nil when the
// store keeps no secrets.
func newCallbackSigner(st store.Store) *callbackSigner {
	secrets, ok := st.(store.Secrets)
	if !ok {
		return nil
	}
	return &callbackSigner{tokenSigner{secrets: secrets, keyName: callbackKeyName, prefix: "cb1."}}
}
