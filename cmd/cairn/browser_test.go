package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/testkit/testwait"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// browserConfig: a deploy tool whose replicas the server bounds (so an
// edit can be refused by the server, not the page), a question, an
// interactive sub-agent and a handoff, all on the scripted model; tokens
// for an approver and a user. The deploy tool appends its arguments to
// runs.log, so the test sees what ran and how often.
const browserConfig = `
store: sqlite:./cairn.db
auth:
  tokens:
    - {name: ana, token_env: CAIRN_TEST_APPROVER, role: approver}
    - {name: uma, token_env: CAIRN_TEST_USER, role: user}
models:
  demo:
    provider: scripted
    scripts:
      ops:
        - tool_calls: [{name: deploy, arguments: {environment: production, replicas: 2}}]
        - text: "{{.LastResult}}"
        - tool_calls: [{name: deploy, arguments: {environment: production, replicas: 2}}]
        - text: "{{.LastResult}}"
      asker:
        - tool_calls: [{name: ask_user, arguments: {question: "Which environment?"}}]
        - text: "You said {{.LastResult}}."
      concierge:
        - tool_calls: [{name: use_writer, arguments: {input: "release notes"}}]
        - text: "Notes: {{.LastResult}}"
      writer:
        - text: "Who are the notes for?"
        - tool_calls: [{name: complete, arguments: {result: "notes for customers"}}]
tools:
  deploy:
    description: Deploy the build.
    parameters:
      type: object
      properties:
        environment: {type: string, enum: [staging, production], description: where to}
        replicas: {type: integer, minimum: 1, maximum: 10}
      required: [environment, replicas]
    command: ["sh", "-c", "cat >> runs.log; echo >> runs.log; echo deployed"]
    approval: always
    confirmation: "Deploy {{.replicas}} replicas to {{.environment}}?"
  ask_user: {builtin: ask_user}
agents:
  ops: {model: demo, tools: [deploy]}
  asker: {model: demo, tools: [ask_user]}
  concierge:
    model: demo
    subagents: [{agent: writer, tool: use_writer, mode: interactive}]
  writer: {model: demo}
`

const (
	approverToken = "approver-token-0123456789abcdef"
	userToken     = "user-token-0123456789abcdef"
)

// browser starts headless Chromium, or skips the test when it is missing.
func browser(t *testing.T) context.Context {
	t.Helper()
	return browserWith(t)
}

// browserWith starts headless Chromium with extra command-line flags.
func browserWith(t *testing.T, flags ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		if _, err := os.Stat("/usr/bin/chromium"); err != nil {
			t.Skip("headless Chromium is not installed: apt-get install chromium (Debian's chromium package); .ci/run installs it")
		}
		path = "/usr/bin/chromium"
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.WindowSize(1280, 900))
	opts = append(opts, flags...)
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancel2 := chromedp.NewContext(actx)
	t.Cleanup(cancel2)
	// A guard against a hang, not a measure: a whole flow takes 2–3 s on
	// an idle machine, and many times that beside a second test suite.
	ctx, cancel3 := context.WithTimeout(ctx, 5*time.Minute)
	t.Cleanup(cancel3)
	if err := chromedp.Run(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

func apiCall(t *testing.T, method, url, token, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, v
}

// waitSession polls the API until the session reaches status.
func waitSession(t *testing.T, base, id, status string) map[string]any {
	t.Helper()
	var s map[string]any
	testwait.For(t, 20*time.Second, "session "+id+" to be "+status, func() bool {
		_, s = apiCall(t, "GET", base+"/v1/sessions/"+id, approverToken, "")
		return s["status"] == status
	})
	return s
}

// browserServer runs cairn serve on browserConfig in a new directory.
func browserServer(t *testing.T) (dir, base string) {
	t.Helper()
	dir = t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cairn.yaml"), []byte(browserConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CAIRN_TEST_APPROVER", approverToken)
	t.Setenv("CAIRN_TEST_USER", userToken)
	_, base = serve(t, filepath.Join(dir, "cairn.yaml"))
	return dir, base
}

// signIn opens the page and signs in with token.
func signIn(base, token string) chromedp.Tasks {
	return chromedp.Tasks{chromedp.Navigate(base + "/"), chromedp.WaitVisible("#token", chromedp.ByID),
		chromedp.SendKeys("#token", token, chromedp.ByID), chromedp.Click("#login button[type=submit]", chromedp.ByQuery)}
}

// stepper returns a function that runs chromedp actions, each call at
// most a minute, and fails the test naming what did not happen.
func stepper(t *testing.T, ctx context.Context) func(what string, actions ...chromedp.Action) {
	return func(what string, actions ...chromedp.Action) {
		t.Helper()
		sctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if err := chromedp.Run(sctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
}

// item is the inbox card of session id.
func item(id string) string { return `article.item[data-session="` + id + `"]` }

// The whole human flow in a real browser against a real `cairn serve`.
func TestBrowserInbox(t *testing.T) {
	ctx := browser(t)
	dir, base := browserServer(t)
	runs := func() []string {
		b, _ := os.ReadFile(filepath.Join(dir, "runs.log"))
		return strings.Fields(string(b))
	}
	shots := os.Getenv("CAIRN_SCREENSHOTS") // a directory: write the docs' screenshots there
	shot := func(name string) chromedp.Action {
		return chromedp.ActionFunc(func(ctx context.Context) error {
			if shots == "" {
				return nil
			}
			var b []byte
			if err := chromedp.FullScreenshot(&b, 100).Do(ctx); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(shots, name), b, 0o644)
		})
	}
	// Each step waits for its condition at most a minute, so a step that
	// never gets there is named, with the page as it stands.
	run := func(what string, actions ...chromedp.Action) {
		t.Helper()
		sctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if err := chromedp.Run(sctx, actions...); err != nil {
			var html string
			dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			_ = chromedp.Run(dctx, chromedp.OuterHTML("main", &html)) // for the failure message only
			t.Fatalf("%s: %v\npage: %s", what, err, html)
		}
	}

	// Sign in; the inbox is empty.
	run("sign in", signIn(base, approverToken),
		chromedp.WaitVisible("#inbox-empty", chromedp.ByID))

	// A pause appears without a reload.
	_, s := apiCall(t, "POST", base+"/v1/sessions", userToken, `{"agent":"ops","input":"ship it"}`)
	ops := s["id"].(string)
	var title string
	run("pause appears", chromedp.WaitVisible(item(ops), chromedp.ByQuery), chromedp.Title(&title))
	if !strings.HasPrefix(title, "(1) Cairn") {
		t.Fatalf("title %q", title)
	}
	var text string
	run("item text", chromedp.TextContent(item(ops), &text, chromedp.ByQuery))
	// The approver's context: the request, what the tool is, what approving runs.
	for _, want := range []string{"Deploy 2 replicas to production?", `"replicas": 2`, "ops", "deploy", "The request: ship it",
		"deploy: Deploy the build.", "Approving runs the command sh -c 'cat >> runs.log; echo >> runs.log; echo deployed'"} {
		if !strings.Contains(text, want) {
			t.Fatalf("inbox item lacks %q:\n%s", want, text)
		}
	}
	run("shot inbox", shot("inbox.png"))

	// Edit: the server refuses 50 replicas, next to the field; nothing runs.
	run("open editor", chromedp.Click(item(ops)+" button.edit", chromedp.ByQuery), chromedp.WaitVisible(item(ops)+" form.edit", chromedp.ByQuery),
		chromedp.SetValue(item(ops)+` select[name="environment"]`, `"staging"`, chromedp.ByQuery),
		chromedp.SetValue(item(ops)+` input[name="replicas"]`, "50", chromedp.ByQuery),
		chromedp.Click(item(ops)+" form.edit button[type=submit]", chromedp.ByQuery),
		chromedp.WaitVisible(item(ops)+` .field-error[data-field="replicas"]:not(:empty)`, chromedp.ByQuery),
		chromedp.TextContent(item(ops)+` .field-error[data-field="replicas"]`, &text, chromedp.ByQuery))
	if !strings.Contains(text, "replicas") || len(runs()) != 0 {
		t.Fatalf("server error at the field: %q; runs %v", text, runs())
	}
	run("shot editor", shot("edit-form.png"))
	// Fix it; approve; the session completes with the edited arguments, once.
	run("fix and approve", chromedp.SetValue(item(ops)+` input[name="replicas"]`, "3", chromedp.ByQuery),
		chromedp.Click(item(ops)+" form.edit button[type=submit]", chromedp.ByQuery),
		chromedp.WaitNotPresent(item(ops), chromedp.ByQuery))
	done := waitSession(t, base, ops, "completed")
	if got := runs(); len(got) != 1 || got[0] != `{"environment":"staging","replicas":3}` {
		t.Fatalf("runs = %v", got)
	}
	if !strings.Contains(done["output"].(string), `it ran with {"environment":"staging","replicas":3}`) {
		t.Fatalf("output %q", done["output"])
	}

	// Reject with a reason the model sees (next turn of the same script).
	apiCall(t, "POST", base+"/v1/sessions/"+ops+"/messages", userToken, `{"text":"again"}`)
	run("reject", chromedp.WaitVisible(item(ops), chromedp.ByQuery),
		chromedp.SendKeys(item(ops)+" input.reason", "not on a Friday", chromedp.ByQuery),
		chromedp.Click(item(ops)+" button.reject", chromedp.ByQuery), chromedp.WaitNotPresent(item(ops), chromedp.ByQuery))
	if out := waitSession(t, base, ops, "completed")["output"]; out != "The user rejected this tool call: not on a Friday" || len(runs()) != 1 {
		t.Fatalf("after reject: %q, runs %v", out, runs())
	}

	// Answer a question.
	_, s = apiCall(t, "POST", base+"/v1/sessions", approverToken, `{"agent":"asker","input":"deploy"}`)
	asker := s["id"].(string)
	run("answer", chromedp.WaitVisible(item(asker)+` input.answer`, chromedp.ByQuery),
		chromedp.SendKeys(item(asker)+" input.answer", "staging", chromedp.ByQuery),
		chromedp.Click(item(asker)+" button.primary", chromedp.ByQuery), chromedp.WaitNotPresent(item(asker), chromedp.ByQuery))
	if out := waitSession(t, base, asker, "completed")["output"]; out != "You said staging." {
		t.Fatalf("answer: %q", out)
	}

	// Talk to an interactive sub-agent until it completes.
	_, s = apiCall(t, "POST", base+"/v1/sessions", approverToken, `{"agent":"concierge","input":"write notes"}`)
	conc := s["id"].(string)
	run("reply", chromedp.WaitVisible(item(conc)+` input.reply`, chromedp.ByQuery),
		chromedp.TextContent(item(conc), &text, chromedp.ByQuery),
		chromedp.SendKeys(item(conc)+" input.reply", "customers", chromedp.ByQuery),
		chromedp.Click(item(conc)+" button.primary", chromedp.ByQuery), chromedp.WaitNotPresent(item(conc), chromedp.ByQuery))
	if !strings.Contains(text, "Who are the notes for?") || !strings.Contains(text, "concierge › use_writer") {
		t.Fatalf("message item: %q", text)
	}
	if out := waitSession(t, base, conc, "completed")["output"]; out != "Notes: notes for customers" {
		t.Fatalf("interactive: %q", out)
	}

	// A decision made elsewhere removes the item live.
	_, s = apiCall(t, "POST", base+"/v1/sessions", approverToken, `{"agent":"ops","input":"ship"}`)
	other := s["id"].(string)
	run("another pause", chromedp.WaitVisible(item(other), chromedp.ByQuery))
	in := s["interrupts"].([]any)[0].(map[string]any)
	code, _ := apiCall(t, "POST", base+"/v1/sessions/"+other+"/decisions", approverToken,
		fmt.Sprintf(`{"seq":%v,"decisions":[{"interrupt_id":%q,"action":"reject","reason":"decided by curl"}]}`, s["seq"], in["id"]))
	if code != 200 {
		t.Fatalf("decide over the API: %d", code)
	}
	run("removed live", chromedp.WaitNotPresent(item(other), chromedp.ByQuery))

	// The session page: conversation, audit trail with the edited arguments.
	run("session page", chromedp.Navigate(base+"/#/sessions/"+ops), chromedp.WaitVisible("#audit tr:nth-child(2)", chromedp.ByQuery),
		chromedp.Text("#audit", &text, chromedp.ByQuery))
	for _, want := range []string{"ana (approver)", "approve deploy", `"replicas": 3`, "not on a Friday"} {
		if !strings.Contains(text, want) {
			t.Fatalf("audit trail lacks %q:\n%s", want, text)
		}
	}
	// What the record proves, beside the trail: chained and signed.
	run("record", chromedp.WaitVisible(`#record.muted`, chromedp.ByQuery), chromedp.Text("#record", &text, chromedp.ByQuery))
	if !regexp.MustCompile(`^Record: verified up to seq \d+; signed checkpoint at seq \d+, .* UTC by key k[0-9a-f]{16}$`).MatchString(text) {
		t.Fatalf("the record line: %q", text)
	}
	run("conversation", chromedp.Text("#timeline", &text, chromedp.ByQuery))
	if !strings.Contains(text, "ana approved deploy") || !strings.Contains(text, "ana rejected deploy") || strings.Contains(text, "someone") {
		t.Fatalf("the conversation's decisions:\n%s", text)
	}
	run("shot session", shot("session.png"))

	// A user token sees no decide buttons.
	_, s = apiCall(t, "POST", base+"/v1/sessions", userToken, `{"agent":"ops","input":"ship"}`)
	mine := s["id"].(string)
	var buttons int
	run("user view", chromedp.Evaluate(`sessionStorage.setItem('cairn.token', '`+userToken+`')`, nil),
		chromedp.Navigate(base+"/#/inbox"), chromedp.Reload(), chromedp.WaitVisible(item(mine), chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelectorAll('button.approve, button.reject, button.edit').length`, &buttons),
		chromedp.TextContent(item(mine), &text, chromedp.ByQuery))
	if buttons != 0 || !strings.Contains(text, "An approver decides this.") {
		t.Fatalf("user view: %d decide buttons; %q", buttons, text)
	}
}

// The page, the CLI and the API make the same decision: three sessions
// approved with the same edited arguments, one per way (the page by
// keyboard: e opens the editor), record the same decision event, actor
// and digests included.
func TestPageCLIAndAPIAgree(t *testing.T) {
	ctx := browser(t)
	_, base := browserServer(t)
	start := func() (string, map[string]any) {
		_, s := apiCall(t, "POST", base+"/v1/sessions", approverToken, `{"agent":"ops","input":"ship it"}`)
		return s["id"].(string), s["interrupts"].([]any)[0].(map[string]any)
	}
	edited := `{"environment":"staging","replicas":3}`

	viaPage, _ := start()
	err := chromedp.Run(ctx, signIn(base, approverToken),
		chromedp.WaitVisible(item(viaPage), chromedp.ByQuery),
		chromedp.Focus(item(viaPage), chromedp.ByQuery), chromedp.KeyEvent("e"),
		chromedp.WaitVisible(item(viaPage)+" form.edit", chromedp.ByQuery),
		chromedp.SetValue(item(viaPage)+` select[name="environment"]`, `"staging"`, chromedp.ByQuery),
		chromedp.SetValue(item(viaPage)+` input[name="replicas"]`, "3", chromedp.ByQuery),
		chromedp.Click(item(viaPage)+" form.edit button[type=submit]", chromedp.ByQuery),
		chromedp.WaitNotPresent(item(viaPage), chromedp.ByQuery))
	if err != nil {
		t.Fatalf("page: %v", err)
	}

	viaCLI, _ := start()
	if out, err := exec.Command(binary, "sessions", "--server", base, "--token", approverToken, "approve", viaCLI, "--args", edited).CombinedOutput(); err != nil {
		t.Fatalf("cli: %v\n%s", err, out)
	}

	viaAPI, in := start()
	_, s := apiCall(t, "GET", base+"/v1/sessions/"+viaAPI, approverToken, "")
	if code, _ := apiCall(t, "POST", base+"/v1/sessions/"+viaAPI+"/decisions", approverToken,
		fmt.Sprintf(`{"seq":%v,"decisions":[{"interrupt_id":%q,"action":"approve","arguments":%s}]}`, s["seq"], in["id"], edited)); code != 200 {
		t.Fatalf("api: %d", code)
	}

	decision := func(id string) string {
		t.Helper()
		waitSession(t, base, id, "completed")
		_, evs := apiCall(t, "GET", base+"/v1/sessions/"+id+"/events", approverToken, "")
		for _, e := range evs["events"].([]any) {
			ev := e.(map[string]any)
			if ev["type"] == "decision" {
				d := ev["data"].(map[string]any)
				delete(d, "interrupt_id") // derived from the session id
				delete(d, "asked_at")     // when this session paused
				b, _ := json.Marshal(d)
				return string(b)
			}
		}
		t.Fatalf("session %s has no decision", id)
		return ""
	}
	page, cli, api := decision(viaPage), decision(viaCLI), decision(viaAPI)
	if page != cli || cli != api || !strings.Contains(page, `"name":"ana","role":"approver"`) || !strings.Contains(page, `"new_arguments":`+edited) {
		t.Fatalf("the three ways disagree:\npage %s\ncli  %s\napi  %s", page, cli, api)
	}
}

// Filters narrow the inbox by kind, agent and tool; the title counts all.
func TestBrowserFilters(t *testing.T) {
	ctx := browser(t)
	_, base := browserServer(t)
	_, ops := apiCall(t, "POST", base+"/v1/sessions", approverToken, `{"agent":"ops","input":"ship it"}`)
	_, ask := apiCall(t, "POST", base+"/v1/sessions", approverToken, `{"agent":"asker","input":"deploy"}`)
	_, conc := apiCall(t, "POST", base+"/v1/sessions", approverToken, `{"agent":"concierge","input":"notes"}`)
	count := func(n *int) chromedp.Action {
		return chromedp.Evaluate(`document.querySelectorAll('#inbox article.item').length`, n)
	}
	var all, questions, writer, deploys int
	var title string
	err := chromedp.Run(ctx, signIn(base, approverToken),
		chromedp.WaitVisible(item(ops["id"].(string)), chromedp.ByQuery), chromedp.WaitVisible(item(ask["id"].(string)), chromedp.ByQuery),
		chromedp.WaitVisible(item(conc["id"].(string)), chromedp.ByQuery), count(&all), chromedp.Title(&title),
		chromedp.SetValue("#filter-kind", "input", chromedp.ByID), chromedp.Evaluate(`document.getElementById('filter-kind').dispatchEvent(new Event('change'))`, nil), count(&questions),
		chromedp.SetValue("#filter-kind", "", chromedp.ByID), chromedp.SetValue("#filter-agent", "writer", chromedp.ByID),
		chromedp.Evaluate(`document.getElementById('filter-agent').dispatchEvent(new Event('change'))`, nil), count(&writer),
		chromedp.SetValue("#filter-agent", "", chromedp.ByID), chromedp.SetValue("#filter-tool", "deploy", chromedp.ByID),
		chromedp.Evaluate(`document.getElementById('filter-tool').dispatchEvent(new Event('change'))`, nil), count(&deploys))
	if err != nil {
		t.Fatal(err)
	}
	if all != 3 || questions != 1 || writer != 1 || deploys != 1 || !strings.HasPrefix(title, "(3) Cairn") {
		t.Fatalf("all %d, questions %d, writer %d, deploys %d, title %q", all, questions, writer, deploys, title)
	}
}

// A state of a session older than one the inbox has seen does not undo it.
// A decision's answer (the turn it started, completed) can reach the page
// after the feed's news of the session's next pause; applied last, it
// removed the new card for good (TestBrowserInbox hung at "reject" under
// load). The page here gets that late answer by hand.
func TestBrowserInboxKeepsTheNewestState(t *testing.T) {
	ctx := browser(t)
	_, base := browserServer(t)
	_, s := apiCall(t, "POST", base+"/v1/sessions", approverToken, `{"agent":"ops","input":"ship it"}`)
	id := s["id"].(string)
	in := s["interrupts"].([]any)[0].(map[string]any)
	_, done := apiCall(t, "POST", base+"/v1/sessions/"+id+"/decisions", approverToken,
		fmt.Sprintf(`{"seq":%v,"decisions":[{"interrupt_id":%q,"action":"approve"}]}`, s["seq"], in["id"]))
	if done["status"] != "completed" {
		t.Fatalf("approve: %v", done)
	}
	_, again := apiCall(t, "POST", base+"/v1/sessions/"+id+"/messages", approverToken, `{"text":"again"}`)
	if again["status"] != "paused" {
		t.Fatalf("again: %v", again)
	}
	late, _ := json.Marshal(done)
	var shown int
	err := chromedp.Run(ctx, signIn(base, approverToken),
		chromedp.WaitVisible(item(id), chromedp.ByQuery),
		chromedp.Evaluate(`sessionChanged(`+string(late)+`)`, nil),
		chromedp.Evaluate(`document.querySelectorAll('`+item(id)+`').length`, &shown))
	if err != nil {
		t.Fatal(err)
	}
	if shown != 1 {
		t.Fatal("the late answer of the earlier decision removed the session's new pause from the inbox")
	}
}

// The session page speaks people's words: an interactive sub-agent's
// message once, "writer finished" rather than a frame id; the Send box
// says why it waits while a decision is pending; the page has an icon.
func TestBrowserSessionPageInPeoplesWords(t *testing.T) {
	ctx := browser(t)
	_, base := browserServer(t)
	run := stepper(t, ctx)
	shots := os.Getenv("CAIRN_SCREENSHOTS")

	_, s := apiCall(t, "POST", base+"/v1/sessions", approverToken, `{"agent":"concierge","input":"write notes"}`)
	conc := s["id"].(string)
	var text, placeholder string
	var disabled bool
	run("open the session", signIn(base, approverToken), chromedp.WaitVisible("#inbox", chromedp.ByID),
		chromedp.Navigate(base+"/#/sessions/"+conc), chromedp.WaitVisible("#timeline .row", chromedp.ByQuery),
		chromedp.Text("#timeline", &text, chromedp.ByQuery),
		chromedp.AttributeValue("#message", "placeholder", &placeholder, nil, chromedp.ByQuery),
		chromedp.Evaluate(`document.getElementById('send').disabled`, &disabled))
	if n := strings.Count(text, "Who are the notes for?"); n != 1 || placeholder != "your reply to writer" || disabled {
		t.Fatalf("the writer's question shows %d times; the box says %q, disabled %v:\n%s", n, placeholder, disabled, text)
	}
	run("reply", chromedp.SendKeys("#message", "customers", chromedp.ByID), chromedp.Click("#send", chromedp.ByID),
		chromedp.WaitVisible(`#session-status.status-completed`, chromedp.ByQuery),
		chromedp.WaitVisible(`//div[@id="timeline"]//span[contains(., "writer finished")]`, chromedp.BySearch),
		chromedp.Text("#timeline", &text, chromedp.ByQuery))
	if !strings.Contains(text, "writer finished: notes for customers") || regexp.MustCompile(`\bframe\b|\bf\d+\b`).MatchString(text) {
		t.Fatalf("the conversation after the writer:\n%s", text)
	}

	_, s = apiCall(t, "POST", base+"/v1/sessions", approverToken, `{"agent":"ops","input":"ship it"}`)
	ops := s["id"].(string)
	run("a pending approval", chromedp.Navigate(base+"/#/sessions/"+ops), chromedp.WaitVisible("#pending "+item(ops), chromedp.ByQuery),
		chromedp.Evaluate(`document.getElementById('send').disabled && document.getElementById('message').disabled`, &disabled),
		chromedp.Text("#send-note", &text, chromedp.ByQuery))
	if !disabled || text != "Decide what waits above first; then you can write again." {
		t.Fatalf("with an approval pending, Send is disabled %v and says %q", disabled, text)
	}
	if shots != "" {
		var b []byte
		run("shot", chromedp.Evaluate(`document.activeElement.blur(); window.scrollTo(0, 0)`, nil), chromedp.FullScreenshot(&b, 100))
		if err := os.WriteFile(filepath.Join(shots, "session-paused.png"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A long request is folded on the card, and "more" shows the rest.
	long := strings.Repeat("Ship the release with the notes attached. ", 12) + "END"
	_, s = apiCall(t, "POST", base+"/v1/sessions", approverToken, `{"agent":"ops","input":"`+long+`"}`)
	folded := s["id"].(string)
	var before, after string
	run("a long request", chromedp.Navigate(base+"/#/inbox"), chromedp.WaitVisible(item(folded)+" blockquote.request button.expand", chromedp.ByQuery),
		chromedp.Text(item(folded)+" blockquote.request", &before, chromedp.ByQuery),
		chromedp.Click(item(folded)+" blockquote.request button.expand", chromedp.ByQuery),
		chromedp.Text(item(folded)+" blockquote.request", &after, chromedp.ByQuery))
	if strings.Contains(before, "END") || !strings.Contains(before, "Ship the release") || !strings.HasSuffix(strings.TrimSpace(after), "END") {
		t.Fatalf("the folded request: %q; after more: %q", before, after)
	}

	run("approve it here", chromedp.Navigate(base+"/#/sessions/"+ops), chromedp.WaitVisible("#pending "+item(ops), chromedp.ByQuery),
		chromedp.Click("#pending "+item(ops)+" button.approve", chromedp.ByQuery),
		chromedp.WaitVisible(`#session-status.status-completed`, chromedp.ByQuery),
		chromedp.Evaluate(`document.getElementById('send').disabled`, &disabled))
	if disabled {
		t.Fatal("Send stays disabled after the decision")
	}

	var icon string
	run("icon", chromedp.Evaluate(`fetch(document.querySelector('link[rel=icon]').href).then(r => r.status + ' ' + r.headers.get('content-type'))`, &icon,
		func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }))
	if icon != "200 image/svg+xml" {
		t.Fatalf("the icon: %s", icon)
	}
}
