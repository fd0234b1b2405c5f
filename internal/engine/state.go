// Package engine is Cairn's deterministic core: a state machine that takes a
// session's state and one input (a user message, decisions, a model response,
// tool results) and returns the events to append and the effects a driver must
// perform next (call a model, run tools).
//
// The engine does no I/O: no clock, no randomness, no network. Time is passed
// in; ids are derived from the session id and event sequence numbers. The same
// events replayed through Replay rebuild the same state, which is what makes a
// session durable, resumable after a crash, and runnable inside a
// durable-execution engine.
package engine

import (
	"encoding/json"
	"time"

	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/session"
)

// State is a session as the engine sees it: a projection of its event log.
type State struct {
	SessionID string
	// Nonce is the session's random nonce (session.Session.Nonce): part of
	// every id derived from the session (see scope).
	Nonce  string `json:",omitempty"`
	Agent  string
	Status session.Status
	Seq    int64 // seq of the last event applied
	Frames []*Frame
	Output string
	// OutputJSON is the final answer as a JSON value, for an agent with an
	// output schema.
	OutputJSON json.RawMessage `json:",omitempty"`
	Error      *session.Failure
	Metadata   map[string]any
	Owner      string
	// Tenant is the session's tenant (session.Session.Tenant).
	Tenant string `json:",omitempty"`
	// Definition is the content hash of the definition of its agent the
	// session runs under (Agent.Definition when it started, or since its
	// last definition_changed); "" before versions were recorded.
	Definition string `json:",omitempty"`
	// ForkedFrom, on a fork, is where its log was copied from.
	ForkedFrom *session.ForkOrigin `json:",omitempty"`
	// Head is the Hash of the session's last event: the next event's Prev.
	Head  string `json:",omitempty"`
	Usage model.Usage
	// Remembered lists the tools a decision approved for the rest of the session.
	Remembered []session.Remembered
	CreatedAt  time.Time
	UpdatedAt  time.Time
	// Paused is the seq of the last turn_paused event (0: none yet).
	Paused int64 `json:",omitempty"`
	// Starter is who sent the session's first message, and Speaker who
	// sent its latest one: the requesters of its calls, for separation of
	// duties (session.Approvers.NotRequester).
	Starter session.Actor `json:",omitzero"`
	Speaker session.Actor `json:",omitzero"`
	// Request is the call a direct agent's session was started with (nil
	// for any other session).
	Request *session.CallRequest `json:",omitempty"`
	// Log is the driver's bookkeeping of the log's size since the last
	// snapshot; it is not part of the session.
	Log LogStats `json:"-"`
	// frames counts the frames ever created, for ids.
	frames int
}

// LogStats tracks how much log a load would replay after the last snapshot.
type LogStats struct {
	SnapshotBytes int // size of the last snapshot, every part of it (0: none)
	RootBytes     int // size of its root (the part rewritten by each snapshot)
	TailBytes     int // bytes of events appended after it
}

// scope is what every id derived from the session starts from: its id,
// and its nonce when it has one (a session logged before nonces has
// none, and keeps the ids it was given).
func (s *State) scope() string {
	if s.Nonce == "" {
		return s.SessionID
	}
	return s.SessionID + "\x00" + s.Nonce
}

// requesters are who asked for the calls the session makes now: its
// starter and the sender of its latest message (once each).
func (s *State) requesters() []session.Actor {
	var out []session.Actor
	for _, a := range []session.Actor{s.Starter, s.Speaker} {
		if a.Identity() == "" {
			continue
		}
		if len(out) == 1 && out[0].Identity() == a.Identity() {
			continue
		}
		out = append(out, a)
	}
	return out
}

// remembered returns the decision remembered for agent's tool, if any.
func (s *State) remembered(agent, tool string) *session.Remembered {
	for i := range s.Remembered {
		if r := &s.Remembered[i]; r.Agent == agent && r.Tool == tool {
			return r
		}
	}
	return nil
}
