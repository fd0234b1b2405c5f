package server

import (
	"net/http"
	"strconv"

	"github.com/cairnhq/cairn"
)

// rulesBody is GET /v1/rules's answer.
type rulesBody struct {
	Rules []cairn.Rule `json:"rules"`
}

// listRules lists the standing rules the caller may see: live ones, or
// every one with ?all=true; ?tool= keeps one tool's.
func (s *Server) listRules(w http.ResponseWriter, r *http.Request) {
	q := cairn.RuleQuery{Tool: r.URL.Query().Get("tool")}
	if v := r.URL.Query().Get("all"); v != "" {
		all, err := strconv.ParseBool(v)
		if err != nil {
			writeError(w, http.StatusBadRequest, "invalid_request", `"all" is true or false`)
			return
		}
		q.All = all
	}
	rules, err := s.runner.Rules(r.Context(), actorOf(callerOf(r)), q)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if rules == nil {
		rules = []cairn.Rule{}
	}
	writeJSON(w, http.StatusOK, rulesBody{Rules: rules})
}

// revokeRule revokes a standing rule at once and answers it as revoked.
func (s *Server) revokeRule(w http.ResponseWriter, r *http.Request) {
	rule, err := s.runner.RevokeRule(r.Context(), actorOf(callerOf(r)), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, rule)
}
