package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/testkit/hooktest"
	"github.com/cairnhq/cairn/internal/testkit/testwait"
	"github.com/cairnhq/cairn/webhook"
)

const webhookSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// webhookConfig: an approval-gated deploy, webhooks to the test's receiver,
// action links under a load balancer in front of the nodes.
const webhookConfig = `
store: %s
lease: 3s
public_url: %s
webhooks:
  - {name: test-receiver, url: "%s", secret_env: CAIRN_TEST_WEBHOOK_SECRET, timeout: 3s}
models:
  demo:
    provider: scripted
    script:
      - tool_calls: [{name: deploy, arguments: {environment: production}}]
      - text: "done: {{.LastResult}}"
tools:
  deploy:
    parameters: {type: object, properties: {environment: {type: string}}, required: [environment]}
    command: ["sh", "-c", "echo run >> runs.txt; echo deployed"]
    approval: always
agents:
  main: {model: demo, tools: [deploy]}
`

// balancer forwards to whichever node is up, like the load balancer that
// public_url names in production.
type balancer struct {
	mu     sync.Mutex
	target *url.URL
}

func (b *balancer) to(raw string) {
	u, _ := url.Parse(raw)
	b.mu.Lock()
	b.target = u
	b.mu.Unlock()
}

func (b *balancer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.mu.Lock()
	target := b.target
	b.mu.Unlock()
	(&httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(target) }}).ServeHTTP(w, r)
}

// Webhooks across a kill -9: a node killed while a delivery is in flight
// loses nothing (the second node sends it again once the claim runs out,
// with the same id); every event arrives, signed; an action link decides
// once, through any node, and then answers 409.
func TestWebhooksSurviveKill9(t *testing.T) {
	for name, storeURL := range stores(t) {
		t.Run(name, func(t *testing.T) { testWebhooksSurviveKill9(t, storeURL(t)) })
	}
}

func testWebhooksSurviveKill9(t *testing.T, storeURL string) {
	t.Setenv("CAIRN_TEST_WEBHOOK_SECRET", webhookSecret)
	rc := hooktest.New(t, webhookSecret)
	held := rc.Hold() // the first delivery is held open
	lb := &balancer{}
	front := httptest.NewServer(lb)
	defer front.Close()

	dir := t.TempDir()
	cfg := filepath.Join(dir, "cairn.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(webhookConfig, storeURL, front.URL, rc.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	a, aURL := serve(t, cfg)
	lb.to(aURL)

	// Five sessions pause on A; A delivers their interrupt.created, and
	// the first delivery is held open when A is killed.
	const n = 5
	sessions := map[string]bool{}
	for i := range n {
		code, s := post(t, aURL+"/v1/sessions", fmt.Sprintf(`{"agent":"main","input":"deploy %d"}`, i))
		if code != 201 || s["status"] != "paused" {
			t.Fatalf("create: %d %v", code, s)
		}
		sessions[s["id"].(string)] = true
	}
	var heldID string
	select {
	case heldID = <-held:
	case <-time.After(15 * time.Second):
		t.Fatal("no delivery reached the receiver")
	}
	a.Process.Kill()
	a.Wait()
	killedAt := time.Now()
	_, bURL := serve(t, cfg)
	lb.to(bURL)

	rc.WaitFor(webhook.InterruptCreated, n, 30*time.Second)
	var created map[string]int
	testwait.For(t, 40*time.Second-time.Since(killedAt), "the delivery cut off by kill -9 to arrive again", func() bool {
		created = rc.Deliveries(webhook.InterruptCreated)
		return created[heldID] >= 2
	})
	if created[heldID] < 2 {
		t.Fatalf("the delivery in flight at the kill (%s) arrived %d time(s); the second node never sent it again", heldID, created[heldID])
	}
	t.Logf("the delivery cut off by kill -9 arrived again %.1fs after the kill (claim: timeout 3s + 10s)", time.Since(killedAt).Seconds())

	// Each session's action link decides it, through the balancer (node B
	// now); the same link again answers 409; the tool ran once per session.
	var links []string
	for _, p := range rc.Payloads(webhook.InterruptCreated) {
		if !sessions[p.Data.SessionID] || p.Data.Actions == nil || !strings.HasPrefix(p.Data.Actions.Approve, front.URL+"/v1/actions/") {
			t.Errorf("interrupt.created: %+v", p.Data)
			continue
		}
		links = append(links, p.Data.Actions.Approve)
	}
	for _, link := range links {
		resp, err := http.Get(link)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET %s: %v %v", link, err, resp)
		}
		resp.Body.Close()
		for use, want := range []int{200, 409} {
			resp, err = http.Post(link, "application/x-www-form-urlencoded", nil)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != want {
				t.Fatalf("POST %s (use %d): %d, want %d", link, use+1, resp.StatusCode, want)
			}
		}
	}
	rc.WaitFor(webhook.InterruptDecided, n, 30*time.Second)
	for _, p := range rc.WaitFor(webhook.SessionCompleted, n, 30*time.Second) {
		if p.Data.Output != "done: deployed" {
			t.Errorf("session.completed: %+v", p.Data)
		}
	}
	total := 0
	for _, typ := range webhook.EventTypes() {
		for _, c := range rc.Deliveries(typ) {
			total += c
		}
	}
	if runs := strings.Count(string(mustRead(t, filepath.Join(dir, "runs.txt"))), "run"); runs != n {
		t.Fatalf("the tool ran %d times for %d approvals", runs, n)
	}
	t.Logf("%d events, %d deliveries (each verified with the Standard Webhooks library)", 3*n, total)
}
