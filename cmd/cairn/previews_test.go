package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cairnhq/cairn/internal/testkit/hooktest"
	"github.com/cairnhq/cairn/webhook"
)

// previewConfig: an approval-gated file write whose preview command prints
// a diff ending in the call's arguments and counts its runs in
// previews.log, and an approval-gated plan whose preview never ends (cut
// at 300ms). Webhooks with action links, behind a balancer.
const previewConfig = `
store: sqlite:./cairn.db
lease: 3s
public_url: %s
auth:
  tokens:
    - {name: ana, token_env: CAIRN_TEST_APPROVER, role: approver}
    - {name: uma, token_env: CAIRN_TEST_USER, role: user}
webhooks:
  - {name: test-receiver, url: "%s", secret_env: CAIRN_TEST_WEBHOOK_SECRET, timeout: 3s}
models:
  demo:
    provider: scripted
    script:
      - tool_calls:
          - {name: write_file, arguments: {path: notes.txt, text: hello}}
          - {name: apply_plan, arguments: {}}
      - text: "done"
tools:
  write_file:
    parameters: {type: object, properties: {path: {type: string}, text: {type: string}}, required: [path, text]}
    command: ["sh", "-c", "cat >> runs.log; echo >> runs.log; echo written"]
    approval: always
    preview:
      command: ["sh", "-c", "echo run >> previews.log; printf -- '--- a/notes.txt\n+++ b/notes.txt\n@@ -1 +1 @@\n-old\n+'; cat; echo"]
      format: diff
  apply_plan:
    command: ["sh", "-c", "echo applied"]
    approval: always
    preview: {command: ["sleep", "30"], timeout: 300ms}
agents:
  main: {model: demo, tools: [write_file, apply_plan]}
`

// A preview command's output at every door of cairn serve: computed once
// before the pause (the command counts its runs), shown the same by a
// second replica and after a kill -9 and restart without running again;
// a preview that hangs is cut at its timeout and the decision goes
// through; the preview endpoint refuses invalid arguments and records
// nothing; the webhook, the action-link page and the web page (inbox,
// session page, the editor's preview of edited arguments) show it.
func TestPreviewsAtEveryDoorOfServe(t *testing.T) {
	t.Setenv("CAIRN_TEST_WEBHOOK_SECRET", webhookSecret)
	t.Setenv("CAIRN_TEST_APPROVER", approverToken)
	t.Setenv("CAIRN_TEST_USER", userToken)
	rc := hooktest.New(t, webhookSecret)
	lb := &balancer{}
	front := httptest.NewServer(lb)
	defer front.Close()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "cairn.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(previewConfig, front.URL, rc.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	lines := func(name string) int {
		b, _ := os.ReadFile(filepath.Join(dir, name))
		return strings.Count(string(b), "\n")
	}
	a, aURL := serve(t, cfg)
	_, bURL := serve(t, cfg)
	lb.to(bURL)

	code, s := apiCall(t, "POST", aURL+"/v1/sessions", userToken, `{"agent":"main","input":"write the notes"}`)
	if code != 201 || s["status"] != "paused" {
		t.Fatalf("create: %d %v", code, s)
	}
	id, seq := s["id"].(string), s["seq"]
	ins := s["interrupts"].([]any)
	write, plan := ins[0].(map[string]any), ins[1].(map[string]any)
	diff, _ := write["preview"].(map[string]any)
	if diff == nil || diff["format"] != "diff" || !strings.Contains(fmt.Sprint(diff["content"]), "-old\n+{\"path\":\"notes.txt\",\"text\":\"hello\"}") {
		t.Fatalf("write_file's preview: %v", write["preview"])
	}
	if p, _ := plan["preview"].(map[string]any); p == nil || !strings.Contains(fmt.Sprint(p["error"]), "timed out after 300ms") {
		t.Fatalf("apply_plan's preview (its command hangs): %v", plan["preview"])
	}
	if n := lines("previews.log"); n != 1 {
		t.Fatalf("the preview command ran %d times before the pause, want 1", n)
	}

	// A second replica and a restarted one show the stored preview.
	same := func(url, who string) {
		t.Helper()
		_, got := apiCall(t, "GET", url+"/v1/sessions/"+id, approverToken, "")
		p, _ := got["interrupts"].([]any)[0].(map[string]any)["preview"].(map[string]any)
		if p == nil || p["content"] != diff["content"] {
			t.Fatalf("%s shows preview %v, want the stored one", who, p)
		}
	}
	same(bURL, "the second replica")
	a.Process.Kill() // kill -9
	a.Wait()
	_, aURL = serve(t, cfg)
	same(aURL, "the restarted replica")
	if n := lines("previews.log"); n != 1 {
		t.Fatalf("reading the session ran the preview again (%d runs)", n)
	}

	// The preview of edited arguments: checked as a decision's, recorded nowhere.
	previewURL := bURL + "/v1/sessions/" + id + "/interrupts/" + write["id"].(string) + "/preview"
	if code, got := apiCall(t, "POST", previewURL, approverToken, `{"arguments":{"path":5,"text":"x"}}`); code != 400 || got["error"].(map[string]any)["code"] != "invalid_arguments" {
		t.Fatalf("preview of invalid arguments: %d %v", code, got)
	}
	if code, got := apiCall(t, "POST", previewURL, approverToken, `{"arguments":{"path":"notes.txt","text":"edited"}}`); code != 200 || !strings.Contains(fmt.Sprint(got["content"]), `+{"path":"notes.txt","text":"edited"}`) {
		t.Fatalf("preview of edited arguments: %d %v", code, got)
	}
	if _, got := apiCall(t, "GET", bURL+"/v1/sessions/"+id, approverToken, ""); got["seq"] != seq || got["status"] != "paused" {
		t.Fatalf("previews changed the session: seq %v (was %v), %v", got["seq"], seq, got["status"])
	}

	// The webhook carries it; the action-link page draws the diff.
	rc.WaitFor(webhook.InterruptCreated, 2, 30*time.Second)
	var link string
	for _, p := range rc.Payloads(webhook.InterruptCreated) {
		if in := p.Data.Interrupt; p.Data.SessionID == id && in.Tool == "write_file" {
			if in.Preview == nil || !strings.Contains(in.Preview.Text(), "+{\"path\":\"notes.txt\"") {
				t.Fatalf("interrupt.created's preview: %+v", in.Preview)
			}
			link = p.Data.Actions.Approve
		}
	}
	resp, err := http.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(page), `<span class="del">-old</span><span class="add">&#43;{&#34;path&#34;:&#34;notes.txt&#34;,&#34;text&#34;:&#34;hello&#34;}</span>`) {
		t.Fatalf("the action-link page (%d) does not draw the diff:\n%s", resp.StatusCode, page)
	}

	// The web page: the inbox card and the session page draw the diff and
	// the failed preview; the editor previews edited arguments.
	ctx := browser(t)
	step := stepper(t, ctx)
	card := `article.item[data-key="` + id + "/" + write["id"].(string) + `"]`
	var added, failed, edited string
	step("the inbox draws the preview", signIn(bURL, approverToken),
		chromedp.WaitVisible(card+" .preview-diff span.add", chromedp.ByQuery),
		chromedp.TextContent(card+" .preview-diff span.add", &added, chromedp.ByQuery),
		chromedp.TextContent(`article.item[data-key="`+id+"/"+plan["id"].(string)+`"] .preview-error`, &failed, chromedp.ByQuery))
	if added != `+{"path":"notes.txt","text":"hello"}` || !strings.Contains(failed, "timed out after 300ms") {
		t.Fatalf("inbox: added line %q, failed preview %q", added, failed)
	}
	step("the editor previews edited arguments", chromedp.Click(card+" button.edit", chromedp.ByQuery),
		chromedp.SetValue(card+` input[name="text"]`, "from the page", chromedp.ByQuery),
		chromedp.Click(card+" button.preview-edit", chromedp.ByQuery),
		chromedp.WaitVisible(card+" .edited-preview .preview-diff span.add", chromedp.ByQuery),
		chromedp.TextContent(card+" .edited-preview .preview-diff span.add", &edited, chromedp.ByQuery))
	if edited != `+{"path":"notes.txt","text":"from the page"}` {
		t.Fatalf("the editor's preview: %q", edited)
	}
	step("the session page draws it", chromedp.Navigate(bURL+"/#/sessions/"+id),
		chromedp.WaitVisible(`#pending .preview-diff span.add`, chromedp.ByQuery),
		chromedp.TextContent(`#pending .preview-diff span.add`, &added, chromedp.ByQuery))
	if added != `+{"path":"notes.txt","text":"hello"}` {
		t.Fatalf("session page: %q", added)
	}

	// Deciding goes through (the hung preview held nothing); each tool runs once.
	code, done := apiCall(t, "POST", aURL+"/v1/sessions/"+id+"/decisions", approverToken, fmt.Sprintf(
		`{"seq":%v,"decisions":[{"interrupt_id":%q,"action":"approve"},{"interrupt_id":%q,"action":"approve"}]}`, seq, write["id"], plan["id"]))
	if code != 200 || done["status"] != "completed" || lines("runs.log") != 1 || lines("previews.log") != 3 { // the pause, the REST edit, the page's edit
		t.Fatalf("approve: %d %v; runs %d, previews %d", code, done["status"], lines("runs.log"), lines("previews.log"))
	}
}
