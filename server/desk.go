package server

import (
	"net/http"

	"github.com/cairnhq/cairn"
)

// Bulk decisions and forks: the approver's desk beyond one call.

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

// forkRequest is the body of POST /v1/sessions/{id}/fork.
type forkRequest struct {
	// Seq is an event at which the session paused or waited for a
	// message; absent or 0: the latest such.
	Seq int64 `json:"seq"`
}

// postFork starts a fork of the session in the path (cairn.Runner.Fork):
// for whoever may read the session; the fork is its owner's, like it.
func (s *Server) postFork(w http.ResponseWriter, r *http.Request) {
	var req forkRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if !s.mayRead(w, r) {
		return
	}
	p := callerOf(r)
	sess, err := s.runner.Fork(r.Context(), r.PathValue("id"), req.Seq, decidedBy(p))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, s.forCaller(p, sess))
}
