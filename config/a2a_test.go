package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/config"
)

// The a2a section names agents of the file; mistakes name their key.
func TestA2ASection(t *testing.T) {
	const agents = `
models: {m: {provider: scripted, script: [{text: hi}]}}
agents: {main: {model: m}, billing: {model: m}}
`
	cfg, err := config.Parse("/etc/cairn/cairn.yaml", []byte(agents+"a2a: {agents: [main, billing]}\n"), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(cfg.A2A, ",") != "main,billing" {
		t.Fatalf("A2A = %v", cfg.A2A)
	}
	for text, want := range map[string]string{
		"a2a: {agents: [mian]}":       `a2a.agents[0]: no agent "mian": serve one of the agents defined under agents: (billing, main)`,
		"a2a: {agents: [main, main]}": `a2a.agents[1]: agent "main" is listed twice`,
		"a2a: {agents: []}":           "a2a.agents: list the agents to serve over A2A",
		"a2a: {agent: [main]}":        `unknown key "agent"`,
	} {
		if _, err := config.Parse("/etc/cairn/cairn.yaml", []byte(agents+text+"\n"), noEnv); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", text, err, want)
		}
	}
}

// A remote agent (a2a:) is a sub-agent of the agents that name it: its
// tool, not an agent of the runner; its mistakes name their key.
func TestRemoteAgents(t *testing.T) {
	env := func(name string) (string, bool) {
		if name == "PARTNER_TOKEN" {
			return "s3cret", true
		}
		return "", false
	}
	const base = `
models: {m: {provider: scripted, script: [{text: hi}]}}
agents:
  main: {model: m, subagents: [{agent: partner}]}
  partner:
    a2a: {url: "http://127.0.0.1:9100/", headers: {Authorization: "Bearer ${PARTNER_TOKEN}"}}
    description: The partner's booking agent.
`
	cfg, err := config.Parse("/etc/cairn/cairn.yaml", []byte(base), env)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Agents) != 2 || cfg.Agents[0].Name != "main" || cfg.Agents[1].Name != "approvals" {
		t.Fatalf("agents: %d", len(cfg.Agents))
	}
	tools := cfg.Agents[0].Tools
	if len(tools) != 1 || tools[0].Name != "ask_partner" || tools[0].Description != "The partner's booking agent." || tools[0].Handler == nil || !tools[0].Idempotent {
		t.Fatalf("main's tools: %+v", tools)
	}
	for text, want := range map[string]string{
		strings.Replace(base, "http://127.0.0.1:9100/", "ftp://x", 1):                                                 `agents.partner.a2a.url: "ftp://x" is not an http(s) URL`,
		strings.Replace(base, "PARTNER_TOKEN", "NOPE", 1):                                                             "agents.partner.a2a.headers.Authorization: environment variable NOPE is not set",
		strings.Replace(base, "    description:", "    model: m\n    description:", 1):                                "agents.partner: a remote agent (a2a:) has its model",
		base + "a2a: {agents: [partner]}\n":                                                                           `a2a.agents[0]: agent "partner" is a remote agent`,
		strings.Replace(base, "subagents: [{agent: partner}]", "handoffs: [partner]", 1):                              `handoffs[0]: "partner" is remote`,
		strings.Replace(base, "subagents: [{agent: partner}]", "subagents: [{agent: partner, mode: interactive}]", 1): `"partner" is remote (a2a:)`,
	} {
		if _, err := config.Parse("/etc/cairn/cairn.yaml", []byte(text), env); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v, want %q", err, want)
		}
	}
}

// The example pair of docs/a2a.md loads.
func TestA2AExamples(t *testing.T) {
	env := func(name string) (string, bool) { return "s3cret-outer-token", name == "OUTER_TOKEN" }
	for _, name := range []string{"inner.yaml", "outer.yaml"} {
		path := filepath.Join("..", "examples", "a2a", name)
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := config.Parse(path, src, env); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
