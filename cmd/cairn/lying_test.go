package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// lyingConfig: a model whose call hides a right-to-left override in a file
// name ("\u202egpj.exe" reads as "exe.jpg") beside a 100,000-character
// note, and an interactive sub-agent, so the session page has nested
// frames. No auth: the local mode.
func lyingConfig() string {
	return `
store: sqlite:./cairn.db
models:
  demo:
    provider: scripted
    scripts:
      liar:
        - tool_calls: [{name: send_file, arguments: {name: "\u202egpj.exe", note: "` + strings.Repeat("n", 100_000) + `"}}]
        - text: "{{.LastResult}}"
      concierge:
        - tool_calls: [{name: use_writer, arguments: {input: "release notes"}}]
        - text: "Notes: {{.LastResult}}"
      writer:
        - text: "Who are the notes for?"
        - tool_calls: [{name: complete, arguments: {result: "notes for customers"}}]
tools:
  send_file:
    description: Send a file to the customer.
    parameters:
      type: object
      properties:
        name: {type: string}
        note: {type: string}
      required: [name]
    command: ["sh", "-c", "cat >/dev/null; echo sent"]
    approval: always
    confirmation: "Send {{.name}} to the customer?"
agents:
  liar: {model: demo, tools: [send_file]}
  concierge:
    model: demo
    subagents: [{agent: writer, tool: use_writer, mode: interactive}]
  writer: {model: demo}
`
}

// The page cannot be made to lie: a right-to-left override shows as a
// marker in the inbox card and on the session page, a 100,000-character
// argument is folded behind "expand" (the page stays a page tall, and
// expanding shows it whole), nothing overflows sideways, and a nested
// session page draws its frames indented with no CSP violation.
func TestBrowserPageCannotBeMadeToLie(t *testing.T) {
	ctx := browser(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cairn.yaml"), []byte(lyingConfig()), 0o600); err != nil {
		t.Fatal(err)
	}
	_, base := serve(t, filepath.Join(dir, "cairn.yaml"))
	status, liar := post(t, base+"/v1/sessions", `{"agent":"liar","input":"send the photo"}`)
	if status != 201 || liar["status"] != "paused" {
		t.Fatalf("start liar: %d %v", status, liar)
	}
	status, nested := post(t, base+"/v1/sessions", `{"agent":"concierge","input":"notes please"}`)
	if status != 201 || nested["status"] != "paused" {
		t.Fatalf("start concierge: %d %v", status, nested)
	}
	liarID, nestedID := liar["id"].(string), nested["id"].(string)

	step := stepper(t, ctx)
	// Every CSP violation of every page load is counted.
	step("count CSP violations", chromedp.ActionFunc(func(ctx context.Context) error {
		_, err := page.AddScriptToEvaluateOnNewDocument(`window.__csp = [];
			document.addEventListener('securitypolicyviolation', (e) => window.__csp.push(e.violatedDirective));`).Do(ctx)
		return err
	}))

	// The inbox card.
	card := item(liarID)
	var msg, body string
	var hasOverride bool
	var cardHeight, overflow float64
	step("the inbox card", chromedp.Navigate(base+"/"), chromedp.WaitVisible(card+" pre.args button.expand", chromedp.ByQuery),
		chromedp.Text(card+" .msg", &msg, chromedp.ByQuery),
		chromedp.Text(card+" pre.args", &body, chromedp.ByQuery),
		chromedp.Evaluate(`document.body.innerText.includes('\u202e')`, &hasOverride),
		chromedp.Evaluate(`document.querySelector('`+card+`').getBoundingClientRect().height`, &cardHeight),
		chromedp.Evaluate(`document.documentElement.scrollWidth - document.documentElement.clientWidth`, &overflow))
	if msg != "Send ⟨U+202E⟩gpj.exe to the customer?" || !strings.Contains(body, `"name":"⟨U+202E⟩gpj.exe"`) || hasOverride {
		t.Fatalf("the card shows %q, arguments %.60q…; the override is in the page: %v", msg, body, hasOverride)
	}
	if cardHeight > 1000 || overflow > 0 || !strings.Contains(body, "expand (the whole value)") {
		t.Fatalf("folded card: %.0f px tall, %.0f px too wide, arguments end %q", cardHeight, overflow, body[len(body)-60:])
	}
	var expanded int
	step("expand the arguments", chromedp.Click(card+" pre.args button.expand", chromedp.ByQuery),
		chromedp.WaitNotPresent(card+" pre.args button.expand", chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelector('`+card+` pre.args').innerText.length`, &expanded))
	if expanded < 100_000 {
		t.Fatalf("expanded arguments: %d characters, want them whole", expanded)
	}

	// The session page: the call in the timeline and in the pending card.
	var height float64
	var csp []string
	step("the session page", chromedp.Navigate("about:blank"), chromedp.Navigate(base+"/#/sessions/"+liarID),
		chromedp.WaitVisible(`#timeline .row`, chromedp.ByQuery), chromedp.WaitVisible(`#pending article.item`, chromedp.ByQuery),
		chromedp.Evaluate(`document.body.innerText.includes('\u202e')`, &hasOverride),
		chromedp.Evaluate(`document.documentElement.scrollHeight`, &height),
		chromedp.Evaluate(`document.documentElement.scrollWidth - document.documentElement.clientWidth`, &overflow),
		chromedp.Text(`#timeline`, &body, chromedp.ByQuery))
	if hasOverride || !strings.Contains(body, `"name":"⟨U+202E⟩gpj.exe"`) || height > 4000 || overflow > 0 {
		t.Fatalf("session page: override shown raw %v, %.0f px tall, %.0f px too wide; timeline %.300q", hasOverride, height, overflow, body)
	}

	// A nested session: frames indented by class, and no CSP violation.
	var indents []float64
	step("the nested session page", chromedp.Navigate("about:blank"), chromedp.Navigate(base+"/#/sessions/"+nestedID),
		chromedp.WaitVisible(`#timeline .row.depth-1`, chromedp.ByQuery),
		chromedp.Evaluate(`[...document.querySelectorAll('#timeline .row')].map((r) => parseFloat(getComputedStyle(r).paddingLeft))`, &indents),
		chromedp.Evaluate(`window.__csp`, &csp))
	if len(csp) != 0 {
		t.Fatalf("CSP violations on the nested session page: %q", csp)
	}
	// The sub-agent's rows are indented past the root's (the timeline ends
	// with the root's pause, at the root's depth).
	if len(indents) < 2 || indents[0] >= slices.Max(indents) {
		t.Fatalf("frame indents (px) = %v: the sub-agent's rows are not indented", indents)
	}
}

// The terminal cannot be made to lie either: cairn chat's approval prompt
// and cairn sessions show print the override as a marker, never the
// character itself, and the prompt does not print 100,000 characters.
func TestTerminalShowsHiddenCharacters(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "cairn.yaml")
	if err := os.WriteFile(cfg, []byte(lyingConfig()), 0o600); err != nil {
		t.Fatal(err)
	}
	chat := exec.Command(binary, "chat", "--config", cfg, "--agent", "liar")
	chat.Dir = dir
	chat.Stdin = strings.NewReader("send the photo\nn\nnot that file\n")
	out, err := chat.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "approve? Send ⟨U+202E⟩gpj.exe to the customer?") || strings.ContainsRune(string(out), '\u202e') {
		t.Fatalf("chat: %v\n%.2000s", err, out)
	}

	_, base := serve(t, cfg)
	_, s := post(t, base+"/v1/sessions", `{"agent":"liar","input":"send the photo"}`)
	show, err := exec.Command(binary, "sessions", "--server", base, "show", s["id"].(string)).CombinedOutput()
	if err != nil || !strings.Contains(string(show), "Send ⟨U+202E⟩gpj.exe to the customer?") || strings.ContainsRune(string(show), '\u202e') || len(show) > 20_000 {
		t.Fatalf("sessions show: %v, %d bytes\n%.3000s", err, len(show), show)
	}
}
