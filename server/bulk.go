package server

import (
	"net/http"

	"github.com/cairnhq/cairn"
)

// postBulkDecisions decides many pending calls across sessions: a list,
// or a selector with one action (cairn.Runner.DecideMany). Each call's
// result is its own; the answer is 200 unless the request is malformed.
func (s *Server) postBulkDecisions(w http.ResponseWriter, r *http.Request) {
	p, ok := require(w, r, RoleApprover, "bulk decisions")
	if !ok {
		return
	}
	var req cairn.BulkRequest
	if !decodeBody(w, r, &req) {
		return
	}
	out, err := s.runner.DecideMany(turnContext(r), req, decidedBy(p))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}
