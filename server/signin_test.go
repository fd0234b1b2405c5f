package server

import (
	"encoding/json"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testkit/oidcop"
)

// signInFlow signs a person in to the page through a real OpenID Provider
// on servers whose handlers wrap (to record the statuses they answer).
func signInFlow(t *testing.T, runner *cairn.Runner, wrap func(*Server) http.Handler) {
	t.Helper()
	var sso *Server
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { wrap(sso).ServeHTTP(w, r) }))
	base := "http://" + ts.Listener.Addr().String()
	client := oidcop.Client{ID: "cairn-web", Secret: "web-secret", RedirectURIs: []string{base + "/auth/callback"}}
	op := oidcop.Start(t, []oidcop.Client{client}, oidcop.User{ID: "u-ana", Username: "ana", Password: "ana-pw", Name: "Ana Lima", Groups: []string{"sre"}})
	sso = New(runner, &Options{BaseURL: base, OIDC: &OIDC{Issuer: op.Issuer, ClientID: "cairn-web", ClientSecret: "web-secret",
		Roles: map[string][]string{RoleApprover: {"sre"}}}})
	ts.Start()
	t.Cleanup(ts.Close)

	browser := func() *http.Client {
		jar, _ := cookiejar.New(nil)
		return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	get := func(c *http.Client, method, u string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, u, nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	var info signInInfo
	resp, err := http.Get(base + "/auth/info")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.NewDecoder(resp.Body).Decode(&info); err != nil || info.SignIn != "/auth/login" || info.Issuer != op.Issuer {
		t.Fatalf("/auth/info: %+v %v", info, err)
	}
	resp.Body.Close()

	b := browser()
	login := get(b, "GET", base+"/auth/login")
	if login.StatusCode != http.StatusFound || !strings.HasPrefix(login.Header.Get("Location"), op.Issuer) {
		t.Fatalf("sign in: %d to %q", login.StatusCode, login.Header.Get("Location"))
	}
	back := op.Authorize(t, login.Header.Get("Location"), "ana", "ana-pw")
	done := get(b, "GET", back)
	if done.StatusCode != http.StatusFound || done.Header.Get("Location") != "/" {
		t.Fatalf("the callback: %d to %q", done.StatusCode, done.Header.Get("Location"))
	}
	var cookie string
	for _, c := range done.Header.Values("Set-Cookie") {
		if strings.HasPrefix(c, sessionCookie+"=") {
			cookie = c
		}
	}
	if !strings.Contains(cookie, "HttpOnly") || !strings.Contains(cookie, "SameSite=Lax") || strings.Contains(cookie, "Secure") {
		t.Fatalf("the session cookie on loopback http: %q", cookie)
	}
	me := func(c *http.Client) (int, meBody) {
		req, _ := http.NewRequest("GET", base+"/v1/me", nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m meBody
		_ = json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}
	if status, m := me(b); status != 200 || m.DisplayName != "Ana Lima" || m.Role != RoleApprover || m.Name != "oidc:u-ana" {
		t.Fatalf("/v1/me signed in: %d %+v", status, m)
	}
	if out := get(b, "POST", base+"/auth/logout"); out.StatusCode != 200 {
		t.Fatalf("sign out: %d", out.StatusCode)
	}
	if status, _ := me(b); status != 401 {
		t.Fatalf("/v1/me signed out: %d", status)
	}

	// No sign-in under way in this browser: 400.
	if r := get(browser(), "GET", back); r.StatusCode != http.StatusBadRequest {
		t.Fatalf("a callback in another browser: %d", r.StatusCode)
	}
	// The state matches, the code does not: the provider refuses, 401.
	b = browser()
	login = get(b, "GET", base+"/auth/login")
	authURL, _ := url.Parse(login.Header.Get("Location"))
	bogus := base + "/auth/callback?" + url.Values{"state": {authURL.Query().Get("state")}, "code": {"not-a-code"}}.Encode()
	if r := get(b, "GET", bogus); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a code the provider refuses: %d", r.StatusCode)
	}

	// A provider that cannot be reached: 502.
	var down *Server
	dts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { wrap(down).ServeHTTP(w, r) }))
	down = New(runner, &Options{BaseURL: "http://" + dts.Listener.Addr().String(), OIDC: &OIDC{Issuer: "http://127.0.0.1:1/", ClientID: "cairn-web"}})
	dts.Start()
	t.Cleanup(dts.Close)
	if r := get(browser(), "GET", dts.URL+"/auth/login"); r.StatusCode != http.StatusBadGateway {
		t.Fatalf("sign in with the provider down: %d", r.StatusCode)
	}
}
