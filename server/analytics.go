package server

import (
	"net/http"
	"time"

	"github.com/cairnhq/cairn"
)

// analytics answers the approval analytics of the caller's tenant:
// ?since=&until= (RFC 3339), ?by=tool|agent|approver, ?read_time= (a Go
// duration: approvals faster than it are fast).
func (s *Server) analytics(w http.ResponseWriter, r *http.Request) {
	qs := r.URL.Query()
	var q cairn.AnalyticsQuery
	for _, t := range []struct {
		name string
		into *time.Time
	}{{"since", &q.Since}, {"until", &q.Until}} {
		if v := qs.Get(t.name); v != "" {
			at, err := time.Parse(time.RFC3339, v)
			if err != nil {
				writeError(w, http.StatusBadRequest, "invalid_request", `"`+t.name+`" is a time like 2026-11-01T00:00:00Z (RFC 3339)`)
				return
			}
			*t.into = at
		}
	}
	q.By = cairn.AnalyticsBy(qs.Get("by"))
	if v := qs.Get("read_time"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			writeError(w, http.StatusBadRequest, "invalid_request", `"read_time" is a positive duration like 5s`)
			return
		}
		q.ReadTime = d
	}
	out, err := s.runner.Analytics(r.Context(), actorOf(callerOf(r)), q)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}
