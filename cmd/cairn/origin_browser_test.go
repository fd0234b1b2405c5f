package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/testkit/testwait"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// attackPage is a page on another origin that tries what a hostile site
// can against a local server: start a session with no-cors fetches (a
// text/plain string and a type-less Blob), read the inbox, approve with a
// no-cors fetch and with an enctype=text/plain form whose name=value is
// shaped into JSON. It runs every attack against each target in
// window.targets and sets window.done.
const attackPage = `<!doctype html><meta charset=utf-8><title>innocent page</title>
<body><iframe name=sink></iframe><script>
window.results = [];
async function attack(targets, start, session, decisionName, decisionValue) {
  for (const t of targets) {
    const nc = (path, body) => fetch(t + path, {method: 'POST', mode: 'no-cors', body}).then(() => 'sent', e => 'failed: ' + e);
    results.push(await nc('/v1/sessions', start));
    results.push(await nc('/v1/sessions', new Blob([start])));
    results.push(await nc('/v1/sessions/' + session + '/decisions', decisionName + '=' + decisionValue));
    try { const r = await fetch(t + '/v1/interrupts'); results.push('read ' + r.status + ' ' + await r.text()); }
    catch (e) { results.push('read blocked: ' + e); }
    await new Promise(done => {
      const f = document.createElement('form');
      f.method = 'POST'; f.enctype = 'text/plain'; f.target = 'sink';
      f.action = t + '/v1/sessions/' + session + '/decisions';
      const i = document.createElement('input');
      i.name = decisionName; i.value = decisionValue;
      f.append(i); document.body.append(f);
      document.querySelector('iframe').onload = done;
      f.submit();
    });
  }
  window.done = true;
}
</script>`

// recorder is a plain server that records the POSTs it gets: proof that
// the browser really sent each attack, so Cairn's refusal is what stops it.
type recorder struct {
	mu    sync.Mutex
	posts []string // content type and body
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == "POST" {
		b, _ := io.ReadAll(r.Body)
		rec.mu.Lock()
		rec.posts = append(rec.posts, r.Header.Get("Content-Type")+" "+string(b))
		rec.mu.Unlock()
	}
	io.WriteString(w, "ok")
}

// A no-auth `cairn serve` in a real Chromium: a page from another origin
// cannot start, read or decide (fetch, no-cors fetch, text/plain form); a
// DNS-rebinding page (its own name resolving to 127.0.0.1) is refused;
// the page served by Cairn itself still approves.
func TestBrowserOtherOriginsCannotDriveTheLocalMode(t *testing.T) {
	// rebind.test resolves to 127.0.0.1 in this browser, as an attacker's
	// DNS name does after rebinding.
	ctx := browserWith(t, chromedp.Flag("host-resolver-rules", "MAP rebind.test 127.0.0.1"))
	dir := t.TempDir()
	local := browserConfig[:strings.Index(browserConfig, "auth:")] + browserConfig[strings.Index(browserConfig, "models:"):]
	if err := os.WriteFile(filepath.Join(dir, "cairn.yaml"), []byte(local), 0o600); err != nil {
		t.Fatal(err)
	}
	_, base := serve(t, filepath.Join(dir, "cairn.yaml"))
	runs := func() string { b, _ := os.ReadFile(filepath.Join(dir, "runs.log")); return string(b) }

	status, s := post(t, base+"/v1/sessions", `{"agent":"ops","input":"ship it"}`)
	if status != 201 || s["status"] != "paused" {
		t.Fatalf("start: %d %v", status, s)
	}
	id := s["id"].(string)
	intr := s["interrupts"].([]any)[0].(map[string]any)["id"].(string)

	rec := &recorder{}
	control := httptest.NewServer(rec)
	defer control.Close()
	// The attacker's page is on localhost:PORT: another site than 127.0.0.1.
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, attackPage) }))
	defer evil.Close()
	_, evilPort, _ := net.SplitHostPort(strings.TrimPrefix(evil.URL, "http://"))

	step := stepper(t, ctx)
	var results []string
	start := `{"agent":"ops","input":"rm -rf"}`
	name := fmt.Sprintf(`{"seq":%v,"decisions":[{"interrupt_id":%q,"action":"approve","reason":"`, s["seq"], intr)
	call := fmt.Sprintf(`attack([%q, %q], %q, %q, %q, '"}]}')`, base, control.URL, start, id, name)
	step("attack from another origin", chromedp.Navigate("http://localhost:"+evilPort+"/"),
		chromedp.Evaluate(call, nil), chromedp.Poll(`window.done === true`, nil, chromedp.WithPollingInterval(50*time.Millisecond)),
		chromedp.Evaluate(`results`, &results))
	rec.mu.Lock()
	posts := append([]string(nil), rec.posts...)
	rec.mu.Unlock()
	// The control server got every attack: 2 starts, 2 decisions.
	if len(posts) != 4 || !strings.HasPrefix(posts[0], "text/plain") || !strings.HasPrefix(posts[3], "text/plain "+name+`="}]}`) {
		t.Fatalf("the browser did not send the attacks as expected; the control server got %q (results %q)", posts, results)
	}
	for _, r := range results[:5] {
		if strings.HasPrefix(r, "read 200") {
			t.Fatalf("the other origin read the inbox: %s", r)
		}
	}

	// DNS rebinding: the page and the API under the attacker's name.
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(base, "http://"))
	rebound := "http://rebind.test:" + port
	var page string
	var read, decide int
	step("rebinding", chromedp.Navigate(rebound+"/"), chromedp.Text("body", &page),
		chromedp.Evaluate(`fetch('/v1/interrupts').then(r => r.status)`, &read, awaitPromise),
		chromedp.Evaluate(fmt.Sprintf(`fetch('/v1/sessions/%s/decisions', {method: 'POST', headers: {'Content-Type': 'application/json'}, body: %q}).then(r => r.status)`,
			id, name+`ok"}]}`), &decide, awaitPromise))
	if !strings.Contains(page, "misdirected_request") || read != 421 || decide != 421 {
		t.Fatalf("rebinding: page %q, inbox read %d, decision %d; want 421s", page, read, decide)
	}

	// Nothing changed: one session, still paused, nothing ran.
	list := getJSON(t, base+"/v1/sessions")["sessions"].([]any)
	if len(list) != 1 || list[0].(map[string]any)["status"] != "paused" || runs() != "" {
		t.Fatalf("after the attacks: sessions %v, runs %q", list, runs())
	}

	// The page from the server itself approves.
	step("approve on the page", chromedp.Navigate(base+"/"), chromedp.WaitVisible(item(id)+" button.approve", chromedp.ByQuery),
		chromedp.Click(item(id)+" button.approve", chromedp.ByQuery), chromedp.WaitNotPresent(item(id), chromedp.ByQuery))
	testwait.For(t, 20*time.Second, "the session approved on the page to complete", func() bool {
		return getJSON(t, base+"/v1/sessions/"+id)["status"] == "completed"
	})
	if strings.Count(runs(), "production") != 1 {
		t.Fatalf("runs %q, want the one approved deploy", runs())
	}
}

// awaitPromise makes Evaluate wait for the promise an expression returns.
func awaitPromise(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }
