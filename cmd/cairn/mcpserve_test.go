package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairnhq/cairn/internal/testkit/mcptest"
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
	if err := os.WriteFile(cfg, []byte(servedConfig), 0o600); err != nil {
		t.Fatal(err)
	}
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

// /mcp on a real cairn serve, with its tokens: an approver's client answers
// the nested pause by elicitation and the run completes with the tool run
// once; a user's run stays paused for an approver (the paused result).
func TestMCPOverHTTPOnServe(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "cairn.yaml")
	if err := os.WriteFile(cfg, []byte(servedConfig+`
auth:
  tokens:
    - {name: ana, token_env: CAIRN_TEST_APPROVER, role: approver}
    - {name: uma, token_env: CAIRN_TEST_USER, role: user}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CAIRN_TEST_APPROVER", "approver-token-0123456789")
	t.Setenv("CAIRN_TEST_USER", "user-token-uma-0123456789")
	_, base := serve(t, cfg)
	call := func(token string, handler func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error)) *sdk.CallToolResult {
		t.Helper()
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, &sdk.ClientOptions{ElicitationHandler: handler}).Connect(ctx,
			&sdk.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: bearer(token)}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "lead", Arguments: map[string]any{"input": "ship it"}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	var asked []string
	approve := func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		asked = append(asked, req.Params.Message)
		return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"action": "approve"}}, nil
	}
	res := call("approver-token-0123456789", approve)
	if text := res.Content[0].(*sdk.TextContent).Text; text != "lead: ops: deployed" || len(asked) != 1 || !strings.Contains(asked[0], "lead › ops › Deploy to production?") || !strings.Contains(asked[0], base+"/#/sessions/ses_") {
		t.Fatalf("approver: %q, asked %q", text, asked)
	}
	res = call("user-token-uma-0123456789", approve)
	if text := res.Content[0].(*sdk.TextContent).Text; !strings.Contains(text, "The run is paused") || !strings.Contains(text, base+"/#/sessions/ses_") || len(asked) != 1 {
		t.Fatalf("user: %q, asked %d times", text, len(asked))
	}
	if runs, _ := os.ReadFile(filepath.Join(dir, "runs.txt")); string(runs) != "run\n" {
		t.Fatalf("the tool ran %q", runs)
	}
}

// bearer sends a bearer token with every request.
type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}
