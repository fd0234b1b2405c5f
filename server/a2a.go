package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/a2a/a2aserver"
)

// a2aHandlers serves each of agents over A2A at /a2a/{agent}; another
// name is 404.
func (s *Server) a2aHandlers(agents []string) http.Handler {
	byName := make(map[string]http.Handler, len(agents))
	for _, agent := range agents {
		h, err := s.a2aHandler(agent)
		if err != nil {
			h = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				writeError(w, http.StatusInternalServerError, "internal", err.Error())
			})
		}
		byName[agent] = h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h, ok := byName[r.PathValue("agent")]
		if !ok {
			writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no agent %q is served over A2A here (a2a.agents in the config)", r.PathValue("agent")))
			return
		}
		h.ServeHTTP(w, r)
	})
}

// a2aHandler serves agent over A2A at /a2a/{agent}, with the API's tokens:
// a token's name owns the tasks it starts, and the runner's decision point
// says who decides, as for every door (see docs/a2a.md).
func (s *Server) a2aHandler(agent string) (http.Handler, error) {
	opts := &a2aserver.Options{Logger: s.log, Caller: s.a2aCaller}
	if s.baseURL != "" {
		opts.URL = func(*http.Request) string { return strings.TrimSuffix(s.baseURL, "/") + "/a2a/" + agent }
	}
	if s.authOn() {
		// Either scheme is enough: the card lists each as its own
		// requirement.
		opts.Security = a2a.NamedSecuritySchemes{"bearer": a2a.HTTPAuthSecurityScheme{Scheme: "Bearer",
			Description: "A Cairn API token, or an ID token of the server's OpenID Provider."}}
		if s.oidc != nil {
			opts.Security["oidc"] = a2a.OpenIDConnectSecurityScheme{Description: "An ID token of the server's OpenID Provider, sent as a bearer token.",
				OpenIDConnectURL: strings.TrimSuffix(s.oidc.cfg.Issuer, "/") + "/.well-known/openid-configuration"}
		}
	}
	h, err := a2aserver.New(s.runner, agent, opts)
	if err != nil {
		return nil, err
	}
	// The JSON-RPC binding reads its body itself: bound it as every body is.
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, maxBody)
		h.ServeHTTP(w, r)
	}), nil
}

// a2aCaller is who calls over A2A: the request's principal.
func (s *Server) a2aCaller(ctx context.Context) a2aserver.Caller {
	p, _ := ctx.Value(principalKey{}).(principal)
	return a2aserver.Caller{Name: p.name, Actor: p.actor,
		MaySee:   func(sess *cairn.Session) bool { return canSee(p, sess) },
		MaySpeak: func(sess *cairn.Session) bool { return canSpeak(p, sess) }}
}
