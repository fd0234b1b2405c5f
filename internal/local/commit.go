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
	mine := to == r.store // not a stateless session's scratch store
	fresh := step.Events  // observed below; unwritten ones were at once
	if t != nil && len(t.unwritten.Events) > 0 {
		first := t.unwritten
		t.unwritten = engine.Step{}
		step.Events = append(first.Events, step.Events...)
		// Payloads are valid until the state's next Step, which the
		// first step's have seen: theirs are left out (decoded if needed).
		step.Payloads = append(make([]any, len(first.Events), len(step.Events)), step.Payloads...)
	}
	events := step.Events
	if len(events) == 0 {
		return nil
	}
	policy := noSnapshots
	if mine {
		policy = r.snapshots
	}
	head, log, view, err := headAndView(st, step, r.lease(st, events, st.UpdatedAt), policy)
	if err != nil {
		return err
	}
	// The engine chained these events' hashes (stepper.chain), unless some
	// are a copy of another session's log (a fork's first step).
	head.Chained = step.Copied == 0
	if mine {
		err = r.appendStep(ctx, head, st.Nonce, step)
	} else if err = to.Append(ctx, head, events[0].Seq-1, events); err != nil {
		err = storeError(err, st.SessionID)
	}
	if err != nil {
		return err
	}
	st.Log = log
	if t != nil {
		t.view = view
	}
	for _, ev := range fresh {
		observe(ctx, ev)
	}
	return nil
}

// appendStep writes a step to the runner's store in one commit, with its
// webhook messages, and tells subscribers, the deliverer and the metrics.
// step.Payloads may be nil (a mirrored step): they are decoded if needed.
// nonce is the session's, which the messages' ids and links carry.
func (r *Runner) appendStep(ctx context.Context, head store.Head, nonce string, step engine.Step) error {
	events := step.Events
	if r.hooks != nil {
		var err error
		if head.Outbox, err = r.webhookMessages(ctx, head.ID, nonce, head.Agent, head.Tenant, head.Seq, step); err != nil {
			return fmt.Errorf("webhooks of session %s: %w", head.ID, err)
		}
	}
	head.Checkpoint = r.checkpoint(head, events)
	began := time.Now()
	if err := r.store.Append(ctx, head, events[0].Seq-1, events); err != nil {
		return storeError(err, head.ID)
	}
	r.metrics.committed(ctx, head.Tenant, step, time.Since(began))
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
