package local

import (
	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/store"
)

// snapshotPolicy says which snapshots a commit writes.
type snapshotPolicy int

const (
	noSnapshots snapshotPolicy = iota
	// wholeSnapshots: a store without Blobs gets every message in each
	// snapshot, written once the log after the last one is both larger
	// than snapshotMinTail and snapshotRatio times that snapshot: loads
	// replay a tail proportional to the snapshot, and snapshots cost at
	// most 1/snapshotRatio of the bytes the log itself takes.
	wholeSnapshots
	// chunkedSnapshots: a store with Blobs gets a root that names sealed
	// runs of messages, each written once (engine.SnapshotParts). The
	// root stays small whatever the history, so one is written once the
	// log after the last one reaches the larger of snapshotMinTail and the
	// root's size: a load replays at most that much (a constant), and the
	// snapshots cost at most about the log's own bytes again.
	chunkedSnapshots
)

const (
	snapshotMinTail = 8 << 10
	snapshotRatio   = 4
)

// snapshotPolicyFor is the policy for a runner's own store.
func snapshotPolicyFor(st store.Store) snapshotPolicy {
	if _, ok := st.(store.Blobs); ok {
		return chunkedSnapshots
	}
	return wholeSnapshots
}

func eventBytes(evs []session.Event) int {
	n := 0
	for _, e := range evs {
		n += len(e.Data)
	}
	return n
}

// headFor is the store head written with step's events just applied to
// st: the summary when the view changed, the expiry index and, with
// snapshots, a snapshot once the log since the last one is large enough.
// It returns the log statistics to keep once the head is written. No I/O.
func headFor(st *engine.State, step engine.Step, lease store.Lease, policy snapshotPolicy) (store.Head, engine.LogStats, error) {
	head, log, _, err := headAndView(st, step, lease, policy)
	return head, log, err
}

// headAndView is headFor, with the session view its summary was written
// from, if the step changed it (nil otherwise): the view as of the step,
// which a turn that ends at this step answers with instead of building
// it again.
func headAndView(st *engine.State, step engine.Step, lease store.Lease, policy snapshotPolicy) (head store.Head, log engine.LogStats, view *session.Session, err error) {
	events := step.Events
	head = store.Head{ID: st.SessionID, Agent: st.Agent, Owner: st.Owner, Tenant: st.Tenant, Status: st.Status, Seq: st.Seq,
		CreatedAt: st.CreatedAt, UpdatedAt: st.UpdatedAt, NextExpiry: st.NextExpiry(), Lease: lease}
	log = st.Log
	head.Quiet = events[0].Seq > 1 && engine.ListingKept(events)
	if events[0].Seq == 1 || engine.ViewChanged(events, step.Payloads) {
		view = st.View()
		// MarshalStored: the summary without the interrupts' Asks, which
		// readers derive (and json.Marshal would compact its output again).
		if head.Summary, err = view.MarshalStored(); err != nil {
			return head, log, view, err
		}
		head.PendingKinds = store.KindsOf(view.Interrupts)
	}
	log.TailBytes += eventBytes(events)
	if log.TailBytes < snapshotMinTail {
		return head, log, view, nil
	}
	switch {
	case policy == wholeSnapshots && log.TailBytes >= snapshotRatio*log.SnapshotBytes:
		snap, err := engine.Snapshot(st)
		if err != nil {
			return head, log, view, err
		}
		head.Snapshot, log = snap, engine.LogStats{SnapshotBytes: len(snap), RootBytes: len(snap)}
	case policy == chunkedSnapshots && log.TailBytes >= log.RootBytes:
		parts, err := engine.SnapshotParts(st)
		if err != nil {
			return head, log, view, err
		}
		head.Snapshot = parts.Root
		for _, c := range parts.Chunks {
			head.Blobs = append(head.Blobs, store.Blob{Key: c.Key, Data: c.Data})
		}
		log = engine.LogStats{SnapshotBytes: parts.Bytes, RootBytes: len(parts.Root)}
	}
	return head, log, view, nil
}
