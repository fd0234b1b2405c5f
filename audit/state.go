package audit

import (
	"context"
	"fmt"

	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/store"
)

// State is what one session's record proves, for a person's view (the
// session page, `cairn sessions show`, GET /v1/sessions/{id}/audit).
type State struct {
	Session string `json:"session"`
	Events  int    `json:"events"`
	// VerifiedSeq is how far the chain holds: the last event's seq when
	// it is whole, the event before the break otherwise.
	VerifiedSeq int64 `json:"verified_seq"`
	// Broken is the first break, if any.
	Broken *Break `json:"broken,omitempty"`
	// Checkpoint is the session's last signed checkpoint, if it has one,
	// and SignedSeq how far a verified signature covers the log (0: not
	// at all).
	Checkpoint *session.Checkpoint `json:"checkpoint,omitempty"`
	SignedSeq  int64               `json:"signed_seq"`
	// Unchained counts the events recorded before the chain existed.
	Unchained int `json:"unchained,omitempty"`
}

// String says it in a line: "verified up to seq 42; signed checkpoint at
// 12:03:00 UTC by key k1".
func (s State) String() string {
	if s.Broken != nil {
		return "broken at seq " + fmt.Sprint(s.Broken.Seq) + ": " + s.Broken.What
	}
	line := fmt.Sprintf("verified up to seq %d", s.VerifiedSeq)
	switch cp := s.Checkpoint; {
	case cp == nil:
		line += "; not signed"
	default:
		line += fmt.Sprintf("; signed checkpoint at seq %d, %s by key %s", cp.Seq, cp.At.UTC().Format("2006-01-02 15:04:05 UTC"), cp.Key)
	}
	if s.Unchained > 0 {
		line += fmt.Sprintf(" (%d earlier events recorded before the chain)", s.Unchained)
	}
	return line
}

// SessionState checks session id's chain and last signed checkpoint in
// st against keys.
func SessionState(ctx context.Context, st store.Store, id string, keys Keys) (State, error) {
	h, err := st.Head(ctx, id)
	if err != nil {
		return State{Session: id}, err
	}
	return checkSession(ctx, st, id, h.Seq, keys)
}

// checkSession checks one session whose head said headSeq: its
// checkpoint first, then its events (a turn that commits in between adds
// events after the checkpoint read, never before it), then the chain and
// the signature. Verify and SessionState both report from it.
func checkSession(ctx context.Context, st store.Store, id string, headSeq int64, keys Keys) (State, error) {
	s := State{Session: id}
	cp, unreadable, err := checkpointOf(ctx, st, id)
	if err != nil {
		return s, err
	}
	evs, err := st.Events(ctx, id, 0)
	if err != nil {
		return s, fmt.Errorf("audit: read the events of %s: %w", id, err)
	}
	s.Events, s.Checkpoint = len(evs), cp
	for i := range evs {
		if evs[i].Hash == "" {
			s.Unchained++
		}
	}
	switch s.Broken = Chain(id, evs, headSeq); {
	case s.Broken != nil:
	case unreadable != nil:
		s.Broken = unreadableBreak(id, headSeq, unreadable)
	case cp != nil:
		s.Broken = Signed(id, evs, *cp, keys)
	}
	switch {
	case s.Broken != nil:
		s.VerifiedSeq = max(s.Broken.Seq-1, 0)
	case len(evs) > 0:
		s.VerifiedSeq = evs[len(evs)-1].Seq
	}
	if s.Broken == nil && cp != nil {
		s.SignedSeq = cp.Seq
	}
	return s, nil
}
