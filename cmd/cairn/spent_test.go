package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/testkit/hooktest"
	"github.com/cairnhq/cairn/internal/testkit/testwait"
	"github.com/cairnhq/cairn/webhook"
)

// spentConfig: finished sessions go after 1 s; an approval-gated deploy
// (each run is a line of runs.txt) announced by webhook with action
// links; a pipeline that finishes later, its callback URL in jobs.txt.
const spentConfig = `
store: %s
public_url: %s
retention: {completed: 1s, sweep: 200ms}
webhooks:
  - {name: test-receiver, url: "%s", secret_env: CAIRN_TEST_WEBHOOK_SECRET, timeout: 3s, events: [interrupt.created]}
models:
  demo:
    provider: scripted
    scripts:
      dep:
        - tool_calls: [{name: deploy, arguments: {environment: production}}]
        - text: "done: {{.LastResult}}"
      ci:
        - tool_calls: [{name: run_pipeline, arguments: {ref: main}}]
        - text: "CI: {{.LastResult}}"
tools:
  deploy:
    parameters: {type: object, properties: {environment: {type: string}}, required: [environment]}
    command: ["sh", "-c", "echo run >> runs.txt; echo deployed"]
    approval: always
  run_pipeline:
    parameters: {type: object, properties: {ref: {type: string}}, required: [ref]}
    command: ["sh", "-c", "echo \"run_pipeline $CAIRN_CALLBACK_URL\" >> jobs.txt; echo pipeline started"]
    wait: {timeout: 1h}
agents:
  dep: {model: demo, tools: [deploy]}
  ci: {model: demo, tools: [run_pipeline]}
`

// The attack of issue 40: a client-chosen chat id is approved through an
// action link, purged, and chosen again. The old link (and the old callback
// URL) must answer 410 and never act on the new session: its call stays
// pending, and the approval-gated tool has run once. Through the AI SDK's
// chat, AG-UI's thread, and a callback URL, on SQLite and PostgreSQL.
func TestSpentLinksStaySpentAfterPurge(t *testing.T) {
	for name, storeURL := range stores(t) {
		t.Run(name, func(t *testing.T) { testSpentLinksStaySpentAfterPurge(t, storeURL(t)) })
	}
}

func testSpentLinksStaySpentAfterPurge(t *testing.T, storeURL string) {
	t.Setenv("CAIRN_TEST_WEBHOOK_SECRET", webhookSecret)
	rc := hooktest.New(t, webhookSecret)
	lb := &balancer{}
	front := httptest.NewServer(lb)
	defer front.Close()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "cairn.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(spentConfig, storeURL, front.URL, rc.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, base := serve(t, cfg)
	lb.to(base)

	runs := func() int {
		b, _ := os.ReadFile(filepath.Join(dir, "runs.txt")) // none before the first run
		return strings.Count(string(b), "run")
	}
	// stream posts a protocol's request and reads its stream to the end.
	stream := func(path, body string) {
		t.Helper()
		resp, err := http.Post(base+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("POST %s: %d %s", path, resp.StatusCode, b)
		}
	}
	// approveLink is the approve link the webhook carried for session id's
	// n-th interrupt.created.
	approveLink := func(id string, n int) string {
		t.Helper()
		var links []string
		testwait.For(t, 20*time.Second, fmt.Sprintf("interrupt.created #%d of %s", n, id), func() bool {
			links = nil
			for _, p := range rc.Payloads(webhook.InterruptCreated) {
				if p.Data.SessionID == id && p.Data.Actions != nil {
					links = append(links, p.Data.Actions.Approve)
				}
			}
			return len(links) >= n
		})
		return strings.Replace(links[n-1], front.URL, base, 1)
	}
	follow := func(link string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest("POST", link, nil)
		req.Header.Set("Accept", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var v map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, v
	}
	purged := func(id string) {
		t.Helper()
		testwait.For(t, 30*time.Second, id+" to be purged", func() bool {
			code, _ := getStatus(base + "/v1/sessions/" + id)
			return code == 404
		})
	}
	stillPaused := func(id string) {
		t.Helper()
		if code, s := getStatus(base + "/v1/sessions/" + id); code != 200 || s["status"] != "paused" || len(s["interrupts"].([]any)) != 1 {
			t.Fatalf("the new %s: %d %v", id, code, s)
		}
	}
	wantGone := func(what string, code int, body map[string]any) {
		t.Helper()
		if e, _ := body["error"].(map[string]any); code != 410 || e["code"] != "gone" {
			t.Fatalf("%s: %d %v; want 410 gone", what, code, body)
		}
	}

	for _, door := range []struct{ name, path, id, body string }{
		{"AI SDK", "/v1/agents/dep/chat", "chat-42", `{"id":"chat-42","messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"deploy"}]}]}`},
		{"AG-UI", "/v1/agents/dep/ag-ui", "thread-9", `{"threadId":"thread-9","runId":"r1","messages":[{"id":"u1","role":"user","content":"deploy"}]}`},
	} {
		before := runs()
		stream(door.path, door.body)
		first := approveLink(door.id, 1)
		if code, s := follow(first); code != 200 || s["status"] != "completed" {
			t.Fatalf("%s: the link: %d %v", door.name, code, s)
		}
		if runs() != before+1 {
			t.Fatalf("%s: deploy ran %d times, want once", door.name, runs()-before)
		}
		purged(door.id)
		code, body := follow(first)
		wantGone(door.name+": the spent link after the purge", code, body)
		stream(door.path, door.body) // the same client-chosen id again
		stillPaused(door.id)
		second := approveLink(door.id, 2)
		if second == first {
			t.Fatalf("%s: the new session's link is the old one", door.name)
		}
		code, body = follow(first)
		wantGone(door.name+": the old link on the new session", code, body)
		resp, err := http.Get(first)
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 410 || !strings.Contains(string(page), "purged") {
			t.Fatalf("%s: the old link's page: %d %s", door.name, resp.StatusCode, page)
		}
		stillPaused(door.id)
		if runs() != before+1 {
			t.Fatalf("%s: deploy ran again with no person deciding", door.name)
		}
		if code, s := follow(second); code != 200 || s["status"] != "completed" || runs() != before+2 {
			t.Fatalf("%s: the new session's own link: %d %v, %d runs", door.name, code, s, runs()-before)
		}
	}

	// A callback URL: completed once, purged, the id chosen again.
	const chat = `{"id":"ci-7","messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"build main"}]}]}`
	stream("/v1/agents/ci/chat", chat)
	urls := jobs(t, dir, "run_pipeline")
	if len(urls) != 1 {
		t.Fatalf("jobs: %v", urls)
	}
	old := strings.Replace(urls[0], front.URL, base, 1)
	if code, body := post(t, old, `{"output":"passed"}`); code != 200 || body["status"] != "completed" {
		t.Fatalf("the callback: %d %v", code, body)
	}
	purged("ci-7")
	code, body := post(t, old, `{"output":"forged result"}`)
	wantGone("the spent callback URL after the purge", code, body)
	stream("/v1/agents/ci/chat", chat)
	stillPaused("ci-7")
	if urls = jobs(t, dir, "run_pipeline"); len(urls) != 2 || urls[0] == urls[1] {
		t.Fatalf("the new job's callback URL is the old one: %v", urls)
	}
	code, body = post(t, old, `{"output":"forged result"}`)
	wantGone("the old callback URL on the new session", code, body)
	stillPaused("ci-7")
}
