package server

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// The web page's sign-in through the OpenID Provider: the authorization
// code flow with PKCE, done by the server (a confidential client when it
// has a secret). The person's ID token is then kept in an HttpOnly cookie,
// verified on each request like a bearer JWT; the Origin checks that guard
// the API guard requests that carry it.
const (
	sessionCookie = "cairn_session"   // the signed-in person's ID token
	flowCookie    = "cairn_oidc_flow" // state, PKCE verifier and nonce of a sign-in under way
	signInPath    = "/auth/login"     // the routes are registered with these paths in New
	callbackPath  = "/auth/callback"  //
)

// flow is what a sign-in under way keeps in its cookie.
type flow struct {
	State    string `json:"s"`
	Verifier string `json:"v"`
	Nonce    string `json:"n"`
}

// signInInfo tells the page how a person signs in (GET /auth/info, public).
type signInInfo struct {
	// SignIn is where the page sends a person to sign in with the OpenID
	// Provider; empty: tokens only.
	SignIn string `json:"sign_in,omitempty"`
	Issuer string `json:"issuer,omitempty"`
}

func (s *Server) authInfo(w http.ResponseWriter, r *http.Request) {
	if s.oidc == nil || s.baseURL == "" {
		writeJSON(w, http.StatusOK, signInInfo{})
		return
	}
	writeJSON(w, http.StatusOK, signInInfo{SignIn: signInPath, Issuer: s.oidc.cfg.Issuer})
}

// withSignIn answers 404 when the server signs no one in (no OIDC, or no
// BaseURL to come back to).
func (s *Server) withSignIn(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.oidc == nil || s.baseURL == "" {
			writeError(w, http.StatusNotFound, "not_found", "this server does not sign people in through an OpenID Provider (auth.oidc, with public_url)")
			return
		}
		h(w, r)
	}
}

// oauthConfig is the server as a client of the provider.
func (s *Server) oauthConfig(r *http.Request) (*oauth2.Config, *oidc.Provider, error) {
	p, err := s.oidc.provider(r.Context())
	if err != nil {
		return nil, nil, err
	}
	return &oauth2.Config{ClientID: s.oidc.cfg.ClientID, ClientSecret: s.oidc.cfg.ClientSecret, Endpoint: p.Endpoint(),
		RedirectURL: strings.TrimSuffix(s.baseURL, "/") + callbackPath, Scopes: []string{oidc.ScopeOpenID, "profile"}}, p, nil
}

// signIn sends the browser to the provider's login page.
func (s *Server) signIn(w http.ResponseWriter, r *http.Request) {
	conf, _, err := s.oauthConfig(r)
	if err != nil {
		writeError(w, http.StatusBadGateway, "oidc_unavailable", err.Error())
		return
	}
	f := flow{State: rand.Text(), Verifier: oauth2.GenerateVerifier(), Nonce: rand.Text()}
	b, _ := json.Marshal(f) // three strings: cannot fail
	http.SetCookie(w, s.cookie(r, flowCookie, base64.RawURLEncoding.EncodeToString(b), 10*time.Minute))
	http.Redirect(w, r, conf.AuthCodeURL(f.State, oauth2.S256ChallengeOption(f.Verifier), oidc.Nonce(f.Nonce)), http.StatusFound)
}

// signInCallback takes the provider's code back: it checks the state
// against the flow's cookie, exchanges the code with the PKCE verifier,
// verifies the ID token and its nonce, and keeps it in the session cookie.
func (s *Server) signInCallback(w http.ResponseWriter, r *http.Request) {
	fail := func(status int, msg string) {
		http.SetCookie(w, s.cookie(r, flowCookie, "", -1))
		http.Error(w, "Sign-in failed: "+msg+". Go back to the page and sign in again.", status)
	}
	c, err := r.Cookie(flowCookie)
	if err != nil {
		fail(http.StatusBadRequest, "no sign-in is under way in this browser (its cookie is missing or expired)")
		return
	}
	var f flow
	raw, err := base64.RawURLEncoding.DecodeString(c.Value)
	if err != nil || json.Unmarshal(raw, &f) != nil || f.State == "" {
		fail(http.StatusBadRequest, "the sign-in cookie is malformed")
		return
	}
	q := r.URL.Query()
	if e := q.Get("error"); e != "" {
		fail(http.StatusUnauthorized, "the provider said "+e+": "+q.Get("error_description"))
		return
	}
	if q.Get("state") != f.State {
		fail(http.StatusBadRequest, "the state does not match the sign-in this browser started")
		return
	}
	conf, _, err := s.oauthConfig(r)
	if err != nil {
		fail(http.StatusBadGateway, err.Error())
		return
	}
	tok, err := conf.Exchange(r.Context(), q.Get("code"), oauth2.VerifierOption(f.Verifier))
	if err != nil {
		fail(http.StatusUnauthorized, "the provider refused the code: "+err.Error())
		return
	}
	idToken, _ := tok.Extra("id_token").(string)
	p, exp, err := s.oidc.verifyIDToken(r.Context(), idToken, f.Nonce)
	if err != nil {
		fail(http.StatusUnauthorized, err.Error())
		return
	}
	http.SetCookie(w, s.cookie(r, flowCookie, "", -1))
	http.SetCookie(w, s.cookie(r, sessionCookie, idToken, time.Until(exp)))
	s.log.Info("signed in", "subject", p.actor.Subject, "name", p.actor.Name, "role", p.role)
	http.Redirect(w, r, "/", http.StatusFound)
}

// signOut forgets the session cookie.
func (s *Server) signOut(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, s.cookie(r, sessionCookie, "", -1))
	writeJSON(w, http.StatusOK, map[string]bool{"signed_out": true})
}

// cookie is an HttpOnly, SameSite=Lax cookie for the whole site, Secure
// unless the page is served over plain HTTP on loopback; maxAge < 0
// deletes it.
func (s *Server) cookie(r *http.Request, name, value string, maxAge time.Duration) *http.Cookie {
	c := &http.Cookie{Name: name, Value: value, Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: !plainLoopback(s.baseURL)}
	if maxAge < 0 {
		c.MaxAge = -1
	} else {
		c.MaxAge = int(maxAge.Seconds())
	}
	return c
}

// plainLoopback reports whether base is an http:// URL of a loopback host,
// where a Secure cookie would not be sent back.
func plainLoopback(base string) bool {
	u, err := url.Parse(base)
	if err != nil || u.Scheme != "http" {
		return false
	}
	host := u.Hostname()
	ip := net.ParseIP(host)
	return host == "localhost" || ip != nil && ip.IsLoopback()
}

// cookiePrincipal is the person the session cookie names, if any.
func (s *Server) cookiePrincipal(r *http.Request) (principal, bool, error) {
	if s.oidc == nil {
		return principal{}, false, nil
	}
	c, err := r.Cookie(sessionCookie)
	if errors.Is(err, http.ErrNoCookie) || c.Value == "" {
		return principal{}, false, nil
	}
	p, _, err := s.oidc.verifyIDToken(r.Context(), c.Value, "")
	if err != nil {
		return principal{}, true, fmt.Errorf("the sign-in has ended (%w); sign in again", err)
	}
	return p, true, nil
}
