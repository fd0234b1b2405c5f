package server

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/cairnhq/cairn"
)

// meBody says who the caller is, for a client to show what its role allows.
type meBody struct {
	Name string `json:"name"`
	Role string `json:"role" jsonschema:"user, approver or admin"`
	// Auth is false when the server has no tokens (every caller is an anonymous admin).
	Auth bool `json:"auth"`
}

// me answers who the caller is.
func (s *Server) me(w http.ResponseWriter, r *http.Request) {
	p := callerOf(r)
	writeJSON(w, http.StatusOK, meBody{Name: p.name, Role: p.role, Auth: len(s.tokens) > 0})
}

// listAgents describes the configured agents and their tools.
func (s *Server) listAgents(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"agents": s.runner.Agents()})
}

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
		var frame string
		select {
		case <-ctx.Done():
			return
		case <-s.stopping:
			stoppingFrame(w, flush)
			return
		case <-tick.C:
			frame = ": keep-alive\n\n"
		case c, ok := <-changes:
			if !ok {
				return
			}
			frame = changeFrame(p, c)
		}
		if frame == "" {
			continue
		}
		extendWrite(w)
		if _, err := io.WriteString(w, frame); err != nil {
			return
		}
		if len(changes) == 0 {
			flush()
		}
	}
}

// changeFrame is the SSE frame of c for p, or "" when p may not see it.
func changeFrame(p principal, c cairn.SessionChange) string {
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
