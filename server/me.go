package server

import "net/http"

// meBody says who the caller is, for a client to show what its role allows.
type meBody struct {
	// Name is what sessions the caller starts are owned by.
	Name string `json:"name"`
	// DisplayName is who they are in words (an ID token's name claim).
	DisplayName string `json:"display_name,omitempty"`
	Role        string `json:"role" jsonschema:"user, approver or admin"`
	// Tenant is the tenant the caller acts in (absent: the default one);
	// AllTenants, that they see every tenant's sessions.
	Tenant     string `json:"tenant,omitempty"`
	AllTenants bool   `json:"all_tenants,omitempty"`
	// Auth is false when the server has no tokens (every caller is an anonymous admin).
	Auth bool `json:"auth"`
}

// me answers who the caller is.
func (s *Server) me(w http.ResponseWriter, r *http.Request) {
	p := callerOf(r)
	writeJSON(w, http.StatusOK, meBody{Name: p.name, DisplayName: p.actor.Name, Role: p.role, Tenant: p.actor.Tenant, AllTenants: p.actor.AllTenants, Auth: s.authOn()})
}

// listAgents describes the configured agents and their tools.
func (s *Server) listAgents(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"agents": s.runner.Agents()})
}
