// Package audit checks that a store's event logs are as Cairn recorded
// them. Every event carries the hash of its predecessor in its session
// (session.EventHash): Verify recomputes each session's chain and names
// the first event where it breaks — an event changed, deleted, inserted
// or moved — as `cairn audit verify` reports it.
//
// What it proves and what it does not is in docs/audit.md: a chain shows
// that the events before its last one are as written; the last events of
// a session can still be cut off, with its head rewritten, by someone who
// can write the store (the signed checkpoints that close that gap are not
// there yet).
package audit

import (
	"context"
	"fmt"

	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/store"
)

// Break is where a session's chain breaks: the first event that is not as
// recorded, and why.
type Break struct {
	Session string
	Seq     int64
	// What says what differs, in words.
	What string
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
	// Breaks lists the first break of each broken session, in the order
	// walked.
	Breaks []Break
}

// Options narrows Verify.
type Options struct {
	// Session, when set, verifies that session only.
	Session string
	// Progress, when set, is called after each session.
	Progress func(Report)
}

// pageSize is how many sessions Verify reads a page at a time: a walk of
// any store holds one page and one session's events at once.
const pageSize = 500

// Verify walks the store's sessions (or one) and checks each chain. It
// returns an error only when the store cannot be read; broken chains are
// in the report.
func Verify(ctx context.Context, st store.Store, opts Options) (Report, error) {
	var r Report
	check := func(id string, headSeq int64) error {
		evs, err := st.Events(ctx, id, 0)
		if err != nil {
			return fmt.Errorf("audit: read the events of %s: %w", id, err)
		}
		r.Sessions++
		r.Events += len(evs)
		if b := Chain(id, evs, headSeq); b != nil {
			r.Breaks = append(r.Breaks, *b)
		}
		for i := range evs {
			if evs[i].Hash == "" {
				r.Unchained++
			}
		}
		if opts.Progress != nil {
			opts.Progress(r)
		}
		return nil
	}
	if opts.Session != "" {
		h, err := st.Head(ctx, opts.Session)
		if err != nil {
			return r, fmt.Errorf("audit: session %s: %w", opts.Session, err)
		}
		return r, check(h.ID, h.Seq)
	}
	var after store.Position
	for {
		page, err := st.List(ctx, store.ListOptions{After: after, Limit: pageSize})
		if err != nil {
			return r, fmt.Errorf("audit: list the sessions: %w", err)
		}
		for _, h := range page {
			if err := check(h.ID, h.Seq); err != nil {
				return r, err
			}
		}
		if len(page) < pageSize {
			return r, nil
		}
		after = page[len(page)-1].Position()
	}
}

// Chain checks one session's events, in the order read, against their
// hashes; headSeq is the seq the session's head says is its last. It
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
	if seq != headSeq {
		return &Break{Session: id, Seq: seq, What: fmt.Sprintf("the log ends at event %d but the session's head says %d: events were deleted", seq, headSeq)}
	}
	return nil
}
