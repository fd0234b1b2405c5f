package config_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/config"
)

const governanceConfig = `store: memory
public_url: https://cairn.example.org
webhooks:
  - {name: finance-room, url: "https://bridge.example.org/hook", secret_env: HOOK_SECRET, groups: [finance], tenant: acme}
  - {name: ana-inbox, url: "https://mail.example.org/ana", secret_env: HOOK_SECRET, person: ana}
auth:
  admin_override: true
  tokens:
    - {name: ana, token_env: ANA_TOKEN, role: approver, groups: [sre], tenant: acme}
    - {name: ana-phone, token_env: ANA2_TOKEN, role: approver, subject: ana, groups: [sre], tenant: acme}
    - {name: ops, token_env: OPS_TOKEN, role: admin, tenant: "*"}
models:
  default: {provider: scripted, script: [{tool_calls: [{name: refund, arguments: {amount: 5000}}]}, {text: "{{.LastResult}}"}]}
tools:
  refund:
    parameters: {type: object, properties: {amount: {type: number}}}
    builtin: echo
    approval: always
    approvers: {groups: [finance], not_requester: true}
    approval_rules:
      - {if: 'args.amount > 1000', groups: [finance-leads], count: 2}
  restart:
    builtin: echo
    approval: always
agents:
  main: {model: default, tools: [refund, restart], approvers: {groups: [sre]}}
`

func governanceEnv(name string) (string, bool) {
	switch name {
	case "ANA_TOKEN":
		return "ana-token-0000000000000000000000", true
	case "ANA2_TOKEN":
		return "ana-token-1111111111111111111111", true
	case "OPS_TOKEN":
		return "ops-token-2222222222222222222222", true
	case "HOOK_SECRET":
		return "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", true
	}
	return "", false
}

// Tokens carry subject, groups and tenant; a tool's approval_rules (CEL
// over args, first match) win over its approvers, and an agent's approvers
// apply to its tools that name none.
func TestGovernanceConfig(t *testing.T) {
	cfg, err := config.Parse(filepath.Join(t.TempDir(), "cairn.yaml"), []byte(governanceConfig), governanceEnv)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.AdminOverride {
		t.Error("auth.admin_override not read")
	}
	if len(cfg.Webhooks) != 2 || len(cfg.Webhooks[0].Groups) != 1 || cfg.Webhooks[0].Groups[0] != "finance" || cfg.Webhooks[0].Tenant != "acme" {
		t.Errorf("the webhook's groups and tenant: %+v", cfg.Webhooks)
	}
	// A receiver issued to one person is that token's person.
	if p := cfg.Webhooks[1].Person; p == nil || p.Name != "ana" || p.Subject != "ana" || p.Tenant != "acme" || fmt.Sprint(p.Groups) != "[sre]" || !cfg.Webhooks[1].Hears("acme") || cfg.Webhooks[1].Hears("") {
		t.Errorf("ana's inbox: %+v", cfg.Webhooks[1])
	}
	ana, phone, ops := cfg.Tokens[0], cfg.Tokens[1], cfg.Tokens[2]
	if ana.Subject != "ana" || len(ana.Groups) != 1 || phone.Subject != "ana" || ana.Tenant != "acme" || ana.AllTenants {
		t.Fatalf("tokens %+v %+v", ana, phone)
	}
	// A global admin is explicit: tenant "*".
	if !ops.AllTenants || ops.Tenant != "" {
		t.Fatalf("ops (tenant \"*\"): %+v", ops)
	}
	r, err := cairn.NewRunner(cfg.Agents, &cairn.RunnerOptions{Webhooks: cfg.Webhooks, PublicURL: cfg.PublicURL})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	s, err := r.Start(context.Background(), "main", "refund order 7", nil)
	if err != nil {
		t.Fatal(err)
	}
	in := s.Interrupts[0]
	if in.Required != 2 || in.Approvers == nil || in.Approvers.Groups[0] != "finance-leads" || in.Approvers.NotRequester {
		t.Fatalf("a refund over 1,000: required %d, approvers %+v", in.Required, in.Approvers)
	}
	// GET /v1/agents says who approves each tool.
	tools := r.Agents()[0].Tools
	if rules := tools[0].ApprovalRules; tools[0].Approvers == nil || tools[0].Approvers.Groups[0] != "finance" || len(rules) != 1 ||
		rules[0].Condition != "args.amount > 1000" || rules[0].Groups[0] != "finance-leads" || rules[0].Count != 2 {
		t.Fatalf("refund in the agents' listing: %+v, rules %+v", tools[0].Approvers, rules)
	}
	if tools[1].Approvers == nil || tools[1].Approvers.Groups[0] != "sre" {
		t.Fatalf("restart in the agents' listing has not its agent's approvers: %+v", tools[1].Approvers)
	}
	restart := cfg.Agents[0].Tools[1]
	if restart.Approvers != nil {
		t.Fatalf("restart names no approvers of its own: %+v", restart.Approvers)
	}
	if cfg.Agents[0].Approvers == nil || cfg.Agents[0].Approvers.Groups[0] != "sre" {
		t.Fatalf("the agent's approvers: %+v", cfg.Agents[0].Approvers)
	}
}

func TestGovernanceConfigMistakes(t *testing.T) {
	for _, c := range []struct{ name, from, to, says string }{
		{"approvers without approval", "    approval: always\n    approvers:", "    approvers:", "tools.refund.approvers: says who approves calls that never wait"},
		{"a rule without if", "{if: 'args.amount > 1000', groups", "{groups", "tools.refund.approval_rules[0].if: is required"},
		{"a rule that is not CEL", "args.amount > 1000", "args.amount >", "tools.refund.approval_rules[0].if: not a valid CEL condition"},
		{"a negative count", "count: 2", "count: -1", "tools.refund.approval_rules[0].count: -1 is negative"},
		{"an empty group", "groups: [sre]}}", "groups: ['']}}", "agents.main.approvers.groups[0]: is empty"},
		{"an unknown key", "not_requester: true}", "not_requestor: true}", `did you mean "not_requester"`},
		{"a tenant that is no name", "groups: [sre], tenant: acme}", "groups: [sre], tenant: 'acme corp'}", `auth.tokens[0].tenant: "acme corp" is not a tenant name`},
		{"a person who is no token", "person: ana}", "person: anna}", `webhooks[1].person: "anna" is none of the auth tokens' names (ana, ana-phone, ops); did you mean "ana"`},
		{"a person and groups", "person: ana}", "person: ana, groups: [sre]}", "webhooks[1]: a receiver issued to a person speaks with their groups and tenant"},
		{"a webhook's tenant that is no name", "groups: [finance], tenant: acme}", "groups: [finance], tenant: a/b}", `webhooks[0].tenant: "a/b" is not a tenant name`},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := strings.Replace(governanceConfig, c.from, c.to, 1)
			if src == governanceConfig {
				t.Fatalf("%q is not in the config", c.from)
			}
			_, err := config.Parse(filepath.Join(t.TempDir(), "cairn.yaml"), []byte(src), governanceEnv)
			if err == nil || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("got %v, want it to say %q", err, c.says)
			}
		})
	}
}
