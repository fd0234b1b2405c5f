package engine

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/cairnhq/cairn/session"
)

// A fork is a new session whose log starts as a copy of another's up to a
// point where it paused or waited for a message, then goes its own way: a
// person decides the copied pause differently, or sends another message.
// The copy is the original's events as they were (model replies with
// their provider data, tool results: nothing runs again), under the new
// session's id and nonce, chained afresh, and a session_forked event.

// ForkPoints lists the seqs of log's events a fork may start from.
func ForkPoints(log []session.Event) []int64 {
	var out []int64
	for _, ev := range log {
		if ev.Type.IsForkPoint() {
			out = append(out, ev.Seq)
		}
	}
	return out
}

// Fork builds the log of session id (nonce: its own), a fork of the
// session whose log is log at seq (0: its latest fork point), at time now:
// the copy and its session_forked event, and the state they replay to.
// A seq that is no fork point is ErrNotAForkPoint, naming the nearest.
func Fork(log []session.Event, seq int64, id, nonce string, now time.Time) ([]session.Event, *State, error) {
	points := ForkPoints(log)
	if len(points) == 0 {
		return nil, nil, &session.Error{Code: session.CodeNotAForkPoint, Err: session.ErrNotAForkPoint,
			Message: "the session never paused or waited for a message: there is no point to fork it at yet"}
	}
	if seq == 0 {
		seq = points[len(points)-1]
	}
	if !slices.Contains(points, seq) {
		return nil, nil, &session.Error{Code: session.CodeNotAForkPoint, Err: session.ErrNotAForkPoint, Message: notAForkPoint(log, points, seq)}
	}
	origin := log[0]
	var started session.SessionStarted
	if origin.Type != session.EventSessionStarted || json.Unmarshal(origin.Data, &started) != nil {
		return nil, nil, fmt.Errorf("engine: the log of the session to fork does not start with %s", session.EventSessionStarted)
	}
	from := session.ForkOrigin{SessionID: started.SessionID, Seq: seq}
	started.SessionID, started.Nonce = id, nonce
	first, err := json.Marshal(&started)
	if err != nil {
		return nil, nil, err
	}
	out := make([]session.Event, 0, seq+1)
	prev := ""
	add := func(ev session.Event) {
		ev.Prev = prev
		ev.Hash = session.EventHash(id, &ev, prev)
		prev = ev.Hash
		out = append(out, ev)
	}
	for _, ev := range log[:seq] {
		if ev.Seq == 1 {
			ev.Data = first
		}
		add(ev)
	}
	st, err := Replay(out)
	if err != nil {
		return nil, nil, fmt.Errorf("engine: the fork of %s at %d does not replay: %w", from.SessionID, seq, err)
	}
	forked := &session.SessionForked{From: from, Shift: max(now.Sub(log[seq-1].Time), 0)}
	data, err := json.Marshal(forked)
	if err != nil {
		return nil, nil, err
	}
	ev := session.Event{Seq: seq + 1, Type: session.EventSessionForked, Time: now, Frame: started.Frame, Agent: started.Agent, Data: data}
	ev.Prev = prev
	ev.Hash = session.EventHash(id, &ev, prev)
	if err := apply(st, &ev, forked); err != nil {
		return nil, nil, err
	}
	if st.Status == session.StatusPaused {
		// What it waits for, as it now stands, is in its event: the one
		// that announces them.
		forked.Interrupts = st.Interrupts()
		if ev.Data, err = json.Marshal(forked); err != nil {
			return nil, nil, err
		}
		ev.Hash = session.EventHash(id, &ev, prev)
		st.Head = ev.Hash
	}
	return append(out, ev), st, nil
}

// notAForkPoint says why seq is no fork point and names the nearest ones.
func notAForkPoint(log []session.Event, points []int64, seq int64) string {
	what := "no event"
	if seq >= 1 && seq <= int64(len(log)) {
		what = string(log[seq-1].Type)
	}
	msg := fmt.Sprintf("seq %d (%s) is not a point where the session paused or waited for a message", seq, what)
	i, _ := slices.BinarySearch(points, seq)
	if i > 0 {
		msg += fmt.Sprintf("; the nearest before is %d (%s)", points[i-1], log[points[i-1]-1].Type)
	}
	if i < len(points) {
		msg += fmt.Sprintf("; the nearest after is %d (%s)", points[i], log[points[i]-1].Type)
	}
	return msg
}

// projectSessionForked marks the fork and moves every deadline of what it
// waits for by the time since the pause it was forked at.
func projectSessionForked(p *SessionForked, st *State, ev *session.Event, frame *Frame) error {
	from := p.From
	st.ForkedFrom = &from
	if p.Shift <= 0 {
		return nil
	}
	shift := func(in session.Interrupt) session.Interrupt {
		if in.ExpiresAt != nil {
			t := in.ExpiresAt.Add(p.Shift)
			in.ExpiresAt = &t
		}
		if len(in.Schedule) > 0 {
			in.Schedule = slices.Clone(in.Schedule)
			for i := range in.Schedule {
				in.Schedule[i].At = in.Schedule[i].At.Add(p.Shift)
			}
		}
		return in
	}
	for _, f := range st.Frames {
		for _, c := range f.Calls {
			if c.Interrupt != nil {
				in := shift(*c.Interrupt) // a copy: the earlier one may be shared with a copy of the state
				c.Interrupt = &in
			}
		}
		if f.Review != nil {
			rv := *f.Review
			rv.Interrupt = shift(rv.Interrupt)
			f.Review = &rv
		}
	}
	return nil
}
