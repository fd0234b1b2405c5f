package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"time"

	"github.com/cairnhq/cairn/session"
)

// Review is a final answer waiting for a person (an interrupt of kind
// review).
type Review struct {
	Interrupt session.Interrupt
	Text      string          // the answer as the model gave it
	Value     json.RawMessage // its JSON value
	Asked     int64           // seq of the review_requested event
}

func projectReviewRequested(p *ReviewRequested, st *State, ev *session.Event, frame *Frame) error {
	if frame == nil {
		return noFrame(ev)
	}
	frame.Review = &Review{Interrupt: p.Interrupt, Text: p.Text, Value: p.Interrupt.Output, Asked: ev.Seq}
	return nil
}

// findReview returns the frame whose answer waits for review id.
func (s *State) findReview(id string) *Frame {
	for _, f := range s.Frames {
		if f.Review != nil && f.Review.Interrupt.ID == id {
			return f
		}
	}
	return nil
}

func projectInterruptRequested(p *InterruptRequested, st *State, ev *session.Event, frame *Frame) error {
	c, err := st.call(ev, frame, p.CallID)
	if err != nil {
		return err
	}
	in := p.Interrupt
	c.State, c.Interrupt, c.Asked, c.AskedAt, c.ArgsSeq = CallAwaiting, &in, ev.Seq, ev.Time, ev.Seq
	c.Held = c.Held || p.Held
	if len(p.State) > 0 || p.Asked {
		c.AskState, c.AskedApproval = p.State, p.Asked
	}
	return nil
}

// derivedID derives a stable id from a call's (or message's) place in the
// session, so parallel calls, nested frames and calls of different turns
// never share one, even when a model reuses call ids.
func derivedID(session, frame string, seq int64, callID, salt string) string {
	h := sha256.Sum256([]byte(session + "\x00" + frame + "\x00" + strconv.FormatInt(seq, 10) + "\x00" + callID + "\x00" + salt))
	return "int_" + hex.EncodeToString(h[:10])
}

func (s *State) findInterrupt(id string) (*Frame, *Call) {
	for _, f := range s.Frames {
		for _, c := range f.Calls {
			if c.State == CallAwaiting && c.Interrupt != nil && c.Interrupt.ID == id {
				return f, c
			}
		}
	}
	return nil, nil
}

// Interrupts lists what the session waits for, depth first in call order:
// calls awaiting a decision or an answer, and interactive frames awaiting a
// message. While paused, they are what the session waits for.
func (s *State) Interrupts() []session.Interrupt {
	var out []session.Interrupt
	for _, f := range s.Ordered() {
		if f.SaidSeq != 0 {
			out = append(out, s.messageInterrupt(f))
		}
		for _, c := range f.Calls {
			if c.State == CallAwaiting && c.Interrupt != nil {
				out = append(out, *c.Interrupt)
			}
		}
		if f.Review != nil {
			out = append(out, f.Review.Interrupt)
		}
	}
	return out
}

func (s *State) messageInterrupt(f *Frame) session.Interrupt {
	return session.Interrupt{
		ID:   derivedID(s.scope(), f.ID, f.SaidSeq, "", "message"),
		Kind: session.KindMessage, Path: s.pathTo(f), Text: f.Said,
	}
}

// createdSincePause lists the ids of the interrupts asked for after the
// last pause: the ones the pause about to be recorded announces first.
func (s *State) createdSincePause() []string {
	var ids []string
	for _, f := range s.Ordered() {
		if f.SaidSeq > s.Paused {
			ids = append(ids, s.messageInterrupt(f).ID)
		}
		for _, c := range f.Calls {
			if c.State == CallAwaiting && c.Interrupt != nil && c.Asked > s.Paused {
				ids = append(ids, c.Interrupt.ID)
			}
		}
		if f.Review != nil && f.Review.Asked > s.Paused {
			ids = append(ids, f.Review.Interrupt.ID)
		}
	}
	return ids
}

// NextExpiry is when something is next due in a paused session: a
// pending interrupt's deadline, or a step of its schedule (a reminder, an
// escalation) that has not fired; zero when nothing is.
func (s *State) NextExpiry() time.Time {
	var first time.Time
	if s.Status != session.StatusPaused {
		return first
	}
	due := func(t time.Time) {
		if first.IsZero() || t.Before(first) {
			first = t
		}
	}
	for _, f := range s.Frames {
		for _, c := range f.Calls {
			in := c.Interrupt
			if c.State != CallAwaiting || in == nil {
				continue
			}
			if in.ExpiresAt != nil {
				due(*in.ExpiresAt)
			}
			for _, step := range in.Schedule {
				if step.FiredAt == nil {
					due(step.At)
				}
			}
		}
	}
	return first
}
