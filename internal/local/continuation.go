package local

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cairnhq/cairn/continuation"
	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/store"
)

// sharedKey returns the 32-byte key kept in the store under name,
// generating it on first use: the first writer wins, so every runner on
// the store gets the same one.
func sharedKey(ctx context.Context, secrets store.Secrets, name string) ([]byte, error) {
	fresh := make([]byte, 32)
	if _, err := rand.Read(fresh); err != nil {
		return nil, err
	}
	return secrets.Secret(ctx, name, fresh)
}

// continuationKeyName is where a generated key is kept in the store.
const continuationKeyName = "continuation-hmac-v1"

// codec returns the runner's codec: RunnerOptions.ContinuationKeys, or a key
// generated once and kept in the store (if it implements store.Secrets).
func (r *Runner) codec(ctx context.Context) (*continuation.Codec, error) {
	r.codecMu.Lock()
	defer r.codecMu.Unlock()
	if r.cont != nil {
		return r.cont, nil
	}
	keys := r.contKeys
	if len(keys) == 0 {
		secrets, ok := r.store.(store.Secrets)
		if !ok {
			return nil, errors.New("cairn: continuation tokens need a signing key: set RunnerOptions.ContinuationKeys (the store keeps no secrets: it does not implement store.Secrets)")
		}
		k, err := sharedKey(ctx, secrets, continuationKeyName)
		if err != nil {
			return nil, fmt.Errorf("continuation key: %w", err)
		}
		keys = [][]byte{k}
	}
	c, err := continuation.NewCodec(keys...)
	if err != nil {
		return nil, err
	}
	r.cont = c
	return c, nil
}

// Invoke is cairn.Runner.Invoke (documented there).
func (r *Runner) Invoke(ctx context.Context, agent, input string, opts *TurnOptions) (*continuation.Result, error) {
	ctx, _ = opts.apply(ctx)
	scratch := store.NewMemory()
	st := &engine.State{}
	c := r.compiled.Load()
	if err := r.keepDefinition(ctx, c, agent); err != nil {
		return nil, err
	}
	step, err := c.machine.Step(st, engine.Start{SessionID: r.newID(), Nonce: newNonce(), Agent: agent, Text: input}, r.now())
	if err != nil {
		return nil, err
	}
	if _, err := r.driveIn(ctx, scratch, st, step, false); err != nil {
		return nil, err
	}
	return r.result(ctx, st, agent)
}

// Continue is cairn.Runner.Continue (documented there).
func (r *Runner) Continue(ctx context.Context, agent, token string, decisions []session.Decision, opts *TurnOptions) (*continuation.Result, error) {
	ctx, actor := opts.apply(ctx)
	c, err := r.codec(ctx)
	if err != nil {
		return nil, err
	}
	cont, err := c.Decode(token)
	if err != nil {
		return nil, err
	}
	if cont.Agent != agent {
		return nil, invalid("the token is for agent %q, not %q", cont.Agent, agent)
	}
	st, err := stateOf(cont)
	if err != nil {
		return nil, err
	}
	paused := st.Seq
	in := engine.Decide{Seq: paused, Actor: actor, Decisions: decisions}
	m, err := r.forSession(ctx, st)
	if err != nil {
		return nil, err
	}
	step, err := m.machine.Step(st, in, r.now())
	if err != nil {
		return nil, err
	}
	if r.ledger == nil {
		return nil, errors.New("cairn: continuation tokens cannot be resumed: the store keeps no token ledger (set RunnerOptions.Ledger)")
	}
	if err := r.ledger.MarkUsed(ctx, cont.ID); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return nil, r.spent(ctx, cont.ID)
		}
		return nil, fmt.Errorf("spend continuation %s: %w", cont.ID, err)
	}
	res, err := r.resumeStateless(ctx, st, paused, step, agent)
	r.settle(ctx, cont.ID, res, err)
	return res, err
}

// state is the paused session a continuation carries.
func stateOf(cont *continuation.Continuation) (*engine.State, error) {
	if cont.Snapshot == nil {
		st, err := engine.Replay(cont.Events)
		if err != nil {
			return nil, invalid("its events do not replay: %w", err)
		}
		return st, nil
	}
	st, _, err := engine.Restore(cont.Snapshot, nil, nil)
	if err != nil {
		return nil, invalid("its state does not load: %w", err)
	}
	return st, nil
}

// resumeStateless runs a resumed turn in a scratch store, which starts at
// seq, the paused session's (the log up to it lives in no store).
func (r *Runner) resumeStateless(ctx context.Context, st *engine.State, seq int64, step engine.Step, agent string) (*continuation.Result, error) {
	scratch := store.NewMemory()
	if err := scratch.Append(ctx, store.Head{ID: st.SessionID, Agent: st.Agent, Seq: seq}, 0, nil); err != nil {
		return nil, err
	}
	if _, err := r.driveIn(ctx, scratch, st, step, false); err != nil {
		return nil, err
	}
	return r.result(context.WithoutCancel(ctx), st, agent)
}

// outcome is what the ledger keeps of a resume.
type outcome struct {
	Result *continuation.Result `json:"result,omitempty"`
	Error  string               `json:"error,omitempty"`
}

func (r *Runner) spent(ctx context.Context, id string) error {
	e := &continuation.SpentError{TokenID: id}
	data, err := r.ledger.Outcome(ctx, id)
	if err != nil || len(data) == 0 {
		return e
	}
	var o outcome
	if json.Unmarshal(data, &o) == nil {
		e.Result, e.Failure = o.Result, o.Error
	}
	return e
}

// settle records a resume's answer with its spent token. It is written even
// when the caller's ctx ended: the answer is what a retry gets.
func (r *Runner) settle(ctx context.Context, id string, res *continuation.Result, runErr error) {
	o := outcome{Result: res}
	if runErr != nil {
		o.Error = runErr.Error()
	}
	data, err := json.Marshal(o)
	if err == nil {
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		err = r.ledger.SetOutcome(wctx, id, data)
	}
	if err != nil {
		r.log.Error("could not record the answer of a spent continuation token", "token", id, "err", err)
	}
}

func (r *Runner) result(ctx context.Context, st *engine.State, agent string) (*continuation.Result, error) {
	sess := st.View()
	r.markCurrent(sess)
	res := &continuation.Result{Status: sess.Status, Output: sess.Output, Interrupts: sess.Interrupts, Error: sess.Error}
	if sess.Status != session.StatusPaused {
		return res, nil
	}
	snap, err := engine.Snapshot(st)
	if err != nil {
		return nil, err
	}
	c, err := r.codec(ctx)
	if err != nil {
		return nil, err
	}
	if res.Continuation, err = c.Encode(&continuation.Continuation{Agent: agent, Snapshot: snap}); err != nil {
		return nil, err
	}
	if n := len(res.Continuation); n > continuation.MaxBytes {
		return nil, &session.Error{Code: session.CodeTooLarge, Message: fmt.Sprintf(
			"the paused session needs a %d-byte continuation token, over the %d-byte limit: run conversations this long as stored sessions (POST /v1/sessions)", n, continuation.MaxBytes)}
	}
	return res, nil
}
