package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/internal/mcptest"
)

// servedConfig: lead delegates to ops, whose deploy_code needs approval (a
// nested pause); the command counts its runs in runs.txt.
const servedConfig = `
store: sqlite:./cairn.db
models:
  demo:
    provider: scripted
    scripts:
      lead:
        - tool_calls: [{name: ask_ops, arguments: {input: "deploy to production"}}]
        - text: "lead: {{.LastResult}}"
      ops:
        - tool_calls: [{name: deploy_code, arguments: {environment: production}}]
        - text: "ops: {{.LastResult}}"
tools:
  deploy_code:
    parameters: {type: object, properties: {environment: {type: string}}, required: [environment]}
    command: ["sh", "-c", "echo run >> runs.txt; echo deployed"]
    approval: always
    confirmation: "Deploy to {{.environment}}?"
agents:
  lead: {model: demo, subagents: [{agent: ops}]}
  ops: {model: demo, tools: [deploy_code]}
`

// cairn mcp --config, driven by the official TypeScript SDK's client: the
// nested pause reaches it as an elicitation; its answer completes the run,
// and the tool ran once.
func TestMCPStdioWithTypeScriptClient(t *testing.T) {
	mcptest.Server(t, "mcp-server-everything") // skips with how to install the npm packages
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed (Node 20; .ci/run installs it)")
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "cairn.yaml")
	os.WriteFile(cfg, []byte(servedConfig), 0o600)
	_, file, _, _ := runtime.Caller(0)
	client := filepath.Join(filepath.Dir(file), "..", "..", "mcp", "testdata", "servers", "client.mjs")
	out, err := exec.Command(node, client, "lead", "ship it", binary, "mcp", "--config", cfg).Output()
	if err != nil {
		t.Fatalf("client: %v\n%s", err, out)
	}
	var got struct {
		Tools []string `json:"tools"`
		Asked []struct {
			Message string `json:"message"`
		} `json:"asked"`
		Result struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
			IsError bool `json:"isError"`
		} `json:"result"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if fmt.Sprint(got.Tools) != "[cairn_resume lead ops]" || len(got.Asked) != 1 || !strings.Contains(got.Asked[0].Message, "lead › ops › Deploy to production?") {
		t.Fatalf("tools and questions: %s", out)
	}
	if got.Result.IsError || len(got.Result.Content) != 1 || got.Result.Content[0].Text != "lead: ops: deployed" {
		t.Fatalf("result: %s", out)
	}
	if runs, _ := os.ReadFile(filepath.Join(dir, "runs.txt")); string(runs) != "run\n" {
		t.Fatalf("the tool ran %q", runs)
	}
}
