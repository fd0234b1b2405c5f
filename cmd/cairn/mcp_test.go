package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/cairnhq/cairn/internal/testkit/mcptest"
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
	if err := os.Mkdir(sandbox, 0o755); err != nil {
		t.Fatal(err)
	}
	in, out := filepath.Join(sandbox, "in.txt"), filepath.Join(sandbox, "out.txt")
	if err := os.WriteFile(in, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "cairn.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(mcpConfig, bin, sandbox, in, out)), 0o600); err != nil {
		t.Fatal(err)
	}

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

const twoServersConfig = `
store: sqlite:./cairn.db
mcp_servers:
  memory: {command: [%q], env: {MEMORY_FILE_PATH: %q}}
  everything: {command: [%q]}
models:
  demo:
    provider: scripted
    scripts:
      keeper:
        - tool_calls: [{name: memory__create_entities, arguments: {entities: [{name: ana, entityType: person, observations: [approves deploys]}]}}]
        - tool_calls: [{name: memory__delete_entities, arguments: {entityNames: [ana]}}]
        - text: "{{.LastResult}}"
      asker:
        - tool_calls: [{name: everything__trigger-elicitation-request, arguments: {}}]
        - text: "{{.LastResult}}"
agents:
  keeper: {model: demo, tools: [memory.*]}
  asker: {model: demo, tools: [everything.*]}
`

// server-memory and server-everything through cairn chat and cairn serve:
// create_entities runs at once and delete_entities waits for approval (its
// annotations); everything's elicitation form becomes a question, filled
// in field by field in chat and as content over HTTP, and the answer
// reaches the tool's result.
func TestMCPMemoryAndEverythingThroughChatAndServe(t *testing.T) {
	memory, everything := mcptest.Server(t, "mcp-server-memory"), mcptest.Server(t, "mcp-server-everything")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "cairn.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(twoServersConfig, memory, filepath.Join(dir, "memory.jsonl"), everything)), 0o600); err != nil {
		t.Fatal(err)
	}

	chat := func(agent, input string) string {
		t.Helper()
		cmd := exec.Command(binary, "chat", "--config", cfg, "--agent", agent)
		cmd.Stdin = strings.NewReader(input)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("chat %s: %v\n%s", agent, err, out)
		}
		return string(out)
	}
	out := chat("keeper", "remember ana, then forget her\ny\n")
	if strings.Count(out, "approve?") != 1 || !strings.Contains(out, "memory__delete_entities") || !strings.Contains(strings.ToLower(out), "deleted") {
		t.Fatalf("keeper in chat:\n%s", out)
	}
	out = chat("asker", "ask me\nAda Lovelace\n"+strings.Repeat("\n", 12))
	if !strings.Contains(out, "Your full, legal name") || !strings.Contains(out, "Name: Ada Lovelace") || !strings.Contains(out, "Favorite Integer: 42") {
		t.Fatalf("asker in chat:\n%s", out)
	}

	_, base := serve(t, cfg)
	code, s := post(t, base+"/v1/sessions", `{"agent":"keeper","input":"remember ana, then forget her"}`)
	ins, _ := s["interrupts"].([]any)
	if code != 201 || len(ins) != 1 || ins[0].(map[string]any)["tool"] != "memory__delete_entities" {
		t.Fatalf("keeper over HTTP: %d %v", code, s)
	}
	code, s = post(t, base+"/v1/sessions", `{"agent":"asker","input":"ask me"}`)
	ins, _ = s["interrupts"].([]any)
	if code != 201 || len(ins) != 1 || ins[0].(map[string]any)["schema"] == nil {
		t.Fatalf("asker over HTTP: %d %v", code, s)
	}
	decide := func(content string) (int, map[string]any) {
		return post(t, base+"/v1/sessions/"+s["id"].(string)+"/decisions",
			fmt.Sprintf(`{"seq":%v,"decisions":[{"interrupt_id":%q,"action":"answer","content":%s}]}`, s["seq"], ins[0].(map[string]any)["id"], content))
	}
	if code, bad := decide(`{"integer":"many"}`); code != 400 || bad["error"].(map[string]any)["code"] != "invalid_arguments" {
		t.Fatalf("an answer that does not fit the form: %d %v", code, bad)
	}
	code, done := decide(`{"name":"Grace Hopper","check":true}`)
	if code != 200 || done["status"] != "completed" || !strings.Contains(done["output"].(string), "Name: Grace Hopper") {
		t.Fatalf("answer over HTTP: %d %v", code, done)
	}

	// And from the CLI: show says how to answer; answer --content does.
	_, s = post(t, base+"/v1/sessions", `{"agent":"asker","input":"ask me"}`)
	id := s["id"].(string)
	show, _ := exec.Command(binary, "sessions", "--server", base, "show", id).CombinedOutput()
	if !strings.Contains(string(show), "answer --content") {
		t.Fatalf("show:\n%s", show)
	}
	if out, err := exec.Command(binary, "sessions", "--server", base, "answer", id).CombinedOutput(); err == nil || !strings.Contains(string(out), "--content") {
		t.Fatalf("answer without content: %v\n%s", err, out)
	}
	answered, err := exec.Command(binary, "sessions", "--server", base, "answer", id, "--content", `{"name":"Ada"}`).CombinedOutput()
	if err != nil || !strings.Contains(string(answered), "Name: Ada") {
		t.Fatalf("answer --content: %v\n%s", err, answered)
	}
}

// server-everything's elicitation form in the web page: the question shows
// its own form (defaults filled in), a missing required field is refused
// at the field, and the answer completes the run.
func TestBrowserAnswersAnMCPForm(t *testing.T) {
	everything := mcptest.Server(t, "mcp-server-everything")
	ctx := browser(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "cairn.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`
store: sqlite:./cairn.db
auth:
  tokens:
    - {name: ana, token_env: CAIRN_TEST_APPROVER, role: approver}
mcp_servers:
  everything: {command: [%q]}
models:
  demo:
    provider: scripted
    script:
      - tool_calls: [{name: everything__trigger-elicitation-request, arguments: {}}]
      - text: "{{.LastResult}}"
agents:
  asker: {model: demo, tools: [everything.*]}
`, everything)), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CAIRN_TEST_APPROVER", approverToken)
	_, base := serve(t, cfg)
	_, s := apiCall(t, "POST", base+"/v1/sessions", approverToken, `{"agent":"asker","input":"ask me"}`)
	id, _ := s["id"].(string)
	if s["status"] != "paused" {
		t.Fatalf("start: %v", s)
	}
	form := item(id) + " form.edit"
	var integer string
	err := chromedp.Run(ctx, signIn(base, approverToken),
		chromedp.WaitVisible(form+` input[name="name"]`, chromedp.ByQuery),
		chromedp.Value(form+` input[name="integer"]`, &integer, chromedp.ByQuery),
		chromedp.Click(form+" button[type=submit]", chromedp.ByQuery),
		chromedp.WaitVisible(form+` .field-error[data-field="name"]:not(:empty)`, chromedp.ByQuery),
		chromedp.SendKeys(form+` input[name="name"]`, "Ada Lovelace", chromedp.ByQuery),
		chromedp.Click(form+" button[type=submit]", chromedp.ByQuery),
		chromedp.WaitNotPresent(item(id), chromedp.ByQuery))
	if err != nil {
		t.Fatal(err)
	}
	done := waitSession(t, base, id, "completed")
	if integer != "42" || !strings.Contains(done["output"].(string), "Name: Ada Lovelace") || !strings.Contains(done["output"].(string), "Favorite Integer: 42") {
		t.Fatalf("default %q; output %v", integer, done["output"])
	}
}
