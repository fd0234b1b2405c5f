package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testkit/hooktest"
	"github.com/cairnhq/cairn/internal/testkit/testwait"
	"github.com/cairnhq/cairn/webhook"
)

// escalationConfig: a refund whose approval (8 s) reminds after 2 s,
// escalates to finance-leads 3 s before its deadline, and is rejected at
// it with a reason; a webhook hears all of it.
const escalationConfig = `
store: %s
lease: 3s
public_url: https://cairn.example.org
webhooks:
  - {name: finance-room, url: "%s", secret_env: CAIRN_TEST_WEBHOOK_SECRET, groups: [finance, finance-leads], timeout: 3s}
models:
  demo:
    provider: scripted
    script:
      - tool_calls: [{name: refund, arguments: {amount: 40}}]
      - text: "{{.LastResult}}"
tools:
  refund:
    parameters: {type: object, properties: {amount: {type: number}}, required: [amount]}
    builtin: echo
    approval: always
    approvers: {groups: [finance]}
    approval_ttl: 8s
    escalation:
      - {after: 2s, remind: true}
      - {before_expiry: 3s, escalate_to: [finance-leads]}
    on_expiry: {action: reject, reason: "Nobody approved in time."}
agents:
  main: {model: demo, tools: [refund]}
`

// Three replicas on one store, one of them killed with -9 before each
// step: every session's reminder, escalation and expiry happen exactly
// once — one event each, recorded with its rule — and the webhook gets
// each once (one delivery id, however often it is retried).
func TestReplicasEscalateOnceThroughKill9(t *testing.T) {
	for name, storeURL := range stores(t) {
		t.Run(name, func(t *testing.T) {
			t.Setenv("CAIRN_TEST_WEBHOOK_SECRET", webhookSecret)
			rc := hooktest.New(t, webhookSecret)
			dir := t.TempDir()
			cfg := filepath.Join(dir, "cairn.yaml")
			if err := os.WriteFile(cfg, []byte(fmt.Sprintf(escalationConfig, storeURL(t), rc.URL)), 0o600); err != nil {
				t.Fatal(err)
			}
			nodes, urls := make([]*os.Process, 3), make([]string, 3)
			for i := range nodes {
				cmd, url := serve(t, cfg)
				nodes[i], urls[i] = cmd.Process, url
			}
			var ids []string
			for i := range 6 {
				_, s := apiCall(t, "POST", urls[i%3]+"/v1/sessions", "", `{"agent":"main","input":"refund order 7"}`)
				if s["status"] != "paused" {
					t.Fatalf("session %d: %v", i, s)
				}
				ids = append(ids, s["id"].(string))
			}
			// kill -9 a replica before the reminder, another before the
			// escalation and the deadline; each comes back.
			for round, at := range []time.Duration{time.Second, 4 * time.Second} {
				time.Sleep(at - time.Duration(round)*time.Second) // elapsed time: a replica dies before each step of the schedule
				victim := round + 1
				_ = nodes[victim].Signal(syscall.SIGKILL)
				cmd, url := serve(t, cfg)
				nodes[victim], urls[victim] = cmd.Process, url
			}
			for _, id := range ids {
				testwait.For(t, 30*time.Second, "session "+id+" to complete at its deadline", func() bool {
					_, s := apiCall(t, "GET", urls[0]+"/v1/sessions/"+id, "", "")
					return s["status"] == "completed"
				})
				counts := map[string]int{}
				for _, ev := range eventsOf(t, urls[2], id) {
					typ := ev["type"].(string)
					counts[typ]++
					data, _ := json.Marshal(ev["data"])
					var d struct {
						Rule   string `json:"rule"`
						Reason string `json:"reason"`
						Actor  struct{ Role string }
					}
					_ = json.Unmarshal(data, &d)
					switch typ {
					case "interrupt_reminded":
						if d.Rule != "tools.refund.escalation[0]" {
							t.Errorf("%s: the reminder's rule %q", id, d.Rule)
						}
					case "interrupt_escalated":
						if d.Rule != "tools.refund.escalation[1]" {
							t.Errorf("%s: the escalation's rule %q", id, d.Rule)
						}
					case "decision":
						if d.Rule != "tools.refund.on_expiry" || d.Reason != "Nobody approved in time." || d.Actor.Role != "expiry" {
							t.Errorf("%s: the decision at expiry %s", id, data)
						}
					}
				}
				if counts["interrupt_reminded"] != 1 || counts["interrupt_escalated"] != 1 || counts["decision"] != 1 {
					t.Errorf("%s: %v, want one reminder, one escalation, one decision", id, counts)
				}
			}
			// Each is delivered under one id per session (retries repeat it).
			for _, typ := range []webhook.EventType{webhook.InterruptReminder, webhook.InterruptEscalated, webhook.InterruptExpired} {
				var perSession map[string]int
				testwait.For(t, 15*time.Second, string(typ)+" of every session to be delivered", func() bool {
					perSession = map[string]int{}
					for id := range rc.Deliveries(typ) {
						perSession[rc.Payload(id).Data.SessionID]++
					}
					return len(perSession) == len(ids)
				})
				for _, id := range ids {
					if perSession[id] != 1 {
						t.Errorf("%s of %s: %d delivery ids, want 1", typ, id, perSession[id])
					}
				}
			}
		})
	}
}

// browserEscalationConfig: no auth (loopback), a refund approval of a
// minute that reminds after 1 s and escalates to finance-leads after 2 s.
const browserEscalationConfig = `store: memory
models:
  demo:
    provider: scripted
    script:
      - tool_calls: [{name: refund, arguments: {amount: 40}}]
      - text: "{{.LastResult}}"
tools:
  refund:
    parameters: {type: object, properties: {amount: {type: number}}, required: [amount]}
    builtin: echo
    approval: always
    approvers: {groups: [finance]}
    approval_ttl: 1m
    escalation:
      - {after: 1s, remind: true}
      - {after: 2s, escalate_to: [finance-leads]}
      - {before_expiry: 10s, remind: true}
    on_expiry: {action: reject, reason: "Nobody approved in time."}
agents:
  main: {model: demo, tools: [refund]}
`

// The inbox card shows the time left, the reminder sent, the escalation
// and what comes next, as they happen (no reload); cairn sessions show
// lists them in the timeline.
func TestBrowserInboxShowsEscalation(t *testing.T) {
	ctx := browser(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "cairn.yaml")
	if err := os.WriteFile(cfg, []byte(browserEscalationConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	_, base := serve(t, cfg)
	run := stepper(t, ctx)
	run("the inbox", chromedp.Navigate(base+"/"), chromedp.WaitVisible("#inbox-empty", chromedp.ByID))
	_, s := apiCall(t, "POST", base+"/v1/sessions", "", `{"agent":"main","input":"refund order 7"}`)
	id := s["id"].(string)
	var text string
	run("escalated", chromedp.WaitVisible(item(id)+" .escalation .badge.reminded", chromedp.ByQuery),
		chromedp.Poll(`(document.querySelector('`+item(id)+` .escalation') || {}).textContent.includes('escalated to finance-leads')`, nil),
		chromedp.TextContent(item(id), &text, chromedp.ByQuery))
	for _, want := range []string{"reminded", "escalated to finance-leads", "next: a reminder in", "at the deadline: rejected (Nobody approved in time.)", "expires in", "Decided by a member of finance or finance-leads"} {
		if !strings.Contains(text, want) {
			t.Fatalf("the card lacks %q:\n%s", want, text)
		}
	}
	// The session page: the escalation history in the audit trail.
	run("the session page", chromedp.Navigate(base+"/#/sessions/"+id), chromedp.WaitVisible("#audit tr.escalation:nth-of-type(3)", chromedp.ByQuery),
		chromedp.Text("#audit", &text, chromedp.ByQuery))
	for _, want := range []string{"reminded refund", "rule tools.refund.escalation[0]", "escalated refund to finance-leads", "rule tools.refund.escalation[1]"} {
		if !strings.Contains(text, want) {
			t.Fatalf("the audit trail lacks %q:\n%s", want, text)
		}
	}
	out, err := exec.Command(binary, "sessions", "show", id, "--server", base).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "interrupt_reminded") || !strings.Contains(string(out), "escalated to finance-leads (tools.refund.escalation[1])") ||
		!strings.Contains(string(out), "reminded; escalated to finance-leads; next: a reminder at") || !strings.Contains(string(out), "then: rejected (Nobody approved in time.)") {
		t.Fatalf("cairn sessions show: %v\n%s", err, out)
	}
}

// deadlineNote, the line cairn chat and cairn sessions show print under
// an approval with a deadline or a schedule.
func TestDeadlineNote(t *testing.T) {
	now := time.Date(2026, 11, 28, 11, 49, 0, 0, time.UTC)
	exp, fired := now.Add(14*time.Minute), now.Add(-time.Minute)
	in := cairn.Interrupt{ExpiresAt: &exp, Schedule: []cairn.ScheduledStep{
		{At: fired, Remind: true, FiredAt: &fired},
		{At: fired, EscalateTo: []string{"finance-leads"}, FiredAt: &fired},
		{At: now.Add(6 * time.Minute), EscalateTo: []string{"cfo"}},
	}, OnExpiry: &cairn.OnExpiry{Action: cairn.ExpiryReject, Reason: "Nobody approved in time."}}
	want := "decide by 12:03:00 UTC (in 14m0s); reminded; escalated to finance-leads; next: escalate to cfo at 11:55:00 UTC; then: rejected (Nobody approved in time.)"
	if got := deadlineNote(in, now); got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	if got := deadlineNote(cairn.Interrupt{}, now); got != "" {
		t.Fatalf("an interrupt with no deadline: %q", got)
	}
}
