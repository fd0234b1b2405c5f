package config_test

import (
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
