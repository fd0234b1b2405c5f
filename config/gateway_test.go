package config_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/config"
	"github.com/cairnhq/cairn/internal/testkit/mcptest"
)

// An approvals section alone is a config (no agents, no models): the
// approvals agent decides by it. docs/config.md's example.
func TestApprovalsSection(t *testing.T) {
	cfg, err := config.Parse("/etc/cairn/cairn.yaml", []byte(`
approvals:
  approvers: {groups: [finance], count: 2, not_requester: true}
  escalation:
    - {after: 1h, remind: true}
    - {before_expiry: 30m, escalate_to: [finance-leads]}
  on_expiry: {action: reject, reason: "nobody decided in time"}
`), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Agents) != 1 {
		t.Fatalf("agents: %d", len(cfg.Agents))
	}
	a := cfg.Agents[0]
	if a.Name != "approvals" || !a.Direct || !a.CallerTools || a.Approvers == nil || a.Approvers.Count != 2 || a.Escalation == nil || len(a.Escalation.Steps) != 2 {
		t.Fatalf("the approvals agent: %+v", a)
	}
	for text, want := range map[string]string{
		"approvals: {approvers: {count: -1}}": "approvals.approvers.count",
		"agents: {approvals: {model: m}}":     `agents.approvals: the name "approvals" is Cairn's own`,
		"agents: {gateway: {model: m}}":       `agents.gateway: the name "gateway" is Cairn's own`,
		`store: "memory:"`:                    "no agents are defined",
	} {
		if _, err := config.Parse("/etc/cairn/cairn.yaml", []byte(text), noEnv); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", text, err, want)
		}
	}
}

// The gateway section: its servers' tools become the direct agent
// gateway's once Connect started them; mistakes name their key.
func TestGatewaySection(t *testing.T) {
	bin, dir := mcptest.Server(t, "mcp-server-filesystem"), t.TempDir()
	servers := fmt.Sprintf("mcp_servers:\n  fs: {command: [%q, %q]}\n", bin, dir)
	cfg, err := config.Parse(filepath.Join(dir, "cairn.yaml"), []byte(servers+`
gateway:
  servers: [fs]
  hold: 90s
  sessions: all
  approvers: {groups: [ops]}
tools:
  fs.write_file:
    confirmation: "Write {{.path}}?"
    approvers: {groups: [leads], count: 2}
    approval_rules: [{if: 'args.path.endsWith(".env")', groups: [security]}]
`), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if g := cfg.Gateway; g == nil || fmt.Sprint(g.Servers) != "[fs]" || g.Hold != 90*time.Second || !g.AllSessions {
		t.Fatalf("gateway: %+v", g)
	}
	if err := cfg.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer cfg.Close()
	var names []string
	for _, a := range cfg.Agents {
		if a.Name != config.GatewayAgent {
			continue
		}
		if !a.Direct || a.Approvers == nil || a.Approvers.Groups[0] != "ops" {
			t.Fatalf("the gateway agent: %+v", a)
		}
		for _, ts := range a.Toolsets {
			for _, tl := range ts.Tools() {
				names = append(names, tl.Name)
				if tl.Name == "fs__write_file" && (tl.Confirmation != "Write {{.path}}?" || tl.Approvers == nil || tl.Approvers.Groups[0] != "leads" || tl.Approvers.Count != 2 ||
					len(tl.ApprovalRules) != 1 || tl.ApprovalRules[0].Approvers.Groups[0] != "security") {
					t.Errorf("the override: %+v", tl)
				}
			}
		}
	}
	if !strings.Contains(strings.Join(names, " "), "fs__write_file") {
		t.Fatalf("the gateway's tools: %v", names)
	}
	for text, want := range map[string]string{
		"gateway: {hold: 1m}":                       "gateway.servers: name the mcp_servers",
		"gateway: {servers: [fss]}":                 `no MCP server "fss"; configured: fs; did you mean "fs"?`,
		"gateway: {servers: [fs, fs]}":              "listed twice",
		"gateway: {servers: [fs], hold: soon}":      "gateway.hold",
		"gateway: {servers: [fs], sessions: reads}": "gateway.sessions",
		"gateway: {servers: [fs], frontend: true}":  `unknown key "frontend"`,
		"gateway: {servers: [fs]}\ntools: {fs.write_file: {approval_rules: [{groups: [x]}]}}":                                        "tools.fs.write_file.approval_rules[0].if: is required",
		"gateway: {servers: [fs]}\ntools: {fs.write_file: {approval_rules: [{if: 'true', groups: [x], on_expiry: {action: fail}}]}}": "an MCP tool's approval rule takes if and approvers",
	} {
		// An override of a tool the gateway offers by server.* is read
		// when Connect lists the server's tools.
		cfg, err := config.Parse(filepath.Join(dir, "cairn.yaml"), []byte(servers+text), noEnv)
		if err == nil {
			err = cfg.Connect(t.Context())
			cfg.Close()
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", text, err, want)
		}
	}
}
