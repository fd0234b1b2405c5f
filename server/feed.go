package server

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/cairnhq/cairn/session"
)

// streamChanges is the cross-session live feed (SSE): an event "session"
// with the session as recorded each time its status or pending interrupts
// may have changed, on any process sharing the store, and "resync" when
// changes may have been missed. A user token sees its own sessions only.
// Subscribe first, then read the listings: nothing falls between.
func (s *Server) streamChanges(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	release, flush, ok := s.openStream(w, "")
	if !ok {
		return
	}
	defer release()
	p := callerOf(r)
	pump(ctx, s, w, flush, 0, s.runner.Changes,
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
