package server

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/cairnhq/cairn"
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
	changes := s.runner.WatchSessions(ctx)
	p := callerOf(r)
	io.WriteString(w, ": following every session\n\n")
	flush()
	tick := time.NewTicker(s.heartbeat)
	defer tick.Stop()
	for {
		var msg string
		select {
		case <-ctx.Done():
			return
		case <-s.stopping:
			stoppingMessage(w, flush)
			return
		case <-tick.C:
			msg = ": keep-alive\n\n"
		case c, ok := <-changes:
			if !ok {
				return
			}
			msg = changeMessage(p, c)
		}
		if msg == "" {
			continue
		}
		extendWrite(w)
		if _, err := io.WriteString(w, msg); err != nil {
			return
		}
		if len(changes) == 0 {
			flush()
		}
	}
}

// changeMessage is the SSE message of c for p, or "" when p may not see it.
func changeMessage(p principal, c cairn.SessionChange) string {
	if c.Resync {
		return "event: resync\ndata: {}\n\n"
	}
	if !canSee(p, c.Session) {
		return ""
	}
	data, err := json.Marshal(previewSession(c.Session))
	if err != nil {
		return ""
	}
	return fmt.Sprintf("event: session\ndata: %s\n\n", data)
}
