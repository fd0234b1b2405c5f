package engine

import (
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/session"
)

// Empty, zero-capacity lists: JSON [] rather than null, without allocating
// (appending to them copies, so they are never written).
var (
	noInterrupts = []session.Interrupt{}
	noRemembered = []session.Remembered{}
)

// View is the session as clients see it. Lease fields are the driver's and
// left empty.
func (s *State) View() *session.Session {
	// The session, its stack's first frame and its version in one allocation.
	box := &struct {
		v     session.Session
		stack [1]session.StackFrame
		def   session.DefinitionVersion
	}{}
	v := &box.v
	*v = session.Session{
		ID: s.SessionID, Nonce: s.Nonce, Agent: s.Agent, Status: s.Status, Seq: s.Seq,
		Output: s.Output, OutputJSON: s.OutputJSON, Error: s.Error, Metadata: s.Metadata, Owner: s.Owner, Tenant: s.Tenant, ForkedFrom: s.ForkedFrom, Usage: s.Usage,
		CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt,
		Interrupts: noInterrupts, Stack: box.stack[:0], Remembered: noRemembered,
	}
	if s.Definition != "" {
		box.def.Hash = s.Definition
		v.Definition = &box.def
	}
	if len(s.Remembered) > 0 {
		v.Remembered = s.Remembered
	}
	if s.Status == session.StatusPaused {
		if in := s.Interrupts(); len(in) > 0 {
			v.Interrupts = in
		}
	}
	stack := s.Frames // one frame (the common case): its own stack, without allocating
	if len(stack) != 1 || stack[0].Mode == session.ModeTool {
		stack = s.Stack()
	}
	for _, f := range stack {
		v.Stack = append(v.Stack, session.StackFrame{Agent: f.Agent, Mode: f.Mode})
	}
	if n := len(stack); n > 0 {
		v.Request = lastUserText(stack[n-1].Messages)
	}
	return v
}

// lastUserText is the start of the text of the last user message of msgs
// (session.RequestBytes, cut on a rune boundary, then "…"), or "".
func lastUserText(msgs []model.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != model.RoleUser {
			continue
		}
		s := msgs[i].Content
		if len(s) <= session.RequestBytes {
			return s
		}
		n := session.RequestBytes
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		return s[:n] + "…"
	}
	return ""
}

// ViewChanged reports whether events change the View beyond its seq,
// status and update time: steps that only start tools, record results or
// decide without remembering leave it as it was, so a driver that stores
// the view next to those three columns need not re-encode it. payloads are
// the events' (Step.Payloads); without them a decision is decoded.
func ViewChanged(events []session.Event, payloads []any) bool {
	for i, ev := range events {
		// A filter of event types: only the events that change the view.
		//exhaustive:ignore
		switch ev.Type {
		case session.EventToolStarted, session.EventToolResult, session.EventApprovalRequested, session.EventInputRequested:
		case session.EventDecision:
			p, err := Payload(events, payloads, i)
			if d, ok := p.(*DecisionMade); err != nil || !ok || d.Remember != "" {
				return true
			}
		default:
			return true
		}
	}
	return false
}

// ListingKept reports whether a commit of events leaves everything a
// listing orders by, filters by or shows as it was: the status, the stored
// view, the pending interrupts' kinds and expiry. Only steps inside a
// running turn do: a tool starting or returning, and an approval or a
// question requested before the pause that will announce them (the pause,
// a decision, a model's answer all change the listing). A store may then
// write the session's seq and lease alone (store.Head.Quiet).
func ListingKept(events []session.Event) bool {
	for _, ev := range events {
		// A filter of event types: the ones that change no listing.
		//exhaustive:ignore
		switch ev.Type {
		case session.EventToolStarted, session.EventToolResult, session.EventApprovalRequested, session.EventInputRequested:
		default:
			return false
		}
	}
	return len(events) > 0
}

// StoredView rebuilds the View from a stored encoding of it and the seq,
// status and update time recorded with the last event, which are newer
// when ViewChanged said the stored encoding could stay.
func StoredView(stored []byte, seq int64, status session.Status, updated time.Time) (*session.Session, error) {
	var v session.Session
	if err := json.Unmarshal(stored, &v); err != nil {
		return nil, fmt.Errorf("corrupt stored view: %w", err)
	}
	v.Seq, v.Status, v.UpdatedAt = seq, status, updated
	if status != session.StatusPaused {
		v.Interrupts = noInterrupts // stored while paused, read after a decision
	}
	v.LeaseOwner, v.LeaseExpiresAt = "", nil
	return &v, nil
}
