package config_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/config"
	"github.com/cairnhq/cairn/internal/testkit/mcptest"
)

// A tool's preview: a command (its stdout read as the format, JSON
// checked) or an MCP server's tool (called with the call's arguments),
// computed before the pause; mistakes name their key.
func TestPreviewConfig(t *testing.T) {
	bin, dir := mcptest.Server(t, "mcp-server-filesystem"), t.TempDir()
	notes := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notes, []byte("the notes as they are"), 0o600); err != nil {
		t.Fatal(err)
	}
	text := fmt.Sprintf(`
mcp_servers:
  fs: {command: [%q, %q]}
models:
  m:
    provider: scripted
    script:
      - tool_calls:
          - {name: drop_rows, arguments: {table: orders}}
          - {name: bad_json, arguments: {}}
          - {name: write_notes, arguments: {path: %q, text: new}}
      - text: done
tools:
  drop_rows:
    parameters: {type: object, properties: {table: {type: string}}}
    command: ["sh", "-c", "echo dropped"]
    approval: always
    preview: {command: ["sh", "-c", "cat >/dev/null; echo '{\"rows\": 3, \"table\": \"orders\"}'"], format: json}
  bad_json:
    command: ["sh", "-c", "echo x"]
    approval: always
    preview: {command: ["echo", "not json"], format: json}
  write_notes:
    parameters: {type: object, properties: {path: {type: string}, text: {type: string}}}
    command: ["sh", "-c", "echo written"]
    approval: always
    preview: {mcp: fs.read_file}
agents:
  main: {model: m, tools: [drop_rows, bad_json, write_notes]}
`, bin, dir, notes)
	cfg, err := config.Parse(filepath.Join(dir, "cairn.yaml"), []byte(text), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer cfg.Close()
	r, err := cairn.NewRunner(cfg.Agents, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	s, err := r.Start(t.Context(), "main", "go", nil)
	if err != nil || len(s.Interrupts) != 3 {
		t.Fatalf("start: %v %+v", err, s)
	}
	rows, bad, file := s.Interrupts[0].Preview, s.Interrupts[1].Preview, s.Interrupts[2].Preview
	if rows == nil || rows.Format != cairn.PreviewJSON || string(rows.Content) != `{"rows":3,"table":"orders"}` {
		t.Fatalf("the command's JSON preview: %+v", rows)
	}
	if bad == nil || !strings.Contains(bad.Error, "not one JSON value") {
		t.Fatalf("a command that prints no JSON: %+v", bad)
	}
	if file == nil || file.Format != cairn.PreviewText || !strings.Contains(file.Text(), "the notes as they are") {
		t.Fatalf("the MCP tool's preview: %+v", file)
	}

	// An MCP tool's override takes a preview too (the gateway's tools and
	// an agent's): another tool of a server.
	over, err := config.Parse(filepath.Join(dir, "cairn.yaml"), []byte(fmt.Sprintf(`
mcp_servers:
  fs: {command: [%q, %q]}
models: {m: {provider: scripted, script: [{text: hi}]}}
tools:
  fs.write_file: {approval: always, preview: {mcp: fs.read_file, timeout: 2s}}
agents: {main: {model: m, tools: [fs.write_file]}}
`, bin, dir)), noEnv)
	if err == nil {
		err = over.Connect(t.Context())
	}
	if err != nil {
		t.Fatal(err)
	}
	defer over.Close()
	if tl := over.Agents[0].Tools[0]; tl.Preview == nil || tl.PreviewTimeout.Seconds() != 2 {
		t.Fatalf("fs.write_file has no preview: %+v", tl)
	}

	for yaml, want := range map[string]string{
		`{command: [sh], approval: never, preview: {command: [x]}}`:                     "tools.t.preview: a preview is shown to the person approving a call, and this tool never asks",
		`{command: [sh], approval: always, preview: {command: [x], format: html}}`:      `tools.t.preview.format: "html" is not a preview format; use text, diff or json`,
		`{command: [sh], approval: always, preview: {command: [x], mcp: fs.read_file}}`: "tools.t.preview: give command or mcp, not both",
		`{command: [sh], approval: always, preview: {timeout: 1s}}`:                     "tools.t.preview: give command",
		`{command: [sh], approval: always, preview: {mcp: read_file}}`:                  `tools.t.preview.mcp: "read_file" is not SERVER.TOOL`,
		`{command: [sh], approval: always, preview: {mcp: db.explain}}`:                 `tools.t.preview.mcp: no MCP server "db"`,
		`{command: [sh], approval: always, preview: {mcp: fs.explain}}`:                 `tools.t.preview.mcp: MCP server fs has no tool "explain"`,
		`{command: [sh], approval: always, preview: {command: [x], timeout: soon}}`:     `tools.t.preview.timeout: "soon" is not a positive duration`,
	} {
		cfg, err := config.Parse(filepath.Join(dir, "cairn.yaml"), []byte(fmt.Sprintf(`
mcp_servers:
  fs: {command: [%q, %q]}
models: {m: {provider: scripted, script: [{text: hi}]}}
tools:
  t: %s
agents: {main: {model: m, tools: [t]}}
`, bin, dir, yaml)), noEnv)
		if err == nil {
			err = cfg.Connect(t.Context())
			cfg.Close()
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", yaml, err, want)
		}
	}
}
