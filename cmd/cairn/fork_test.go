package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// forkConfig: deploy asks, and its command counts its runs.
const forkConfig = `
store: %s
auth:
  tokens:
    - {name: ana, token_env: CAIRN_TEST_APPROVER, role: approver}
    - {name: uma, token_env: CAIRN_TEST_USER, role: user}
models:
  demo:
    provider: scripted
    script:
      - tool_calls: [{name: deploy, arguments: {environment: production}}]
      - text: "{{if .LastResultIsError}}Not deployed: {{end}}{{.LastResult}}"
tools:
  deploy:
    parameters: {type: object, properties: {environment: {type: string}}, required: [environment]}
    command: ["sh", "-c", "echo run >> runs.log; echo deployed"]
    approval: always
agents:
  ops: {model: demo, tools: [deploy]}
`

// A fork on every store, through two replicas: made on one from a pause
// recorded by the other, it answers 201 with forked_from and decides its
// own way; the original's log is byte for byte what it was, and goes its
// own way; a point that is no pause is refused. On SQLite, the session
// page's "try another way from here" forks and opens the fork.
func TestForkAtEveryStore(t *testing.T) {
	for name, storeURL := range stores(t) {
		t.Run(name, func(t *testing.T) { testFork(t, storeURL(t), name == "sqlite") })
	}
}

func testFork(t *testing.T, storeURL string, page bool) {
	t.Setenv("CAIRN_TEST_APPROVER", approverToken)
	t.Setenv("CAIRN_TEST_USER", userToken)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "cairn.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(forkConfig, storeURL)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, a := serve(t, cfg)
	_, b := serve(t, cfg)
	events := func(base, id string) string {
		t.Helper()
		req, _ := http.NewRequest("GET", base+"/v1/sessions/"+id+"/events", nil)
		req.Header.Set("Authorization", "Bearer "+approverToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return string(body)
	}
	_, s := apiCall(t, "POST", a+"/v1/sessions", userToken, `{"agent":"ops","input":"ship it"}`)
	id, seq := s["id"].(string), s["seq"]
	before := events(a, id)

	if code, got := apiCall(t, "POST", b+"/v1/sessions/"+id+"/fork", userToken, `{"seq":1}`); code != 400 ||
		!strings.Contains(got["error"].(map[string]any)["message"].(string), fmt.Sprintf("the nearest after is %v (turn_paused)", seq)) {
		t.Fatalf("a fork at 1: %d %v", code, got)
	}
	code, fork := apiCall(t, "POST", b+"/v1/sessions/"+id+"/fork", userToken, fmt.Sprintf(`{"seq":%v}`, seq))
	if from, _ := fork["forked_from"].(map[string]any); code != 201 || from == nil || from["session_id"] != id || fork["status"] != "paused" || fork["owner"] != "uma" {
		t.Fatalf("the fork: %d %v", code, fork)
	}
	forkID := fork["id"].(string)
	if after := events(b, id); after != before {
		t.Fatalf("forking changed the original's log:\n%s\n%s", before, after)
	}

	if page {
		ctx := browser(t)
		step := stepper(t, ctx)
		var from string
		step("try another way from the session page", signIn(a, approverToken),
			chromedp.Navigate(a+"/#/sessions/"+id),
			chromedp.WaitVisible(`#timeline button.fork`, chromedp.ByQuery),
			chromedp.Click(`#timeline button.fork`, chromedp.ByQuery),
			chromedp.WaitVisible(`#forked-from`, chromedp.ByQuery),
			chromedp.TextContent(`#forked-from`, &from, chromedp.ByQuery))
		if !strings.Contains(from, "a fork of "+id+" at event") {
			t.Fatalf("the page's fork: %q", from)
		}
	}

	in := func(s map[string]any) string { return s["interrupts"].([]any)[0].(map[string]any)["id"].(string) }
	code, done := apiCall(t, "POST", a+"/v1/sessions/"+forkID+"/decisions", approverToken,
		fmt.Sprintf(`{"seq":%v,"decisions":[{"interrupt_id":%q,"action":"reject","reason":"not today"}]}`, fork["seq"], in(fork)))
	if code != 200 || done["status"] != "completed" || !strings.HasPrefix(done["output"].(string), "Not deployed: ") {
		t.Fatalf("the fork rejected: %d %v", code, done)
	}
	code, orig := apiCall(t, "POST", b+"/v1/sessions/"+id+"/decisions", approverToken,
		fmt.Sprintf(`{"seq":%v,"decisions":[{"interrupt_id":%q,"action":"approve"}]}`, seq, in(s)))
	if code != 200 || orig["output"] != "deployed" {
		t.Fatalf("the original approved: %d %v", code, orig)
	}
	if runs := strings.Count(string(mustRead(t, filepath.Join(dir, "runs.log"))), "run"); runs != 1 {
		t.Fatalf("deploy ran %d times, want once (the original's)", runs)
	}
	var evs struct{ Events []struct{ Type string } }
	if err := json.Unmarshal([]byte(events(a, forkID)), &evs); err != nil || evs.Events[int(seq.(float64))].Type != "session_forked" {
		t.Fatalf("the fork's log: %v %+v", err, evs)
	}
}
