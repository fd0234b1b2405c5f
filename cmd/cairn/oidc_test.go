package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cairnhq/cairn/internal/testkit/oidcop"
	"github.com/cairnhq/cairn/internal/testkit/testwait"
)

// oidcAgents: an ops agent whose deploy a member of sre approves.
const oidcAgents = `models:
  demo:
    provider: scripted
    script:
      - tool_calls: [{name: deploy, arguments: {environment: production}}]
      - text: "{{.LastResult}}"
tools:
  deploy: {builtin: echo, approval: always, approvers: {groups: [sre]}}
agents:
  ops: {model: demo, tools: [deploy]}
`

// `cairn serve` with auth.oidc and a real OpenID Provider on loopback: a
// JWT from the provider's own sign-in is a bearer token for the API and for
// `cairn sessions`, deciding by the person's groups; a static token keeps
// working beside it.
func TestServeWithOIDC(t *testing.T) {
	client := oidcop.Client{ID: "cairn", Secret: "cairn-secret", RedirectURIs: []string{"http://127.0.0.1:1/callback"}}
	op := oidcop.Start(t, []oidcop.Client{client},
		oidcop.User{ID: "u-ana", Username: "ana", Password: "ana-pw", Name: "Ana", Groups: []string{"sre"}},
		oidcop.User{ID: "u-dev", Username: "dev", Password: "dev-pw", Name: "Dev", Groups: []string{"dev"}})
	dir := t.TempDir()
	cfg := fmt.Sprintf(`store: sqlite:./cairn.db
auth:
  tokens:
    - {name: bot, token_env: CAIRN_TEST_BOT, role: user}
  oidc:
    issuer: %s
    client_id: cairn
    roles: {approver: [sre, dev]}
`, op.Issuer) + oidcAgents
	if err := os.WriteFile(filepath.Join(dir, "cairn.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	bot := "bot-token-0123456789abcdef"
	t.Setenv("CAIRN_TEST_BOT", bot)
	_, base := serve(t, filepath.Join(dir, "cairn.yaml"))

	_, s := apiCall(t, "POST", base+"/v1/sessions", bot, `{"agent":"ops","input":"ship it"}`)
	id, _ := s["id"].(string)
	if s["status"] != "paused" {
		t.Fatalf("the bot's session: %v", s)
	}
	cli := func(token string, args ...string) (string, error) {
		out, err := exec.Command(binary, append([]string{"sessions", "--server", base, "--token", token}, args...)...).CombinedOutput()
		return string(out), err
	}
	dev := op.SignIn(t, client, "dev", "dev-pw").AccessToken
	if out, err := cli(dev, "approve", id); err == nil || !strings.Contains(out, "member of sre") {
		t.Fatalf("dev approves with a JWT: %v\n%s", err, out)
	}
	ana := op.SignIn(t, client, "ana", "ana-pw").AccessToken
	if out, err := cli(ana, "approve", id); err != nil || !strings.Contains(out, id+": completed") {
		t.Fatalf("ana approves with a JWT: %v\n%s", err, out)
	}
	if status, body := apiCall(t, "GET", base+"/v1/sessions", "not-a-token", ""); status != 401 {
		t.Fatalf("a wrong token: %d %v", status, body)
	}

	// Both clients take the JWT as they take a token.
	py := exec.Command("python3", "-c", "import sys; from cairn_client import Client; m = Client(sys.argv[1], token=sys.argv[2]).me(); print(m.display_name, m.role)", base, ana)
	py.Env = append(os.Environ(), "PYTHONPATH="+filepath.Join("..", "..", "clients", "python"))
	if out, err := py.CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "Ana approver" {
		t.Fatalf("the Python client with a JWT: %v %s", err, out)
	}
	dist := filepath.Join("..", "..", "clients", "typescript", "dist", "index.js")
	if _, err := os.Stat(dist); err != nil {
		t.Skipf("the TypeScript client is not built: (cd clients/typescript && npm ci); .ci/run does it")
	}
	abs, _ := filepath.Abs(dist)
	ts := exec.Command("node", "--input-type=module", "-e", `import { Client } from "file://`+abs+`"; const m = await new Client({ baseUrl: process.argv[1], token: process.argv[2] }).me(); console.log(m.display_name, m.role);`, base, ana)
	if out, err := ts.CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "Ana approver" {
		t.Fatalf("the TypeScript client with a JWT: %v %s", err, out)
	}
}

// In headless Chromium: a person signs in to the page through the
// provider's own login page (no token pasted), sees who they are, and
// approves; the decision records them as signed in through OIDC.
func TestBrowserSignInWithOIDC(t *testing.T) {
	ctx := browser(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // cairn serve takes the port: the provider must know the callback first
	base := "http://" + addr
	client := oidcop.Client{ID: "cairn-web", Secret: "web-secret", RedirectURIs: []string{base + "/auth/callback"}}
	op := oidcop.Start(t, []oidcop.Client{client}, oidcop.User{ID: "u-ana", Username: "ana", Password: "ana-pw", Name: "Ana Lima", Groups: []string{"sre"}})
	dir := t.TempDir()
	cfg := fmt.Sprintf(`store: sqlite:./cairn.db
public_url: %s
auth:
  oidc:
    issuer: %s
    client_id: cairn-web
    client_secret_env: CAIRN_TEST_OIDC_SECRET
    roles: {approver: [sre]}
`, base, op.Issuer) + oidcAgents
	if err := os.WriteFile(filepath.Join(dir, "cairn.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CAIRN_TEST_OIDC_SECRET", "web-secret")
	cmd := exec.Command(binary, "serve", "--config", filepath.Join(dir, "cairn.yaml"), "--addr", addr)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	testwait.For(t, 20*time.Second, "cairn serve to listen", func() bool {
		resp, err := http.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	})
	ana := op.SignIn(t, client, "ana", "ana-pw").AccessToken
	_, s := apiCall(t, "POST", base+"/v1/sessions", ana, `{"agent":"ops","input":"ship it"}`)
	id, _ := s["id"].(string)

	run := stepper(t, ctx)
	var who string
	run("sign in through the provider", chromedp.Navigate(base+"/"), chromedp.WaitVisible("#sso", chromedp.ByID),
		chromedp.Click("#sso", chromedp.ByID),
		chromedp.WaitVisible("#username", chromedp.ByID), // the provider's own login page
		chromedp.SendKeys("#username", "ana", chromedp.ByID), chromedp.SendKeys("#password", "ana-pw", chromedp.ByID),
		chromedp.Click(`button[type="submit"]`, chromedp.ByQuery),
		chromedp.WaitVisible(item(id), chromedp.ByQuery),
		chromedp.Text("#whoami", &who, chromedp.ByID))
	if !strings.Contains(who, "Ana Lima (approver)") {
		t.Fatalf("the page says %q", who)
	}
	run("approve", chromedp.Click(item(id)+" button.approve", chromedp.ByQuery), chromedp.WaitNotPresent(item(id), chromedp.ByQuery))
	var actor map[string]any
	testwait.For(t, 10*time.Second, "the decision", func() bool {
		_, evs := apiCall(t, "GET", base+"/v1/sessions/"+id+"/events", ana, "")
		list, _ := evs["events"].([]any)
		for _, ev := range list {
			if ev := ev.(map[string]any); ev["type"] == "decision" {
				actor, _ = ev["data"].(map[string]any)["actor"].(map[string]any)
			}
		}
		return actor != nil
	})
	if actor["via"] != "oidc" || actor["name"] != "Ana Lima" || actor["subject"] != "u-ana" {
		t.Fatalf("the decision's actor: %v", actor)
	}
	run("sign out", chromedp.Click("#whoami button", chromedp.ByQuery), chromedp.WaitVisible("#sso", chromedp.ByID))
}
