package server

import (
	"encoding/json"
	"net/http"

	"github.com/cairnhq/cairn"
)

// Callback URLs (cairn.CallbackURL): the signed one-time URL a tool that
// finishes later hands to the system doing the work is the credential,
// so this route needs no bearer token.

// callbackRequest is a callback's body: the result, or why the work failed.
type callbackRequest struct {
	// Output is the result: any JSON value (a string is the text the model
	// reads), checked against the tool's result schema.
	Output json.RawMessage `json:"output,omitempty"`
	// Error, instead, fails the call: the model reads it.
	Error string `json:"error,omitempty"`
}

// callbackReply is what a callback answers: where the session went. It
// says nothing of the conversation, which the URL's holder need not see.
type callbackReply struct {
	SessionID string       `json:"session_id"`
	Status    cairn.Status `json:"status"`
}

// callback completes the call the token names, once: 200 with where the
// session went; 403 altered, 409 used (or completed another way), 410
// past its deadline, 400 an output off the result schema, 503 (with
// Retry-After) when the session ran and did not come to wait on the call
// in time: nothing was recorded, send it again.
func (s *Server) callback(w http.ResponseWriter, r *http.Request) {
	var req callbackRequest
	if !decodeBody(w, r, &req) {
		return
	}
	sess, err := s.runner.Callback(turnContext(r), r.PathValue("token"), cairn.Completion{Output: req.Output, Error: req.Error})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, callbackReply{SessionID: sess.ID, Status: sess.Status})
}
