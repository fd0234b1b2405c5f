package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"
)

// bulkConfig: every deploy asks ana's group; the command records the
// call's idempotency key (one per call) in runs.log.
const bulkConfig = `
store: sqlite:./cairn.db
lease: 3s
auth:
  tokens:
    - {name: ana, token_env: CAIRN_TEST_APPROVER, role: approver}
    - {name: uma, token_env: CAIRN_TEST_USER, role: user}
models:
  demo:
    provider: scripted
    script:
      - tool_calls: [{name: deploy, arguments: {environment: production}}]
      - text: "done: {{.LastResult}}"
tools:
  deploy:
    parameters: {type: object, properties: {environment: {type: string}}, required: [environment]}
    command: ["sh", "-c", "echo $CAIRN_IDEMPOTENCY_KEY >> runs.log; echo deployed"]
    approval: always
agents:
  ops: {model: demo, tools: [deploy]}
`

// Bulk decisions across three cairn serve replicas: 200 pending calls in
// 200 sessions, decided at once by a bulk request by selector (through
// the CLI), a bulk request by list and single decisions, each on another
// replica. Each call is decided once and runs once, and every result
// line says what happened to its call. Then the page's bulk approval in
// headless Chromium.
func TestBulkDecisionsAcrossReplicas(t *testing.T) {
	t.Setenv("CAIRN_TEST_APPROVER", approverToken)
	t.Setenv("CAIRN_TEST_USER", userToken)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "cairn.yaml")
	if err := os.WriteFile(cfg, []byte(bulkConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	var urls []string
	for range 3 {
		_, u := serve(t, cfg)
		urls = append(urls, u)
	}
	const n = 200
	type call struct{ session, interrupt string }
	calls := make([]call, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, s := apiCall(t, "POST", urls[i%3]+"/v1/sessions", userToken, `{"agent":"ops","input":"ship it"}`)
			if code != 201 || s["status"] != "paused" {
				t.Errorf("create %d: %d %v", i, code, s)
				return
			}
			calls[i] = call{s["id"].(string), s["interrupts"].([]any)[0].(map[string]any)["id"].(string)}
		}()
		if i%8 == 7 {
			wg.Wait() // eight at a time
		}
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	decided := map[string]int{} // session → 200s across every way it was decided
	by := map[string]int{}      // the 200s of each way, for the log
	var mu sync.Mutex
	count := func(session, way string) { mu.Lock(); decided[session]++; by[way]++; mu.Unlock() }
	var cliOut []byte
	var listResults []any
	wg.Add(3)
	go func() { // the CLI's bulk request by selector, on replica 0
		defer wg.Done()
		var err error
		cliOut, err = exec.Command(binary, "sessions", "--server", urls[0], "--token", approverToken, "approve", "--select", "tool=deploy,agent=ops", "--limit", fmt.Sprint(n)).CombinedOutput()
		if err != nil {
			t.Errorf("cairn sessions approve --select: %v\n%s", err, cliOut)
		}
	}()
	go func() { // a bulk request by list, on replica 1
		defer wg.Done()
		var b strings.Builder
		for i, c := range calls {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `{"session_id":%q,"interrupt_id":%q,"action":"approve"}`, c.session, c.interrupt)
		}
		code, out := apiCall(t, "POST", urls[1]+"/v1/decisions", approverToken, `{"decisions":[`+b.String()+`]}`)
		if code != 200 {
			t.Errorf("bulk by list: %d %v", code, out)
			return
		}
		listResults = out["results"].([]any)
	}()
	go func() { // single decisions, on replica 2
		defer wg.Done()
		for i := 0; i < n; i += 5 {
			_, s := apiCall(t, "GET", urls[2]+"/v1/sessions/"+calls[i].session, approverToken, "")
			code, _ := apiCall(t, "POST", urls[2]+"/v1/sessions/"+calls[i].session+"/decisions", approverToken,
				fmt.Sprintf(`{"seq":%v,"decisions":[{"interrupt_id":%q,"action":"approve"}]}`, s["seq"], calls[i].interrupt))
			switch code {
			case 200:
				count(calls[i].session, "single")
			case 409:
			default:
				t.Errorf("single decision of %s: %d", calls[i].session, code)
			}
		}
	}()
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	// Every result line says what happened to its call.
	for _, r := range listResults {
		r := r.(map[string]any)
		switch r["status"] {
		case 200.0:
			count(r["session_id"].(string), "list")
		case 409.0:
			if e := r["error"].(map[string]any); e["code"] != "already_decided" || !strings.Contains(e["message"].(string), "already decided: approve by ana") {
				t.Errorf("list result: %v", r)
			}
		default:
			t.Errorf("list result: %v", r)
		}
	}
	lines := strings.Split(strings.TrimSpace(string(cliOut)), "\n")
	for _, line := range lines[:len(lines)-1] {
		session, rest, _ := strings.Cut(line, " ")
		switch {
		case strings.HasSuffix(rest, ": approved, the session is completed"):
			count(session, "selector")
		case strings.Contains(rest, ": 409 already_decided: interrupt "):
		default:
			t.Errorf("CLI line: %q", line)
		}
	}
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "batch bat_") {
		t.Errorf("CLI summary: %q", last)
	}
	t.Logf("decided by the selector (CLI) %d, the list %d, single decisions %d", by["selector"], by["list"], by["single"])
	for _, c := range calls {
		if decided[c.session] != 1 {
			t.Errorf("session %s was decided %d times", c.session, decided[c.session])
		}
		if _, s := apiCall(t, "GET", urls[0]+"/v1/sessions/"+c.session, approverToken, ""); s["status"] != "completed" {
			t.Errorf("session %s is %v", c.session, s["status"])
		}
	}
	runs := strings.Fields(string(mustRead(t, filepath.Join(dir, "runs.log"))))
	unique := map[string]bool{}
	for _, k := range runs {
		unique[k] = true
	}
	if len(runs) != n || len(unique) != n {
		t.Fatalf("the tool ran %d times for %d calls, want %d: each once", len(runs), len(unique), n)
	}

	// The page: select every card like one, approve them in one request.
	var page []string
	for range 4 {
		_, s := apiCall(t, "POST", urls[0]+"/v1/sessions", userToken, `{"agent":"ops","input":"ship it"}`)
		page = append(page, s["id"].(string))
	}
	ctx := browser(t)
	step := stepper(t, ctx)
	var summary string
	step("bulk approval on the page", signIn(urls[1], approverToken),
		chromedp.WaitVisible(item(page[0])+" button.pick-like", chromedp.ByQuery),
		chromedp.Click(item(page[0])+" button.pick-like", chromedp.ByQuery),
		chromedp.WaitVisible(`#bulk-count`, chromedp.ByQuery),
		chromedp.TextContent(`#bulk-count`, &summary, chromedp.ByQuery))
	if summary != "4 selected" {
		t.Fatalf("after select all like this: %q", summary)
	}
	step("approve selected", chromedp.Click(`#bulk button.approve-selected`, chromedp.ByQuery),
		chromedp.WaitVisible(`#bulk-results .bulk-lines li`, chromedp.ByQuery),
		chromedp.TextContent(`#bulk-results p`, &summary, chromedp.ByQuery))
	if !strings.HasPrefix(summary, "Approved 4 of 4 (batch bat_") {
		t.Fatalf("the page's bulk result: %q", summary)
	}
	for _, id := range page {
		if _, s := apiCall(t, "GET", urls[2]+"/v1/sessions/"+id, approverToken, ""); s["status"] != "completed" {
			t.Errorf("session %s after the page's bulk approval: %v", id, s["status"])
		}
	}
}
