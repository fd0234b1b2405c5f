package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cairnhq/cairn/internal/testkit/testwait"
)

const rulesConfig = `store: %s
auth:
  tokens:
    - {name: ana, token_env: CAIRN_TEST_ANA, role: approver, groups: [ops]}
    - {name: dev, token_env: CAIRN_TEST_DEV, role: approver, groups: [dev]}
models:
  demo:
    provider: scripted
    script:
      - tool_calls: [{name: deploy, arguments: {env: "{{.Input}}"}}]
      - text: "{{.LastResult}}"
tools:
  deploy:
    parameters: {type: object, properties: {env: {type: string}}, required: [env]}
    command: ["sh", "-c", "cat >> runs.log; echo >> runs.log; echo deployed"]
    approval: always
    approvers: {groups: [ops]}
    standing_rules: {max_duration: 30d}
agents:
  ops: {model: demo, tools: [deploy]}
`

const (
	anaToken = "ana-token-0123456789abcdef0123"
	devToken = "dev-token-0123456789abcdef0123"
)

// A standing rule granted from the web page (headless Chromium, on one
// replica) approves the next matching call on another replica without a
// pause, recorded with data.rule; a call outside its condition pauses; a
// grant beyond the grantor's groups is 403; revoked from the page, it
// stops at once: the next call, on the other replica, pauses.
func TestStandingRuleFromThePage(t *testing.T) {
	ctx := browser(t)
	for name, store := range stores(t) {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := filepath.Join(dir, "cairn.yaml")
			writeFile(t, cfg, fmt.Sprintf(rulesConfig, store(t)))
			t.Setenv("CAIRN_TEST_ANA", anaToken)
			t.Setenv("CAIRN_TEST_DEV", devToken)
			_, urlA := serve(t, cfg)
			_, urlB := serve(t, cfg)
			runs := func() int {
				b, _ := os.ReadFile(filepath.Join(dir, "runs.log"))
				return len(strings.Fields(string(b)))
			}
			start := func(base, env string) map[string]any {
				t.Helper()
				code, s := apiCall(t, "POST", base+"/v1/sessions", anaToken, fmt.Sprintf(`{"agent":"ops","input":%q}`, env))
				if code != http.StatusCreated {
					t.Fatalf("start %s: %d %v", env, code, s)
				}
				return s
			}
			first := start(urlA, "staging")
			if first["status"] != "paused" {
				t.Fatalf("the first call: %v", first)
			}
			id := first["id"].(string)

			// Beyond the grantor's groups: 403, and nothing is granted.
			prod := start(urlB, "prod")
			prodIn := prod["interrupts"].([]any)[0].(map[string]any)["id"].(string)
			code, body := apiCall(t, "POST", urlB+"/v1/sessions/"+prod["id"].(string)+"/decisions", devToken,
				fmt.Sprintf(`{"seq":%v,"decisions":[{"interrupt_id":%q,"action":"approve","rule":{"scope":"agent"}}]}`, prod["seq"], prodIn))
			if code != http.StatusForbidden {
				t.Fatalf("a grant by dev, not in ops: %d %v", code, body)
			}

			// Granted from the page on A: tick, read the pre-filled condition, approve.
			run := stepper(t, ctx)
			var cond string
			run("sign in on A", signIn(urlA, anaToken), chromedp.WaitVisible(item(id), chromedp.ByQuery))
			run("grant the rule", chromedp.Click(item(id)+" input.rule-on", chromedp.ByQuery),
				chromedp.Value(item(id)+" input.rule-if", &cond, chromedp.ByQuery),
				chromedp.Click(item(id)+" button.approve", chromedp.ByQuery),
				chromedp.WaitNotPresent(item(id), chromedp.ByQuery))
			if cond != `args.env == "staging"` {
				t.Fatalf("the pre-filled condition: %q", cond)
			}
			testwait.For(t, 20*time.Second, "the granting session to complete on B", func() bool {
				_, s := apiCall(t, "GET", urlB+"/v1/sessions/"+id, anaToken, "")
				return s["status"] == "completed"
			})
			_, rules := apiCall(t, "GET", urlB+"/v1/rules", anaToken, "")
			list := rules["rules"].([]any)
			if len(list) != 1 {
				t.Fatalf("rules on B: %v", rules)
			}
			rule := list[0].(map[string]any)
			if rule["if"] != cond || rule["scope"] != "agent" || rule["granted_by"].(map[string]any)["name"] != "ana" {
				t.Fatalf("the rule: %v", rule)
			}

			// On B: the matching call runs at once, the outside one pauses.
			before := runs()
			next := start(urlB, "staging")
			if next["status"] != "completed" || runs() != before+1 {
				t.Fatalf("a matching call on B: %v (runs %d → %d)", next, before, runs())
			}
			if d := decisionOf(t, urlB, next["id"].(string)); d["rule"] != rule["id"] || d["action"] != "approve" || d["actor"].(map[string]any)["name"] != "ana" {
				t.Fatalf("the rule's decision: %v", d)
			}
			if other := start(urlB, "qa"); other["status"] != "paused" {
				t.Fatalf("a call outside the condition: %v", other)
			}

			// Revoked from the page (on A); right after, on B, a call pauses.
			run("revoke", chromedp.Navigate(urlA+"/#/rules"), chromedp.WaitVisible(`#rules tr[data-rule] button.revoke`, chromedp.ByQuery),
				chromedp.Click(`#rules tr[data-rule] button.revoke`, chromedp.ByQuery),
				chromedp.WaitNotPresent(`#rules tr[data-rule]`, chromedp.ByQuery))
			if after := start(urlB, "staging"); after["status"] != "paused" {
				t.Fatalf("a call right after the revocation: %v", after)
			}
			_, all := apiCall(t, "GET", urlB+"/v1/rules?all=true", anaToken, "")
			if r := all["rules"].([]any)[0].(map[string]any); r["revoked_at"] == nil || r["uses"] != 1.0 || r["revoked_by"].(map[string]any)["name"] != "ana" {
				t.Fatalf("the revoked rule: %v", r)
			}
			run("sign out", chromedp.Evaluate(`localStorage.clear()`, nil))
		})
	}
}

// decisionOf is the data of a session's one decision event.
func decisionOf(t *testing.T, base, id string) map[string]any {
	t.Helper()
	var d map[string]any
	testwait.For(t, 10*time.Second, "the decision of "+id, func() bool {
		_, evs := apiCall(t, "GET", base+"/v1/sessions/"+id+"/events", anaToken, "")
		for _, ev := range evs["events"].([]any) {
			if e := ev.(map[string]any); e["type"] == "decision" {
				d = e["data"].(map[string]any)
				return true
			}
		}
		return false
	})
	return d
}
