package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

const reviewConfig = `
store: sqlite:./cairn.db
auth:
  tokens:
    - {name: ana, token_env: CAIRN_TEST_APPROVER, role: approver}
models:
  demo:
    provider: scripted
    scripts:
      triage:
        - text: '{"priority":"low","summary":"disk at 80%"}'
        - text: '{"priority":"high","summary":"disk rising"}'
agents:
  triage:
    model: demo
    review: always
    output_schema:
      type: object
      properties:
        priority: {type: string, enum: [low, high]}
        summary: {type: string, maxLength: 30}
      required: [priority, summary]
`

// A structured answer reviewed in the page: sent back with a reason (the
// model answers again), edited in a form from the output schema (the
// server's refusal shows at the field, nothing changes), then edited to
// fit: the session completes with the edited answer.
func TestBrowserReviewsAStructuredAnswer(t *testing.T) {
	ctx := browser(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cairn.yaml"), []byte(reviewConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CAIRN_TEST_APPROVER", approverToken)
	_, base := serve(t, filepath.Join(dir, "cairn.yaml"))
	run := stepper(t, ctx)

	code, s := apiCall(t, "POST", base+"/v1/sessions", approverToken, `{"agent":"triage","input":"disk alert"}`)
	if code != 201 || s["status"] != "paused" {
		t.Fatalf("%d %v", code, s)
	}
	id := s["id"].(string)
	var text string
	run("sign in and see the answer", signIn(base, approverToken),
		chromedp.WaitVisible(item(id)+" pre.output", chromedp.ByQuery),
		chromedp.TextContent(item(id)+" pre.output", &text, chromedp.ByQuery))
	if !strings.Contains(text, "disk at 80%") {
		t.Fatalf("the card shows %q", text)
	}
	run("send it back", chromedp.SendKeys(item(id)+" input.reason", "it keeps rising", chromedp.ByQuery),
		chromedp.Click(item(id)+" button.reject", chromedp.ByQuery),
		chromedp.WaitVisible(item(id)+` pre.output`, chromedp.ByQuery),
		chromedp.Poll(`document.querySelector('`+item(id)+` pre.output')?.textContent.includes('disk rising')`, nil))
	run("an edit the schema refuses", chromedp.Click(item(id)+" button.edit", chromedp.ByQuery),
		chromedp.WaitVisible(item(id)+" form.edit", chromedp.ByQuery),
		chromedp.SetValue(item(id)+` input[name="summary"]`, "disk rising, page the on-call engineer now", chromedp.ByQuery),
		chromedp.Click(item(id)+" form.edit button[type=submit]", chromedp.ByQuery),
		chromedp.WaitVisible(item(id)+` .field-error[data-field="summary"]:not(:empty)`, chromedp.ByQuery))
	if _, again := apiCall(t, "GET", base+"/v1/sessions/"+id, approverToken, ""); again["status"] != "paused" {
		t.Fatalf("the refused edit changed the session: %v", again)
	}
	run("an edit that fits", chromedp.SetValue(item(id)+` input[name="summary"]`, "page on-call", chromedp.ByQuery),
		chromedp.Click(item(id)+" form.edit button[type=submit]", chromedp.ByQuery),
		chromedp.WaitNotPresent(item(id), chromedp.ByQuery))
	done := waitSession(t, base, id, "completed")
	out, _ := done["output"].(map[string]any)
	if out["priority"] != "high" || out["summary"] != "page on-call" {
		t.Fatalf("output %v", done["output"])
	}
}

// The same review from the CLI: the list says what waits, reject sends the
// answer back, an edit the schema refuses fails naming the field, an edit
// that fits completes the session.
func TestCLIReviewsAStructuredAnswer(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cairn.yaml"), []byte(reviewConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CAIRN_TEST_APPROVER", approverToken)
	_, base := serve(t, filepath.Join(dir, "cairn.yaml"))
	cli := func(args ...string) (string, error) {
		out, err := exec.Command(binary, append([]string{"sessions", "--server", base, "--token", approverToken}, args...)...).CombinedOutput()
		return string(out), err
	}
	_, s := apiCall(t, "POST", base+"/v1/sessions", approverToken, `{"agent":"triage","input":"disk alert"}`)
	id := s["id"].(string)
	if out, err := cli("list", "--status", "paused"); err != nil || !strings.Contains(out, `review the answer: The answer waits for your review. {"priority":"low"`) || !strings.Contains(out, "edit --output") {
		t.Fatalf("list: %v\n%s", err, out)
	}
	if out, err := cli("reject", id, "--reason", "it keeps rising"); err != nil || !strings.Contains(out, "disk rising") {
		t.Fatalf("reject: %v\n%s", err, out)
	}
	if out, err := cli("edit", id, "--output", `{"priority":"urgent","summary":"x"}`); err == nil || !strings.Contains(out, "/priority") {
		t.Fatalf("an edit the schema refuses: %v\n%s", err, out)
	}
	if out, err := cli("edit", id, "--output", `{"priority":"high","summary":"page on-call"}`); err != nil || !strings.Contains(out, "completed") {
		t.Fatalf("edit: %v\n%s", err, out)
	}
	done := waitSession(t, base, id, "completed")
	if out, _ := done["output"].(map[string]any); out["summary"] != "page on-call" {
		t.Fatalf("output %v", done["output"])
	}
}

// The same review in cairn chat: the answer is shown, "n" sends it back
// with a reason, "e" takes an edited answer (a line that is not JSON is
// refused before anything is sent), and the edited answer is the reply.
func TestChatReviewsAStructuredAnswer(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "cairn.yaml")
	if err := os.WriteFile(cfg, []byte(strings.Replace(reviewConfig, "store: sqlite:./cairn.db", "store: memory", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CAIRN_TEST_APPROVER", approverToken)
	chat := exec.Command(binary, "chat", "--config", cfg, "--agent", "triage")
	chat.Dir = dir
	chat.Stdin = strings.NewReader("disk alert\nn\nit keeps rising\ne\nnot json\ne\n{\"priority\":\"high\",\"summary\":\"page on-call\"}\n")
	out, err := chat.CombinedOutput()
	for _, want := range []string{`the answer waits for review:`, `{"priority":"low","summary":"disk at 80%"}`, `{"priority":"high","summary":"disk rising"}`,
		"that is not JSON; nothing was sent", `{"priority":"high","summary":"page on-call"}`} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("chat lacks %q: %v\n%.3000s", want, err, out)
		}
	}
}
