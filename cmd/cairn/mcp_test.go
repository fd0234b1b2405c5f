package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/internal/mcptest"
)

const mcpConfig = `
store: sqlite:./cairn.db
mcp_servers:
  fs: {command: [%q, %q]}
models:
  demo:
    provider: scripted
    script:
      - tool_calls: [{name: fs__read_file, arguments: {path: %q}}]
      - tool_calls: [{name: fs__write_file, arguments: {path: %q, content: "written by cairn"}}]
      - text: "{{.LastResult}}"
tools:
  fs.write_file: {confirmation: "Write {{.path}}?"}
agents:
  main: {model: demo, tools: [fs.*]}
`

// The filesystem MCP server through cairn chat and cairn serve: read_file
// runs at once (read-only), write_file waits for approval (destructive)
// and, approved, writes once.
func TestMCPFilesystemThroughChatAndServe(t *testing.T) {
	bin := mcptest.Server(t, "mcp-server-filesystem")
	dir := t.TempDir()
	sandbox := filepath.Join(dir, "sandbox")
	os.Mkdir(sandbox, 0o755)
	in, out := filepath.Join(sandbox, "in.txt"), filepath.Join(sandbox, "out.txt")
	os.WriteFile(in, []byte("hello"), 0o644)
	cfg := filepath.Join(dir, "cairn.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(mcpConfig, bin, sandbox, in, out)), 0o600)

	cmd := exec.Command(binary, "chat", "--config", cfg)
	cmd.Stdin = strings.NewReader("copy it\ny\n")
	got, err := cmd.CombinedOutput()
	if err != nil || strings.Count(string(got), "approve?") != 1 || !strings.Contains(string(got), "approve? Write "+out+"?") {
		t.Fatalf("chat: %v\n%s", err, got)
	}
	if b, _ := os.ReadFile(out); string(b) != "written by cairn" {
		t.Fatalf("after chat: %q\n%s", b, got)
	}

	os.Remove(out)
	_, base := serve(t, cfg)
	code, s := post(t, base+"/v1/sessions", `{"agent":"main","input":"copy it"}`)
	ins, _ := s["interrupts"].([]any)
	if code != 201 || s["status"] != "paused" || len(ins) != 1 || ins[0].(map[string]any)["tool"] != "fs__write_file" {
		t.Fatalf("serve: %d %v", code, s)
	}
	if _, err := os.Stat(out); err == nil {
		t.Fatal("written before the approval")
	}
	code, done := post(t, base+"/v1/sessions/"+s["id"].(string)+"/decisions",
		fmt.Sprintf(`{"seq":%v,"decisions":[{"interrupt_id":%q,"action":"approve"}]}`, s["seq"], ins[0].(map[string]any)["id"]))
	if code != 200 || done["status"] != "completed" {
		t.Fatalf("approve: %d %v", code, done)
	}
	if b, _ := os.ReadFile(out); string(b) != "written by cairn" {
		t.Fatalf("after serve: %q", b)
	}
	agents := getJSON(t, base+"/v1/agents")
	if !strings.Contains(fmt.Sprint(agents), "always (annotations: destructive)") || !strings.Contains(fmt.Sprint(agents), "never (annotations: read-only)") {
		t.Fatalf("agents: %v", agents)
	}
}
