package server

import (
	"encoding/json"
	"net/http"
)

// previewRequest is the body of POST …/interrupts/{interrupt_id}/preview.
type previewRequest struct {
	// Arguments are those the caller may approve the call with (an edit);
	// absent or null: the call's own.
	Arguments json.RawMessage `json:"arguments"`
}

// postPreview computes the dry run of a pending approval's call with
// edited arguments, without deciding: checked as a decision's arguments,
// for a caller who may approve it, and recorded nowhere.
func (s *Server) postPreview(w http.ResponseWriter, r *http.Request) {
	var req previewRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if !s.mayRead(w, r) {
		return
	}
	p, err := s.runner.Preview(r.Context(), r.PathValue("id"), r.PathValue("interrupt_id"), req.Arguments, decidedBy(callerOf(r)))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, p)
}
