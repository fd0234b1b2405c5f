package server

import (
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/a2a/a2aserver"
	"github.com/cairnhq/cairn/session"
)

// Roles, from least to most trusted (session's roles).
const (
	RoleUser     = session.RoleUser     // start sessions, send messages, cancel, read their own sessions
	RoleApprover = session.RoleApprover // also decide interrupts, read every session and the inbox
	RoleAdmin    = session.RoleAdmin    // everything
)

// Token is a bearer token the server accepts.
type Token struct {
	// Name identifies the holder in the audit trail and as session owner.
	Name string
	// Secret is the bearer token itself.
	Secret string
	// Role is RoleUser, RoleApprover or RoleAdmin.
	Role string
	// Subject is the person the token is (default: Name): two tokens of
	// one subject are one person, whose approval counts once.
	Subject string
	// Groups the holder is in: interrupts whose approvers name groups are
	// decided only by their members.
	Groups []string
	// Tenant is the tenant the holder acts in: they see and decide only
	// its sessions, and what they start belongs to it ("" is the default
	// tenant). AllTenants makes the holder global: they see and decide
	// the sessions of every tenant (their own still belong to Tenant).
	Tenant     string
	AllTenants bool
}

// principal is the authenticated caller of a request.
type principal struct {
	name, role string
	// actor is who the caller is as the runner's decision point and the
	// audit trail see them; its Via is empty in the no-auth mode (the
	// local operator, trusted).
	actor session.Actor
}

func (p principal) atLeast(role string) bool { return session.RoleAtLeast(p.role, role) }

type principalKey struct{}

// authenticate checks the bearer token. Without configured tokens every
// caller is an anonymous admin (the CLI then listens on loopback only).
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.authOn() || public(r.URL.Path) {
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, principal{role: RoleAdmin, actor: session.Actor{Role: RoleAdmin}})))
			return
		}
		// A person signed in to the page through the OpenID Provider
		// carries their ID token in a cookie (with no Authorization header).
		if r.Header.Get("Authorization") == "" {
			if p, found, err := s.cookiePrincipal(r); found {
				if err != nil {
					writeError(w, http.StatusUnauthorized, "unauthorized", err.Error())
					return
				}
				next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
				return
			}
		}
		// The scheme is case-insensitive (RFC 9110, 11.1).
		scheme, secret, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		secret = strings.TrimSpace(secret)
		if !strings.EqualFold(scheme, "Bearer") || secret == "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="cairn"`)
			writeError(w, http.StatusUnauthorized, "unauthorized", "missing bearer token: send Authorization: Bearer <token>")
			return
		}
		p, err := s.principalOf(r.Context(), secret)
		if errors.Is(err, errProviderDown) {
			w.Header().Set("Retry-After", "5")
			writeError(w, http.StatusServiceUnavailable, "oidc_unavailable", err.Error()+"; the token was not checked: send it again later")
			return
		}
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="cairn", error="invalid_token"`)
			writeError(w, http.StatusUnauthorized, "unauthorized", "the bearer token is not valid: "+err.Error())
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
	})
}

// authOn reports whether requests need a bearer token (static tokens or
// OpenID Connect configured).
func (s *Server) authOn() bool { return len(s.tokens) > 0 || s.oidc != nil }

// principalOf is the caller a bearer token names: a static token, or a
// JWT of the OpenID Provider; an error says why it names no one.
func (s *Server) principalOf(ctx context.Context, secret string) (principal, error) {
	if p, ok := s.lookup(secret); ok {
		return p, nil
	}
	if s.oidc == nil {
		return principal{}, errors.New("it is none of the configured tokens")
	}
	p, err := s.oidc.verify(ctx, secret)
	if errors.Is(err, errNotAJWT) {
		return principal{}, errors.New("it is none of the configured tokens, nor a JWT of the OpenID Provider")
	}
	return p, err
}

// bearer is the caller a request's bearer token (or the page's sign-in
// cookie) names, if it names one (on a route that needs none, such as an
// action link).
func (s *Server) bearer(r *http.Request) (principal, bool) {
	if r.Header.Get("Authorization") == "" {
		p, found, err := s.cookiePrincipal(r)
		return p, found && err == nil
	}
	scheme, secret, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	secret = strings.TrimSpace(secret)
	if !s.authOn() || !strings.EqualFold(scheme, "Bearer") || secret == "" {
		return principal{}, false
	}
	p, err := s.principalOf(r.Context(), secret)
	return p, err == nil
}

// public reports whether path needs no token: liveness, the API's
// description, the web page's files (the page asks for a token and sends
// it with each API call) action links and callback URLs (the signed URL is the credential).
func public(path string) bool {
	return path == "/healthz" || (strings.HasPrefix(path, "/a2a/") && strings.HasSuffix(path, a2aserver.CardPath)) || path == "/v1/openapi.json" || path == "/" || strings.HasPrefix(path, "/ui/") || strings.HasPrefix(path, "/auth/") ||
		strings.HasPrefix(path, cairn.ActionLinkPath) || strings.HasPrefix(path, cairn.CallbackPath)
}

// lookup compares the presented secret with every token in constant time
// (on SHA-256 digests, so lengths leak nothing either).
func (s *Server) lookup(secret string) (principal, bool) {
	got := sha256.Sum256([]byte(secret))
	var match principal
	found := 0
	for _, t := range s.tokens {
		want := sha256.Sum256([]byte(t.Secret))
		eq := subtle.ConstantTimeCompare(got[:], want[:])
		if eq == 1 {
			match = principal{name: t.Name, role: t.Role, actor: session.Actor{Name: t.Name, Role: t.Role,
				Subject: cmp.Or(t.Subject, t.Name), Groups: t.Groups, Tenant: t.Tenant, AllTenants: t.AllTenants, Via: session.ViaToken}}
		}
		found |= eq
	}
	return match, found == 1
}

func callerOf(r *http.Request) principal {
	p, _ := r.Context().Value(principalKey{}).(principal)
	return p
}

// require answers 403 unless the caller has at least role.
func require(w http.ResponseWriter, r *http.Request, role, what string) (principal, bool) {
	p := callerOf(r)
	if !p.atLeast(role) {
		writeError(w, http.StatusForbidden, "forbidden", fmt.Sprintf("%s needs the %s role; token %q has %s", what, role, p.name, p.role))
		return p, false
	}
	return p, true
}

// canSee reports whether the caller may read a session: one of its tenant
// (Actor.InTenant), and its owner or an approver or admin.
func canSee(p principal, sess *cairn.Session) bool {
	return p.actor.InTenant(sess.Tenant) && (p.atLeast(RoleApprover) || isOwner(p, sess))
}

// canSpeak reports whether the caller may speak in a session (post a
// message, cancel it): its owner, or an admin of its tenant. An approver
// decides interrupts and reads every session of the tenant, but does not
// put words in another user's mouth.
func canSpeak(p principal, sess *cairn.Session) bool {
	return p.actor.InTenant(sess.Tenant) && (p.atLeast(RoleAdmin) || isOwner(p, sess))
}

// everywhere reports whether p sees every session of every tenant (an
// approver or admin of every tenant), so that a request for a session
// needs no read to check.
func (p principal) everywhere(role string) bool {
	return p.atLeast(role) && p.actor.EveryTenant()
}

// decisionRefused says why p may not make decisions on sess (ErrForbidden,
// ErrNotAnApprover, ErrAlreadyApproved), nil when it may: the runner's one
// decision point (Runner.MayDecide, which Resume asks too), for the chat
// doors (AI SDK, AG-UI) that refuse in their stream before they resume.
func (s *Server) decisionRefused(p principal, sess *cairn.Session, decisions []cairn.Decision) error {
	if sess == nil {
		return nil
	}
	for _, d := range decisions {
		if err := s.runner.MayDecide(p.actor, sess, d); err != nil {
			return err
		}
	}
	return nil
}

func isOwner(p principal, sess *cairn.Session) bool { return sess.Owner != "" && sess.Owner == p.name }

// mayRead answers 404 unless the caller may read the session in the path.
// Approvers and admins of every tenant may read any session, so only
// their requests cost no read here; the handler's own call reports
// unknown sessions.
func (s *Server) mayRead(w http.ResponseWriter, r *http.Request) bool {
	if callerOf(r).everywhere(RoleApprover) {
		return true
	}
	_, ok := s.ownSession(w, r)
	return ok
}

// maySpeak answers 404 when the caller may not read the session in the
// path, 403 when it may read it but not speak in it (canSpeak).
func (s *Server) maySpeak(w http.ResponseWriter, r *http.Request, what string) bool {
	p := callerOf(r)
	if p.everywhere(RoleAdmin) {
		return true
	}
	sess, ok := s.ownSession(w, r)
	if ok && !canSpeak(p, sess) {
		writeError(w, http.StatusForbidden, "forbidden", fmt.Sprintf("%s: session %s belongs to another user; an approver decides its interrupts but only its owner or an admin %s", what, sess.ID, what))
		return false
	}
	return ok
}

// ownSession loads a session and answers 404 unless the caller may read it:
// a session of another user answers exactly as one that does not exist, so
// ids cannot be probed.
func (s *Server) ownSession(w http.ResponseWriter, r *http.Request) (*cairn.Session, bool) {
	sess, err := s.runner.Session(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return nil, false
	}
	if p := callerOf(r); !canSee(p, sess) {
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no session %q", r.PathValue("id")))
		return nil, false
	}
	return sess, true
}

// forCaller is sess as p sees it: each pending interrupt says whether p
// may decide it (MayDecide, from the runner's decision point), so every
// front end shows what a person may decide apart from what they may only
// see without deciding that itself. sess is not changed.
func (s *Server) forCaller(p principal, sess *cairn.Session) *cairn.Session {
	if sess == nil || len(sess.Interrupts) == 0 {
		return sess
	}
	out := *sess
	out.Interrupts = slices.Clone(sess.Interrupts)
	for i := range out.Interrupts {
		may := s.runner.Decides(p.actor, sess.Owner, &out.Interrupts[i])
		out.Interrupts[i].MayDecide = &may
	}
	return &out
}

// decidedBy is the turn option that records p as who decides.
func decidedBy(p principal) *cairn.TurnOptions {
	return &cairn.TurnOptions{Actor: actorOf(p)}
}

// actorOf is p as the runner checks it and the audit trail records it.
func actorOf(p principal) cairn.Actor { return p.actor }
