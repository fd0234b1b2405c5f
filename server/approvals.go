package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/cairnhq/cairn"
)

// approvalRequest is POST /v1/approvals: an approval for a call the
// caller's own code makes (cairn.Runner.RequestApproval).
type approvalRequest struct {
	Tool      string          `json:"tool" jsonschema:"the call's name: 1–128 letters, digits, _ . : / -"`
	Arguments json.RawMessage `json:"arguments,omitempty" jsonschema:"the call's arguments, a JSON object (default {})"`
	Message   string          `json:"message,omitempty" jsonschema:"what the approver reads (default: the tool and its arguments)"`
	Schema    json.RawMessage `json:"schema,omitempty" jsonschema:"the arguments' JSON Schema: the request and an approver's edit must match it"`
	// IdempotencyKey names the request for its caller: asking again with
	// it answers 200 with the same request.
	IdempotencyKey string         `json:"idempotency_key,omitempty" jsonschema:"the same caller asking again with it gets the same request (200), on any server"`
	ExpiresIn      string         `json:"expires_in,omitempty" jsonschema:"how long it waits for a decision, like 1h; then it expires"`
	Metadata       map[string]any `json:"metadata,omitempty"`
	Agent          string         `json:"agent,omitempty" jsonschema:"the direct agent that takes it (default approvals)"`
}

// resultRequest is POST /v1/approvals/{id}/result.
type resultRequest struct {
	Output json.RawMessage `json:"output,omitempty" jsonschema:"what the function returned (any JSON value; null when it returned nothing)"`
	Error  string          `json:"error,omitempty" jsonschema:"why the function failed"`
}

// maxApprovalWait bounds GET /v1/approvals/{id}?wait=: a long poll ends
// well within proxies' idle timeouts; the caller asks again.
const maxApprovalWait = 60 * time.Second

func (s *Server) createApproval(w http.ResponseWriter, r *http.Request) {
	var req approvalRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if req.Tool == "" {
		writeError(w, http.StatusBadRequest, "invalid_request", `"tool" is required: the name of the call to approve`)
		return
	}
	var expires time.Duration
	if req.ExpiresIn != "" {
		d, err := time.ParseDuration(req.ExpiresIn)
		if err != nil || d <= 0 {
			writeError(w, http.StatusBadRequest, "invalid_request", fmt.Sprintf("expires_in: %q is not a positive duration like 30m or 24h", req.ExpiresIn))
			return
		}
		expires = d
	}
	p := callerOf(r)
	a, created, err := s.runner.RequestApproval(turnContext(r), cairn.ApprovalRequest{Agent: req.Agent, Tool: req.Tool, Arguments: req.Arguments,
		Message: req.Message, Schema: req.Schema, IdempotencyKey: req.IdempotencyKey, ExpiresIn: expires, Metadata: req.Metadata},
		&cairn.StartOptions{Owner: p.name, Actor: actorOf(p)})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	writeJSON(w, status, s.approvalFor(p, a))
}

func (s *Server) getApproval(w http.ResponseWriter, r *http.Request) {
	var wait time.Duration
	if v := r.URL.Query().Get("wait"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			writeError(w, http.StatusBadRequest, "invalid_request", fmt.Sprintf("wait: %q is not a duration like 30s", v))
			return
		}
		wait = min(d, maxApprovalWait)
	}
	if !s.mayRead(w, r) {
		return
	}
	var a *cairn.CallApproval
	var err error
	if wait > 0 {
		a, err = s.runner.AwaitCallApproval(r.Context(), r.PathValue("id"), wait)
	} else {
		a, err = s.runner.CallApproval(r.Context(), r.PathValue("id"))
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, s.approvalFor(callerOf(r), a))
}

func (s *Server) postApprovalResult(w http.ResponseWriter, r *http.Request) {
	var req resultRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if req.Output == nil && req.Error == "" {
		writeError(w, http.StatusBadRequest, "invalid_request", `"output" (what the function returned, any JSON value; null for nothing) or "error" (why it failed) is required`)
		return
	}
	if !s.maySpeak(w, r, "records a result") {
		return
	}
	a, err := s.runner.RecordCallResult(turnContext(r), r.PathValue("id"), cairn.Completion{Output: req.Output, Error: req.Error}, decidedBy(callerOf(r)))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, s.approvalFor(callerOf(r), a))
}

// approvalFor is a as p sees it: whether p may decide its interrupt.
func (s *Server) approvalFor(p principal, a *cairn.CallApproval) *cairn.CallApproval {
	if a == nil || a.Interrupt == nil {
		return a
	}
	out, in := *a, *a.Interrupt
	may := s.runner.Decides(p.actor, a.Owner, &in)
	in.MayDecide, out.Interrupt = &may, &in
	return &out
}
