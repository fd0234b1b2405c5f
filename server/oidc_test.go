package server_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testkit/oidcop"
	"github.com/cairnhq/cairn/server"
)

// Bearer JWTs from a real OpenID Provider on loopback (zitadel/oidc's
// example OP, its login form and token endpoint): a person's groups decide
// as static tokens' do, and data.actor records the issuer, the subject and
// via oidc; a token for another audience, an expired one, and one signed by
// a rotated-out key are refused with 401; a static token keeps working.
func TestOIDCBearerTokens(t *testing.T) {
	cairnClient := oidcop.Client{ID: "cairn", Secret: "cairn-secret", RedirectURIs: []string{"http://127.0.0.1:1/callback"}}
	other := oidcop.Client{ID: "other-app", Secret: "other-secret", RedirectURIs: []string{"http://127.0.0.1:1/other"}}
	op := oidcop.Start(t, []oidcop.Client{cairnClient, other},
		oidcop.User{ID: "u-ana", Username: "ana", Password: "ana-pw", Name: "Ana Lima", Groups: []string{"sre", "approvers"}},
		oidcop.User{ID: "u-dev", Username: "dev", Password: "dev-pw", Name: "Dev", Groups: []string{"dev", "approvers"}},
		oidcop.User{ID: "u-uma", Username: "uma", Password: "uma-pw", Name: "Uma"})

	var runs atomic.Int32
	runner := deployRunner(t, &cairn.Approvers{Groups: []string{"sre"}}, &runs)
	srv := httptest.NewServer(server.New(runner, &server.Options{
		Tokens: []server.Token{{Name: "ops-bot", Secret: "ops-bot-token-000000000000", Role: server.RoleAdmin}},
		OIDC: &server.OIDC{Issuer: op.Issuer, ClientID: "cairn", ClockSkew: time.Millisecond,
			Roles: map[string][]string{server.RoleApprover: {"approvers"}}}}))
	t.Cleanup(srv.Close)
	call := func(token, method, path, body string) (int, map[string]any) {
		t.Helper()
		return callAs(t, srv.URL, token, method, path, body)
	}

	uma := op.SignIn(t, cairnClient, "uma", "uma-pw").AccessToken
	status, s := call(uma, "POST", "/v1/sessions", `{"agent":"main","input":"Deploy the latest build to production."}`)
	if status != 201 || s["status"] != "paused" || s["owner"] != "oidc:u-uma" {
		t.Fatalf("uma starts a session: %d %v", status, s)
	}
	id, in := s["id"].(string), interrupts(s)[0]["id"].(string)
	approve := fmt.Sprintf(`{"seq":%d,"decisions":[{"interrupt_id":%q,"action":"approve"}]}`, seqOf(s), in)
	if status, body := call(uma, "POST", "/v1/sessions/"+id+"/decisions", approve); status != 403 || errCode(body) != "forbidden" {
		t.Fatalf("uma, a user, approves: %d %v", status, body)
	}
	dev := op.SignIn(t, cairnClient, "dev", "dev-pw").AccessToken
	if status, body := call(dev, "POST", "/v1/sessions/"+id+"/decisions", approve); status != 403 || errCode(body) != "not_an_approver" {
		t.Fatalf("dev, an approver outside sre, approves: %d %v", status, body)
	}

	// Refused with 401: another audience, a token past its exp, and one
	// whose key the provider rotated out before the server saw it.
	rotatedOut := op.SignIn(t, cairnClient, "ana", "ana-pw").AccessToken
	op.Rotate()
	wrongAudience := op.SignIn(t, other, "ana", "ana-pw").AccessToken
	op.SetLifetime(time.Second)
	expiring := op.SignIn(t, cairnClient, "ana", "ana-pw").AccessToken
	op.SetLifetime(5 * time.Minute)
	ana := op.SignIn(t, cairnClient, "ana", "ana-pw").AccessToken
	time.Sleep(2 * time.Second) // elapsed time: past the one-second token's exp
	// The first token of the new key has the server read the key set again:
	// from then on the rotated-out key verifies nothing.
	if status, body := call(ana, "GET", "/v1/sessions/"+id, ""); status != 200 {
		t.Fatalf("a token of the new key: %d %v", status, body)
	}
	for what, tok := range map[string]string{"another audience": wrongAudience, "expired": expiring, "a rotated-out key": rotatedOut, "not a token": "x.y.z"} {
		status, body := call(tok, "GET", "/v1/sessions/"+id, "")
		if status != 401 || errCode(body) != "unauthorized" {
			t.Errorf("%s: %d %v", what, status, body)
		}
		says := map[string]string{"another audience": "audience", "expired": "expired", "a rotated-out key": "signature", "not a token": "verify"}[what]
		if !strings.Contains(fmt.Sprint(body), says) {
			t.Errorf("%s: the refusal does not say %q: %v", what, says, body)
		}
	}

	status, done := call(ana, "POST", "/v1/sessions/"+id+"/decisions", approve)
	if status != 200 || done["status"] != "completed" {
		t.Fatalf("ana approves: %d %v", status, done)
	}
	_, evs := call("ops-bot-token-000000000000", "GET", "/v1/sessions/"+id+"/events", "")
	var actor map[string]any
	for _, ev := range evs["events"].([]any) {
		if ev := ev.(map[string]any); ev["type"] == "decision" {
			actor = ev["data"].(map[string]any)["actor"].(map[string]any)
		}
	}
	if actor["name"] != "Ana Lima" || actor["subject"] != "u-ana" || actor["issuer"] != op.Issuer || actor["via"] != "oidc" || actor["role"] != "approver" {
		t.Fatalf("the decision's actor: %v", actor)
	}
}

// A JWT that cannot be checked because the provider is down is not called
// invalid: 503 oidc_unavailable with Retry-After; a static token works.
func TestOIDCProviderDown(t *testing.T) {
	var runs atomic.Int32
	runner := deployRunner(t, nil, &runs)
	srv := httptest.NewServer(server.New(runner, &server.Options{
		Tokens: []server.Token{{Name: "bot", Secret: "bot-token-000000000000000", Role: server.RoleUser}},
		OIDC:   &server.OIDC{Issuer: "http://127.0.0.1:1/", ClientID: "cairn"}}))
	t.Cleanup(srv.Close)
	for tok, want := range map[string]int{"a.b.c": 503, "bot-token-000000000000000": 200} {
		req, _ := http.NewRequest("GET", srv.URL+"/v1/me", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want || want == 503 && resp.Header.Get("Retry-After") == "" {
			t.Errorf("%s: %d (Retry-After %q), want %d", tok, resp.StatusCode, resp.Header.Get("Retry-After"), want)
		}
	}
}
