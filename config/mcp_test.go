package config_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/config"
	"github.com/cairnhq/cairn/internal/testkit/mcptest"
)

// MCP tools in the config: server.* takes every tool, server.tool one; a
// tools: server.tool entry overrides the annotations' approval; mistakes
// name the key and suggest.
func TestMCPConfig(t *testing.T) {
	bin, dir := mcptest.Server(t, "mcp-server-filesystem"), t.TempDir()
	base := fmt.Sprintf(`
mcp_servers:
  fs: {command: [%q, %q]}
models:
  m: {provider: scripted, script: [{text: hi}]}
tools:
  fs.read_file: {approval: always}
agents:
  main: {model: m, tools: [fs.*]}
  reader: {model: m, tools: [fs.read_file]}
`, bin, dir)
	// Parse reads the file and starts nothing; Connect starts the servers
	// and completes the agents with their tools.
	load := func(text string) (*config.Config, error) {
		cfg, err := config.Parse(filepath.Join(dir, "cairn.yaml"), []byte(text), noEnv)
		if err != nil {
			return nil, err
		}
		if cfg.MCP != nil || len(cfg.Agents) != 0 || len(cfg.MCPServers) != 1 {
			t.Fatalf("Parse started the MCP servers or built their agents: hub %v, %d agents, %d servers", cfg.MCP, len(cfg.Agents), len(cfg.MCPServers))
		}
		if err := cfg.Connect(t.Context()); err != nil {
			return nil, err
		}
		return cfg, nil
	}
	cfg, err := load(base)
	if err != nil {
		t.Fatal(err)
	}
	defer cfg.Close()
	tools := map[string]map[string]string{}
	for _, a := range cfg.Agents {
		tools[a.Name] = map[string]string{}
		for _, tl := range a.Tools {
			tools[a.Name][tl.Name] = tl.Approval.Rule()
		}
		for _, set := range a.Toolsets { // fs.*: the server's tools as they are listed
			for _, tl := range set.Tools() {
				tools[a.Name][tl.Name] = tl.Approval.Rule()
			}
		}
	}
	if len(tools["main"]) < 10 || tools["main"]["fs__write_file"] != "always (annotations: destructive)" || tools["main"]["fs__read_file"] != "always" ||
		tools["main"]["fs__list_directory"] != "never (annotations: read-only)" || tools["reader"]["fs__read_file"] != "always" || len(tools["reader"]) != 1 {
		t.Fatalf("tools: %v", tools)
	}
	for _, c := range []struct{ from, to, want string }{
		{"tools: [fs.read_file]", "tools: [fs.raed_file]", `agents.reader.tools: tools[0]: MCP server fs has no tool "raed_file"`},
		{"tools: [fs.read_file]", "tools: [fz.read_file]", `no MCP server "fz"; configured: fs; did you mean "fs"?`},
		{"fs.read_file: {approval: always}", "fs.read_fil: {approval: always}", `tools.fs.read_fil: MCP server fs has no tool "read_fil"`},
		{"fs.read_file: {approval: always}", "fs.read_file: {approval: always, command: [x]}", `tools.fs.read_file: an MCP tool takes only approval`},
		{"fs: {command:", "fs: {url: http://127.0.0.1:1/mcp, command:", `mcp_servers.fs: give either command`},
	} {
		cfg, err := load(strings.Replace(base, c.from, c.to, 1))
		if err == nil {
			cfg.Close()
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s → %s: err = %v, want %q", c.from, c.to, err, c.want)
		}
	}
}
