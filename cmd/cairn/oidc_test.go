package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/internal/testkit/oidcop"
)

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
models:
  demo:
    provider: scripted
    script:
      - tool_calls: [{name: deploy, arguments: {environment: production}}]
      - text: "{{.LastResult}}"
tools:
  deploy: {builtin: echo, approval: always, approvers: {groups: [sre]}}
agents:
  ops: {model: demo, tools: [deploy]}
`, op.Issuer)
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
}
