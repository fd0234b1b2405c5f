package server

import (
	"errors"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// guard keeps other web origins out (docs/web.md, "Who can reach the
// page"). A browser visiting another site still reaches a server on
// loopback, so loopback is no boundary on its own:
//
//   - Without tokens (the local mode), a request must name this server in
//     its Host: a loopback address, localhost, the host of Options.BaseURL
//     or one of Options.AllowedHosts. A DNS-rebinding page sends its own
//     name and gets 421 misdirected_request.
//   - A state-changing request (any method but GET, HEAD, OPTIONS) that a
//     browser marks as coming from another origin (Sec-Fetch-Site, or else
//     Origin against Host) gets 403 forbidden_origin unless that origin is
//     in Options.AllowedOrigins. With tokens this costs nothing (a
//     cross-origin page holds no token) and is kept all the same.
//
// API bodies must also be application/json (decodeBodyWith): a form or a
// no-cors fetch can only send text/plain, urlencoded or multipart bodies.
type guard struct {
	// hosts are the accepted Host names besides loopback; nil when any
	// Host is accepted (with tokens).
	hosts map[string]bool
	cop   *http.CrossOriginProtection
}

// newGuard builds the guard from the options. An allowed origin that is
// not scheme://host[:port] is left out and reported in err; the guard is
// usable either way.
func newGuard(opts *Options) (g *guard, err error) {
	g = &guard{cop: http.NewCrossOriginProtection()}
	for _, o := range opts.AllowedOrigins {
		if e := g.cop.AddTrustedOrigin(o); e != nil {
			err = errors.Join(err, fmt.Errorf("allowed origin %q: %w (write scheme://host[:port], e.g. https://app.example.org)", o, e))
		}
	}
	g.cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		from := r.Header.Get("Origin")
		if from == "" {
			from = "another site (Sec-Fetch-Site: " + r.Header.Get("Sec-Fetch-Site") + ")"
		}
		writeError(w, http.StatusForbidden, "forbidden_origin", fmt.Sprintf(
			"%s %s came from %s: a page on another origin may not change state here; list the origin under allowed_origins in the config if it is yours (docs/web.md)", r.Method, r.URL.Path, from))
	}))
	if len(opts.Tokens) == 0 && opts.OIDC == nil {
		g.hosts = map[string]bool{}
		if opts.BaseURL != "" {
			if u, err := url.Parse(opts.BaseURL); err == nil && u.Host != "" {
				g.hosts[normalHost(u.Host)] = true
			}
		}
		for _, h := range opts.AllowedHosts {
			g.hosts[normalHost(h)] = true
		}
	}
	return g, err
}

// wrap applies the guard before next.
func (g *guard) wrap(next http.Handler) http.Handler {
	checked := g.cop.Handler(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if g.hosts != nil && r.URL.Path != "/healthz" && !g.hostAllowed(r.Host) {
			writeError(w, http.StatusMisdirectedRequest, "misdirected_request", fmt.Sprintf(
				"Host %q does not name this server: without auth it answers only to loopback names (127.0.0.1, localhost), the host of public_url and allowed_hosts; add the name to allowed_hosts if you reach it that way (docs/web.md)", r.Host))
			return
		}
		checked.ServeHTTP(w, r)
	})
}

// hostAllowed reports whether a Host header names this server.
func (g *guard) hostAllowed(hostport string) bool {
	h := normalHost(hostport)
	if h == "localhost" || strings.HasSuffix(h, ".localhost") || g.hosts[h] {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// normalHost is the lower-case host name of a Host value, without port,
// brackets or a trailing dot.
func normalHost(hostport string) string {
	h := hostport
	if host, _, err := net.SplitHostPort(hostport); err == nil {
		h = host
	}
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	return strings.TrimSuffix(strings.ToLower(h), ".")
}

// jsonBody answers 415 unless the request's body is declared as JSON.
func jsonBody(w http.ResponseWriter, r *http.Request) bool {
	ct := r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json") && strings.HasPrefix(mt, "application/")) {
		return true
	}
	if ct == "" {
		ct = "none"
	}
	writeError(w, http.StatusUnsupportedMediaType, "unsupported_media_type", fmt.Sprintf(
		"the body's Content-Type is %s; send the JSON body with Content-Type: application/json", ct))
	return false
}
