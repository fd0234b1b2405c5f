package server

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"

	"github.com/cairnhq/cairn/session"
)

// streamChanges is the cross-session live feed (SSE): an event "session"
// with the session as recorded each time its status or pending interrupts
// may have changed, on any process sharing the store, and "resync" when
// changes may have been missed. A user token sees its own sessions only.
// Subscribe first, then read the listings: nothing falls between.
func (s *Server) streamChanges(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel() // also ends the subscription of a refused stream
	// Subscribed before the answer's headers go out: a client that reads a
	// listing as soon as it has the 200 misses no change in between.
	changes := s.runner.Changes(ctx)
	release, flush, ok := s.openStream(w, "")
	if !ok {
		return
	}
	defer release()
	p := callerOf(r)
	follow := func(pumped context.Context) iter.Seq2[session.Change, error] {
		context.AfterFunc(pumped, cancel) // the subscription ends with the pump, which waits for it
		return changes
	}
	pump(ctx, s, w, flush, 0, follow,
		func(c session.Change) []byte { return s.changeMessage(p, c) }, ": following every session\n\n")
}

// changeMessage is the SSE message of c for p, or nil when p may not see it.
func (s *Server) changeMessage(p principal, c session.Change) []byte {
	if c.Resync {
		return []byte("event: resync\ndata: {}\n\n")
	}
	if !canSee(p, c.Session) {
		return nil
	}
	data, err := json.Marshal(s.forCaller(p, previewSession(c.Session)))
	if err != nil {
		return nil
	}
	return fmt.Appendf(nil, "event: session\ndata: %s\n\n", data)
}
