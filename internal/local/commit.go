package local

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"maps"
	"time"

	"github.com/cairnhq/cairn/audit"
	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/store"
)

// commit appends the events of one step in one durable write.
func (r *Runner) commit(ctx context.Context, st *engine.State, step engine.Step) error {
	return r.commitTo(ctx, r.store, st, nil, step)
}

// commitTo appends step's events to store to; t is the turn writing them
// (nil: none), whose unwritten first step, if any, goes in the same commit.
func (r *Runner) commitTo(ctx context.Context, to store.Store, st *engine.State, t *turn, step engine.Step) error {
	c, err := r.prepareCommit(ctx, to, st, t, step)
	if err != nil || len(c.step.Events) == 0 {
		return err
	}
	if err := r.writeCommit(ctx, &c); err != nil {
		return err
	}
	c.done(st, t)
	c.tell(ctx)
	return nil
}

// preparedCommit is a step's commit as prepareCommit makes it (the head
// row, its summary, checkpoint, snapshot and webhook messages): what
// writeCommit writes and done records once written. Making it reads the
// state; writing it does not, so a write may overlap the turn's next
// model call (driveIn).
type preparedCommit struct {
	to    store.Store
	mine  bool // the runner's store, not a stateless session's scratch one
	head  store.Head
	step  engine.Step // all the events written, with their payloads
	fresh []session.Event
	log   engine.LogStats
	view  *session.Session
}

// prepareCommit makes the commit of step (with t's unwritten first step,
// which it takes); no events, no commit: its step has none.
func (r *Runner) prepareCommit(ctx context.Context, to store.Store, st *engine.State, t *turn, step engine.Step) (c preparedCommit, err error) {
	c.to, c.mine = to, to == r.store
	c.fresh = step.Events // observed once written; unwritten ones were at once
	if t != nil && len(t.unwritten.Events) > 0 {
		first := t.unwritten
		t.unwritten = engine.Step{}
		step.Events = append(first.Events, step.Events...)
		// Payloads are valid until the state's next Step, which the
		// first step's have seen: theirs are left out (decoded if needed).
		step.Payloads = append(make([]any, len(first.Events), len(step.Events)), step.Payloads...)
	}
	if len(step.Events) == 0 {
		return c, nil
	}
	c.step = step
	policy := noSnapshots
	if c.mine {
		policy = r.snapshots
	}
	if c.head, c.log, c.view, err = headAndView(st, step, r.lease(st, step.Events, st.UpdatedAt), policy); err != nil {
		return c, err
	}
	// The engine chained these events' hashes (stepper.chain), unless some
	// are a copy of another session's log (a fork's first step).
	c.head.Chained = step.Copied == 0
	if c.mine {
		c.head, err = r.sealStep(ctx, c.head, st.Nonce, step)
	}
	return c, err
}

// writeCommit writes a prepared commit and, once written, tells
// subscribers (the caller's observer is told by tell, on the turn's
// goroutine).
func (r *Runner) writeCommit(ctx context.Context, c *preparedCommit) error {
	events := c.step.Events
	if c.mine {
		if err := r.appendSealed(ctx, c.head, c.step); err != nil {
			return err
		}
	} else if err := c.to.Append(ctx, c.head, events[0].Seq-1, events); err != nil {
		return storeError(err, c.head.ID)
	}
	return nil
}

// tell gives the caller's observer the events c wrote (not those of a
// first step held unwritten: it had them at once).
func (c *preparedCommit) tell(ctx context.Context) {
	for _, ev := range c.fresh {
		observe(ctx, ev)
	}
}

// done records in the state and the turn that c is written.
func (c *preparedCommit) done(st *engine.State, t *turn) {
	st.Log = c.log
	if t != nil {
		t.view = c.view
	}
}

// appendStep writes a step to the runner's store in one commit, with its
// webhook messages, and tells subscribers, the deliverer and the metrics.
// step.Payloads may be nil (a mirrored step): they are decoded if needed.
// nonce is the session's, which the messages' ids and links carry.
func (r *Runner) appendStep(ctx context.Context, head store.Head, nonce string, step engine.Step) error {
	head, err := r.sealStep(ctx, head, nonce, step)
	if err != nil {
		return err
	}
	return r.appendSealed(ctx, head, step)
}

// sealStep adds to the head of a step's commit its webhook messages and
// its signed checkpoint, if any.
func (r *Runner) sealStep(ctx context.Context, head store.Head, nonce string, step engine.Step) (store.Head, error) {
	if r.hooks != nil {
		var err error
		if head.Outbox, err = r.webhookMessages(ctx, head.ID, nonce, head.Agent, head.Tenant, head.Seq, step); err != nil {
			return head, fmt.Errorf("webhooks of session %s: %w", head.ID, err)
		}
	}
	var err error
	if head.Rules, head.RuleUses, head.Decisions, err = decisionChanges(head, step); err != nil {
		return head, fmt.Errorf("standing rules of session %s: %w", head.ID, err)
	}
	head.Checkpoint = r.checkpoint(head, step.Events)
	return head, nil
}

// appendSealed is appendStep's write, once sealed.
func (r *Runner) appendSealed(ctx context.Context, head store.Head, step engine.Step) error {
	events := step.Events
	began := time.Now()
	if err := r.store.Append(ctx, head, events[0].Seq-1, events); err != nil {
		return storeError(err, head.ID)
	}
	r.metrics.committed(ctx, head.Tenant, step, time.Since(began))
	r.metrics.decided(ctx, head.Decisions)
	r.hub.published(head.ID, events)
	if len(head.Outbox) > 0 {
		r.hooks.deliverer.Wake()
	}
	return nil
}

// DefaultCheckpointEvery is cairn.DefaultCheckpointEvery.
const DefaultCheckpointEvery = 100

// checkpoint signs the checkpoint that head's commit of events carries, if
// any: at every pause and turn's end (the head is not running), and when
// the events cross a multiple of signEvery while a turn runs. Counting by
// seq needs no memory of the last checkpoint, so every driver and every
// process sharing the store signs at the same events.
func (r *Runner) checkpoint(head store.Head, events []session.Event) *session.Checkpoint {
	last := &events[len(events)-1]
	if r.signer == nil || last.Hash == "" {
		return nil
	}
	if head.Status == session.StatusRunning && (events[0].Seq-1)/r.signEvery == last.Seq/r.signEvery {
		return nil
	}
	cp := r.signer.Sign(head.ID, last.Seq, last.Hash, head.UpdatedAt)
	return &cp
}

// trustedKeys are the keys Audit trusts: keys, and the signer's own when
// it says what it is (audit.Key does).
func trustedKeys(keys audit.Keys, signer session.CheckpointSigner) audit.Keys {
	out := maps.Clone(keys)
	if k, ok := signer.(interface {
		ID() string
		Public() ed25519.PublicKey
	}); ok {
		if out == nil {
			out = audit.Keys{}
		}
		_ = out.Add(k.ID(), k.Public()) // a clash is the caller's keys': theirs stand
	}
	return out
}

// Audit is cairn.Runner.Audit (documented there).
func (r *Runner) Audit(ctx context.Context, id string) (audit.State, error) {
	s, err := audit.SessionState(ctx, r.store, id, r.auditKeys)
	if err != nil {
		return s, storeError(err, id)
	}
	return s, nil
}
