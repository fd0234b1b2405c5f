package config_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/config"
)

const escalationConfig = `store: memory
models:
  default: {provider: scripted, script: [{tool_calls: [{name: refund, arguments: {amount: 5000}}]}, {text: "{{.LastResult}}"}]}
tools:
  refund:
    parameters: {type: object, properties: {amount: {type: number}}}
    builtin: echo
    approval: always
    approvers: {groups: [finance]}
    approval_ttl: 2h
    escalation:
      - {after: 30m, remind: true}
      - {before_expiry: 10m, escalate_to: [finance-leads]}
    on_expiry: {action: approve, if: 'args.amount < 100', reason: "Nobody approved in time."}
    approval_rules:
      - if: 'args.amount > 1000'
        groups: [finance-leads]
        escalation: [{after: 1h, escalate_to: [cfo], hand_over: true}]
        on_expiry: {action: fail, reason: "A large refund waits for no one."}
  restart:
    builtin: echo
    approval: always
    approval_ttl: 1h
agents:
  main:
    model: default
    tools: [refund, restart]
    escalation: [{after: 15m, remind: true}]
    on_expiry: {action: reject, reason: "Restarts wait an hour at most."}
`

// A tool's escalation and on_expiry, and an approval rule's own for the
// calls it gives: the rule's schedule and outcome are the ones a large
// refund gets, named by their key paths.
func TestEscalationConfig(t *testing.T) {
	cfg, err := config.Parse(filepath.Join(t.TempDir(), "cairn.yaml"), []byte(escalationConfig), governanceEnv)
	if err != nil {
		t.Fatal(err)
	}
	refund := cfg.Agents[0].Tools[0]
	if e := refund.Escalation; e == nil || len(e.Steps) != 2 || e.Steps[0].After != 30*time.Minute || !e.Steps[0].Remind ||
		e.Steps[1].BeforeExpiry != 10*time.Minute || e.Steps[1].Rule != "tools.refund.escalation[1]" ||
		e.OnExpiry == nil || e.OnExpiry.Action != cairn.ExpiryApprove || e.OnExpiry.If.Rule() != "args.amount < 100" {
		t.Fatalf("the tool's escalation: %+v", e)
	}
	// The agent's escalation: for its tools that have none.
	if e := cfg.Agents[0].Escalation; e == nil || len(e.Steps) != 1 || e.Steps[0].Rule != "agents.main.escalation[0]" || e.OnExpiry.Rule != "agents.main.on_expiry" {
		t.Fatalf("the agent's escalation: %+v", e)
	}
	r, err := cairn.NewRunner(cfg.Agents, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	s, err := r.Start(context.Background(), "main", "refund order 7", nil)
	if err != nil {
		t.Fatal(err)
	}
	in := s.Interrupts[0]
	if len(in.Schedule) != 1 || !in.Schedule[0].HandOver || !slices.Equal(in.Schedule[0].EscalateTo, []string{"cfo"}) ||
		in.Schedule[0].Rule != "tools.refund.approval_rules[0].escalation[0]" ||
		in.OnExpiry == nil || in.OnExpiry.Action != cairn.ExpiryFail || in.OnExpiry.Rule != "tools.refund.approval_rules[0].on_expiry" {
		t.Fatalf("a refund over 1,000: schedule %+v, on expiry %+v", in.Schedule, in.OnExpiry)
	}
}

func TestEscalationConfigMistakes(t *testing.T) {
	for _, c := range []struct{ name, from, to, says string }{
		{"both after and before_expiry", "{after: 30m, remind: true}", "{after: 30m, before_expiry: 5m, remind: true}", "tools.refund.escalation[0]: give after (a duration since the approval was asked) or before_expiry"},
		{"a step that does nothing", "{after: 30m, remind: true}", "{after: 30m}", "tools.refund.escalation[0]: does nothing"},
		{"a duration that is none", "{after: 30m,", "{after: soon,", `tools.refund.escalation[0].after: "soon" is not a positive duration`},
		{"before a deadline it lacks", "    approval_ttl: 2h\n", "", "tools.refund.escalation[1].before_expiry: counts back from a deadline the tool does not have"},
		{"hand_over to no one", "{before_expiry: 10m, escalate_to: [finance-leads]}", "{before_expiry: 10m, remind: true, hand_over: true}", "tools.refund.escalation[1].hand_over: hands the decision to no group"},
		{"an unknown action", "{action: approve, if:", "{action: approv, if:", `tools.refund.on_expiry.action: "approv" is none of reject, approve, fail, ask`},
		{"approve without a condition", "{action: approve, if: 'args.amount < 100',", "{action: approve,", "tools.refund.on_expiry.if: is required with approve"},
		{"a condition that is not CEL", "'args.amount < 100'", "'args.amount <'", "tools.refund.on_expiry.if: not a valid CEL condition"},
		{"ask without a question", "{action: fail, reason:", "{action: ask, reason:", "tools.refund.approval_rules[0].on_expiry.question: is required with ask"},
		{"a condition on fail", "{action: fail, reason:", "{action: fail, if: 'true', reason:", "tools.refund.approval_rules[0].on_expiry.if: is the condition of approve, not of fail"},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := strings.Replace(escalationConfig, c.from, c.to, 1)
			if src == escalationConfig {
				t.Fatalf("%q is not in the config", c.from)
			}
			_, err := config.Parse(filepath.Join(t.TempDir(), "cairn.yaml"), []byte(src), governanceEnv)
			if err == nil || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("got %v, want it to say %q", err, c.says)
			}
		})
	}
	never := `store: memory
models: {default: {provider: scripted, script: [{text: hi}]}}
tools:
  lookup: {builtin: echo, escalation: [{after: 1m, remind: true}]}
agents: {main: {model: default, tools: [lookup]}}
`
	if _, err := config.Parse(filepath.Join(t.TempDir(), "cairn.yaml"), []byte(never), governanceEnv); err == nil ||
		!strings.Contains(err.Error(), "tools.lookup.escalation: reminds about approvals and waits, but the tool's calls neither wait") {
		t.Fatalf("the escalation of a tool that never asks: %v", err)
	}
}

// Checkpoints are signed by default on a durable store, not on a memory
// one (nobody can edit it, a restart loses it) unless audit.sign says so.
func TestAuditSignsDurableStoresByDefault(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		store, audit string
		sign         bool
	}{
		{"memory", "", false},
		{"memory", "audit: {sign: true}\n", true},
		{"sqlite:./cairn.db", "", true},
		{"sqlite:./cairn.db", "audit: {sign: false}\n", false},
	} {
		src := strings.Replace(escalationConfig, "store: memory\n", "store: "+c.store+"\n"+c.audit, 1)
		cfg, err := config.Parse(filepath.Join(dir, "cairn.yaml"), []byte(src), governanceEnv)
		if err != nil || cfg.Audit.Sign != c.sign {
			t.Errorf("store %s, %q: sign %v %v, want %v", c.store, c.audit, cfg != nil && cfg.Audit.Sign, err, c.sign)
		}
	}
}
