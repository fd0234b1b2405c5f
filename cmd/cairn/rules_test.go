package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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
			startAs := func(base, env string) map[string]any {
				t.Helper()
				code, s := apiCall(t, "POST", base+"/v1/sessions", anaToken, fmt.Sprintf(`{"agent":"ops","input":%q}`, env))
				if code != http.StatusCreated {
					t.Fatalf("start %s: %d %v", env, code, s)
				}
				return s
			}
			first := startAs(urlA, "staging")
			if first["status"] != "paused" {
				t.Fatalf("the first call: %v", first)
			}
			id := first["id"].(string)

			// Beyond the grantor's groups: 403, and nothing is granted.
			prod := startAs(urlB, "prod")
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
			next := startAs(urlB, "staging")
			if next["status"] != "completed" || runs() != before+1 {
				t.Fatalf("a matching call on B: %v (runs %d → %d)", next, before, runs())
			}
			if d := decisionOf(t, urlB, next["id"].(string)); d["rule"] != rule["id"] || d["action"] != "approve" || d["actor"].(map[string]any)["name"] != "ana" {
				t.Fatalf("the rule's decision: %v", d)
			}
			if other := startAs(urlB, "qa"); other["status"] != "paused" {
				t.Fatalf("a call outside the condition: %v", other)
			}

			// Revoked from the page (on A); right after, on B, a call pauses.
			run("revoke", chromedp.Navigate(urlA+"/#/rules"), chromedp.WaitVisible(`#rules tr[data-rule] button.revoke`, chromedp.ByQuery),
				chromedp.Click(`#rules tr[data-rule] button.revoke`, chromedp.ByQuery),
				chromedp.WaitNotPresent(`#rules tr[data-rule]`, chromedp.ByQuery))
			if after := startAs(urlB, "staging"); after["status"] != "paused" {
				t.Fatalf("a call right after the revocation: %v", after)
			}
			_, all := apiCall(t, "GET", urlB+"/v1/rules?all=true", anaToken, "")
			if r := all["rules"].([]any)[0].(map[string]any); r["revoked_at"] == nil || r["uses"] != 1.0 || r["revoked_by"].(map[string]any)["name"] != "ana" {
				t.Fatalf("the revoked rule: %v", r)
			}
			// The analytics page: the decisions above, by tool, with its plots.
			var row string
			run("analytics", chromedp.Navigate(urlA+"/#/analytics?days=all"), chromedp.WaitVisible(`#analytics tr[data-key="deploy"]`, chromedp.ByQuery),
				chromedp.Text(`#analytics tr[data-key="deploy"]`, &row, chromedp.ByQuery),
				chromedp.WaitVisible(`svg.plot rect[data-series="approved"]`, chromedp.ByQuery))
			// deploy: 3 pending (prod, qa, the last staging), 3 decided (the
			// grant, prod's 403 decided nothing, the rule's), 2 approved, 1 by rule.
			if f := strings.Fields(row); len(f) < 8 || f[1] != "3" || f[2] != "2" || f[3] != "2" || f[7] != "1" {
				t.Fatalf("the analytics row of deploy: %q", row)
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

// cairn chat grants a rule with r (the condition pre-filled from the
// call): the next matching call in the chat runs without asking, another
// one asks. The CLI grants one with --rule, lists and revokes them.
func TestStandingRuleFromChatAndCLI(t *testing.T) {
	cfg := rulesSetup(t)
	cmd := exec.Command(binary, "chat", "--config", cfg, "--agent", "ops")
	// r, then an empty condition (the pre-filled one), the default scope and duration.
	cmd.Stdin = strings.NewReader("staging\nr\n\n\n\nstaging\nqa\nn\nno\n")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("chat: %v\n%s", err, out)
	}
	if strings.Count(string(out), "approve?") != 2 || !strings.Contains(string(out), `if [args.env == "staging"]`) ||
		strings.Count(string(out), "ops> deployed") != 2 {
		t.Fatalf("chat:\n%s", out)
	}

	_, base := serve(t, cfg)
	cli := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(binary, append(args, "--server", base, "--token", anaToken)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("cairn %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	list := cli("rules", "list")
	if strings.Count(list, "rul_") != 1 || !strings.Contains(list, `args.env == "staging"`) || !strings.Contains(list, "approve deploy of ops") {
		t.Fatalf("rules list:\n%s", list)
	}
	s := start(t, base, "qa")
	out2 := cli("sessions", "approve", s, "--rule", "--rule-if", `args.env == "qa"`, "--rule-for", "72h", "--rule-scope", "tenant")
	if !strings.Contains(out2, "completed") {
		t.Fatalf("approve --rule:\n%s", out2)
	}
	if again := start(t, base, "qa"); sessionStatus(t, base, again) != "completed" {
		t.Fatalf("a call the CLI's rule covers did not run at once")
	}
	list = cli("rules", "list", "--tool", "deploy")
	ids := regexp.MustCompile(`rul_[0-9a-f]+`).FindAllString(list, -1)
	if len(ids) != 2 || !strings.Contains(list, "tenant") {
		t.Fatalf("rules list:\n%s", list)
	}
	for _, id := range ids {
		if out := cli("rules", "revoke", id); !strings.Contains(out, "revoked "+id) {
			t.Fatalf("revoke:\n%s", out)
		}
	}
	if list := cli("rules", "list"); strings.Contains(list, "rul_") {
		t.Fatalf("live rules after revoking both:\n%s", list)
	}
	if list := cli("rules", "list", "--all"); strings.Count(list, "revoked ") != 2 {
		t.Fatalf("rules list --all:\n%s", list)
	}
	if s := start(t, base, "qa"); sessionStatus(t, base, s) != "paused" {
		t.Fatalf("a call after the revocation did not pause")
	}
}

// rulesSetup writes rulesConfig on a SQLite file in a new directory, sets
// its tokens, and returns the config's path.
func rulesSetup(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "cairn.yaml")
	writeFile(t, cfg, fmt.Sprintf(rulesConfig, "sqlite:"+filepath.Join(dir, "cairn.db")))
	t.Setenv("CAIRN_TEST_ANA", anaToken)
	t.Setenv("CAIRN_TEST_DEV", devToken)
	return cfg
}

// start starts a session of ops deploying to env, as ana, and returns its id.
func start(t *testing.T, base, env string) string {
	t.Helper()
	code, s := apiCall(t, "POST", base+"/v1/sessions", anaToken, fmt.Sprintf(`{"agent":"ops","input":%q}`, env))
	if code != http.StatusCreated {
		t.Fatalf("start %s: %d %v", env, code, s)
	}
	return s["id"].(string)
}

func sessionStatus(t *testing.T, base, id string) string {
	t.Helper()
	_, s := apiCall(t, "GET", base+"/v1/sessions/"+id, anaToken, "")
	status, _ := s["status"].(string)
	return status
}

// cairn analytics show reads a server's figures; cairn analytics export
// writes the rejected and edited calls of a config's store as JSON lines.
func TestAnalyticsShowAndExport(t *testing.T) {
	cfg := rulesSetup(t)
	_, base := serve(t, cfg)
	decide := func(env, decision string) {
		t.Helper()
		code, s := apiCall(t, "POST", base+"/v1/sessions", anaToken, fmt.Sprintf(`{"agent":"ops","input":%q}`, env))
		if code != http.StatusCreated {
			t.Fatalf("start: %d %v", code, s)
		}
		in := s["interrupts"].([]any)[0].(map[string]any)["id"].(string)
		code, s = apiCall(t, "POST", base+"/v1/sessions/"+s["id"].(string)+"/decisions", anaToken,
			fmt.Sprintf(`{"seq":%v,"decisions":[{"interrupt_id":%q,%s}]}`, s["seq"], in, decision))
		if code != http.StatusOK {
			t.Fatalf("decide: %d %v", code, s)
		}
	}
	decide("staging", `"action":"approve"`)
	decide("prod", `"action":"reject","reason":"not on a Friday"`)
	decide("qa", `"action":"approve","arguments":{"env":"staging"}`)
	start(t, base, "later") // pending

	out, err := exec.Command(binary, "analytics", "show", "--by", "tool", "--since", "1d", "--server", base, "--token", anaToken).CombinedOutput()
	if err != nil || !regexp.MustCompile(`(?m)^deploy\s+1\s+3\s+2\s+1\s+1\s`).Match(out) {
		t.Fatalf("analytics show: %v\n%s", err, out)
	}
	out, err = exec.Command(binary, "analytics", "export", "--config", cfg).Output()
	if err != nil {
		t.Fatalf("analytics export: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 {
		t.Fatalf("export:\n%s", out)
	}
	var rejected, edited map[string]any
	if json.Unmarshal([]byte(lines[0]), &rejected) != nil || json.Unmarshal([]byte(lines[1]), &edited) != nil {
		t.Fatalf("not JSON lines:\n%s", out)
	}
	if rejected["action"] != "reject" || rejected["reason"] != "not on a Friday" || rejected["arguments"].(map[string]any)["env"] != "prod" || rejected["decided_by"] != "ana" {
		t.Fatalf("the rejected call: %v", rejected)
	}
	if edited["edited"] != true || edited["new_arguments"].(map[string]any)["env"] != "staging" || edited["arguments"].(map[string]any)["env"] != "qa" {
		t.Fatalf("the edited call: %v", edited)
	}
}
