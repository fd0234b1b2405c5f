// Package audit checks that a store's event logs are as Cairn recorded
// them. Every event carries the hash of its predecessor in its session
// (session.EventHash): Verify recomputes each session's chain and names
// the first event where it breaks — an event changed, deleted, inserted
// or moved — as `cairn audit verify` reports it.
//
// What it proves and what it does not is in docs/audit.md: a chain shows
// that the events before its last one are as written; the last events of
// a session can still be cut off, with its head rewritten, by someone who
// can write the store, and a chain rewritten with its hashes recomputed:
// the signed checkpoints (Key, Keys, Signed) close those gaps for the
// events they cover.
package audit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/store"
)

// Break is where a session's chain breaks: the first event that is not as
// recorded, and why.
type Break struct {
	Session string `json:"session"`
	Seq     int64  `json:"seq"`
	// What says what differs, in words.
	What string `json:"what"`
}

// Error says where the break is.
func (b *Break) Error() string {
	return fmt.Sprintf("session %s, event %d: %s", b.Session, b.Seq, b.What)
}

// Report is what Verify walked.
type Report struct {
	Sessions int
	Events   int
	// Unchained counts the events recorded before the chain existed (no
	// hash): they are not covered.
	Unchained int
	// Signed counts the sessions whose last signed checkpoint verified;
	// Unsigned those without one (recorded without a signing key).
	Signed, Unsigned int
	// Uncovered counts the events after their session's last signed
	// checkpoint: chained, but not yet signed (a turn running, or a
	// process without a key recorded them).
	Uncovered int
	// LastCheckpoint is the latest signed checkpoint verified, by time,
	// and LastCheckpointSession its session.
	LastCheckpoint        *session.Checkpoint
	LastCheckpointSession string
	// Tombstones counts the purged sessions' tombstones walked, and
	// UnsignedTombstones those without a checkpoint (purged sessions that
	// were never signed).
	Tombstones, UnsignedTombstones int
	// Breaks lists the first break of each broken session, in the order
	// walked.
	Breaks []Break
}

// Options narrows Verify.
type Options struct {
	// Session, when set, verifies that session only (or its tombstone,
	// once purged).
	Session string
	// Since and Until, when set, keep the sessions last updated in
	// [Since, Until), and the tombstones of purges then.
	Since, Until time.Time
	// Keys are the public keys whose signatures are trusted; a checkpoint
	// signed by another key is a break.
	Keys Keys
	// Progress, when set, is called after each session.
	Progress func(Report)
}

// inRange reports whether t is in [o.Since, o.Until).
func (o Options) inRange(t time.Time) bool {
	return (o.Since.IsZero() || !t.Before(o.Since)) && (o.Until.IsZero() || t.Before(o.Until))
}

// pageSize is how many sessions Verify reads a page at a time: a walk of
// any store holds one page and one session's events at once.
const pageSize = 500

// Verify walks the store's sessions (or one) and checks each chain and
// its last signed checkpoint, then the purged sessions' tombstones. It
// returns an error only when the store cannot be read; broken chains are
// in the report.
func Verify(ctx context.Context, st store.Store, opts Options) (Report, error) {
	var r Report
	check := func(id string, headSeq int64) error {
		one, err := checkSession(ctx, st, id, headSeq, opts.Keys)
		if err != nil {
			return err
		}
		r.Sessions++
		r.Events += one.Events
		r.Unchained += one.Unchained
		switch {
		case one.Broken != nil:
			r.Breaks = append(r.Breaks, *one.Broken)
		case one.Checkpoint == nil:
			r.Unsigned++
		default:
			r.signed(id, *one.Checkpoint, one.VerifiedSeq)
		}
		if opts.Progress != nil {
			opts.Progress(r)
		}
		return nil
	}
	if opts.Session != "" {
		h, err := st.Head(ctx, opts.Session)
		if errors.Is(err, store.ErrNotFound) {
			if p, ok := st.(store.Purger); ok {
				if t, terr := p.Tombstone(ctx, opts.Session); terr == nil {
					r.tombstone(t, opts.Keys)
					return r, nil
				}
			}
		}
		if err != nil {
			return r, fmt.Errorf("audit: session %s: %w", opts.Session, err)
		}
		return r, check(h.ID, h.Seq)
	}
	err := eachSession(ctx, st, opts.Since, func(h store.Head) error {
		if !opts.inRange(h.UpdatedAt) {
			return nil
		}
		return check(h.ID, h.Seq)
	})
	if err != nil {
		return r, err
	}
	return r, eachTombstone(ctx, st, func(t store.Tombstone) error {
		if opts.inRange(t.PurgedAt) {
			r.tombstone(t, opts.Keys)
		}
		return nil
	})
}

// signed counts a session whose checkpoint cp verified; last is the seq
// of its last event.
func (r *Report) signed(id string, cp session.Checkpoint, last int64) {
	r.Signed++
	r.Uncovered += int(last - cp.Seq)
	if r.LastCheckpoint == nil || cp.At.After(r.LastCheckpoint.At) {
		r.LastCheckpoint, r.LastCheckpointSession = &cp, id
	}
}

// tombstone checks a purged session's tombstone: its checkpoint, if any,
// must be signed by a trusted key and end at the seq the tombstone says.
func (r *Report) tombstone(t store.Tombstone, keys Keys) {
	r.Tombstones++
	cp := t.Checkpoint
	switch {
	case cp == nil:
		r.UnsignedTombstones++
	case cp.Seq != t.Seq:
		r.Breaks = append(r.Breaks, Break{Session: t.ID, Seq: t.Seq, What: fmt.Sprintf("the tombstone of its purge says its log ended at event %d, its signed checkpoint at %d: the tombstone was changed", t.Seq, cp.Seq)})
	default:
		if err := keys.Check(t.ID, *cp); err != nil {
			r.Breaks = append(r.Breaks, Break{Session: t.ID, Seq: t.Seq, What: "the tombstone of its purge: " + err.Error()})
		}
	}
}

// Signed checks a session's last signed checkpoint against its events
// (read from seq 1, their chain already checked): the event at cp.Seq
// must have the hash cp signed, and the signature must be by a trusted
// key. It returns the break, or nil.
func Signed(id string, evs []session.Event, cp session.Checkpoint, keys Keys) *Break {
	at := cp.At.UTC().Format(time.RFC3339)
	var ev *session.Event
	if i := cp.Seq - 1; i >= 0 && i < int64(len(evs)) && evs[i].Seq == cp.Seq {
		ev = &evs[i]
	}
	switch {
	case ev == nil:
		return &Break{Session: id, Seq: cp.Seq, What: fmt.Sprintf("the checkpoint signed at %s by key %s ends at event %d, which the log lacks: events were cut off", at, cp.Key, cp.Seq)}
	case ev.Hash != cp.Hash:
		return &Break{Session: id, Seq: cp.Seq, What: fmt.Sprintf("its hash %.12s… is not the %.12s… signed at %s by key %s: the events up to it were rewritten, hashes and all", ev.Hash, cp.Hash, at, cp.Key)}
	}
	if err := keys.Check(id, cp); err != nil {
		return &Break{Session: id, Seq: cp.Seq, What: "the checkpoint signed at " + at + ": " + err.Error()}
	}
	return nil
}

// Chain checks one session's events, in the order read, against their
// hashes; headSeq is the seq the session's head said was its last when
// read (before the events: a log that goes on past it is a turn that
// committed since). It
// returns the first break, or nil. Events recorded before the chain
// existed (no hash) are skipped: the chain starts after them, and an
// event without a hash after it started is a break (hashes stripped).
func Chain(id string, evs []session.Event, headSeq int64) *Break {
	prev, seq, chained := "", int64(0), false
	for i := range evs {
		ev := &evs[i]
		switch {
		case ev.Seq != seq+1:
			return &Break{Session: id, Seq: ev.Seq, What: fmt.Sprintf("seq %d follows seq %d: events were deleted or inserted", ev.Seq, seq)}
		case ev.Hash == "" && chained:
			return &Break{Session: id, Seq: ev.Seq, What: fmt.Sprintf("it has no hash, though event %d before it has one: the chain was stripped", seq)}
		case ev.Hash == "":
			// Recorded before the chain existed.
		case ev.Prev != "" && ev.Prev != prev:
			return &Break{Session: id, Seq: ev.Seq, What: fmt.Sprintf("its prev %.12s… is not the hash of event %d (%.12s…): an event before it was changed, deleted, inserted or moved", ev.Prev, seq, prev)}
		case session.EventHash(id, ev, prev) != ev.Hash:
			return &Break{Session: id, Seq: ev.Seq, What: "it does not match its hash, chained to the event before it: the event was changed (type, time, frame, agent or data), or one before it was moved"}
		default:
			prev, chained = ev.Hash, true
		}
		seq = ev.Seq
	}
	if seq < headSeq { // more is a turn that committed since the head was read
		return &Break{Session: id, Seq: seq, What: fmt.Sprintf("the log ends at event %d but the session's head says %d: events were deleted", seq, headSeq)}
	}
	return nil
}
