package main

import (
	"encoding/json"

	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cairnhq/cairn/internal/testkit/testwait"
)

// waitsConfig: run_pipeline starts a "pipeline" (it hands its callback URL
// to the test's CI system through jobs.txt) and finishes later, with an
// hour's deadline; flaky_pipeline's deadline is 2s, and a missed one starts
// it again once, then fails it.
const waitsConfig = `
store: %s
lease: 3s
public_url: http://cairn.test
models:
  demo:
    provider: scripted
    scripts:
      ci:
        - tool_calls: [{name: run_pipeline, arguments: {ref: main}}]
        - text: "CI: {{.LastResult}}"
      flaky:
        - tool_calls: [{name: flaky_pipeline, arguments: {ref: main}}]
        - text: "CI: {{.LastResult}}"
      slow:
        - tool_calls: [{name: slow_pipeline, arguments: {ref: main}}]
        - text: "CI: {{.LastResult}}"
tools:
  run_pipeline:
    parameters: {type: object, properties: {ref: {type: string}}, required: [ref]}
    command: ["sh", "-c", "echo \"run_pipeline $CAIRN_CALLBACK_URL\" >> jobs.txt; echo pipeline started"]
    wait: {timeout: 1h}
    result_schema: {type: object, properties: {status: {type: string}}, required: [status]}
  flaky_pipeline:
    parameters: {type: object, properties: {ref: {type: string}}, required: [ref]}
    command: ["sh", "-c", "echo \"flaky_pipeline $CAIRN_CALLBACK_URL\" >> jobs.txt; echo pipeline started"]
    wait: {timeout: 2s, on_timeout: retry, retries: 1}
  slow_pipeline:
    parameters: {type: object, properties: {ref: {type: string}}, required: [ref]}
    command: ["sh", "-c", "echo \"slow_pipeline $CAIRN_CALLBACK_URL\" >> jobs.txt; echo \"pgid $$\" >> jobs.txt; sleep 60; echo pipeline started"]
    wait: {timeout: 1h}
agents:
  ci: {model: demo, tools: [run_pipeline]}
  flaky: {model: demo, tools: [flaky_pipeline]}
  slow: {model: demo, tools: [slow_pipeline]}
`

// waitsCluster starts three `cairn serve` sharing storeURL, with
// waitsConfig.
func waitsCluster(t *testing.T, storeURL string) *cluster {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "cairn.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(waitsConfig, storeURL)), 0o600); err != nil {
		t.Fatal(err)
	}
	c := &cluster{t: t, dir: dir, cfg: cfg, nodes: make([]*exec.Cmd, 3), urls: make([]string, 3)}
	for i := range 3 {
		c.start(i)
	}
	return c
}

// jobs lists the callback URLs the tool named gave out, in order.
func jobs(t *testing.T, dir, tool string) []string {
	b, _ := os.ReadFile(filepath.Join(dir, "jobs.txt"))
	var urls []string
	for _, line := range strings.Split(string(b), "\n") {
		if name, url, ok := strings.Cut(line, " "); ok && name == tool {
			urls = append(urls, url)
		}
	}
	return urls
}

// callbackTo POSTs body to the callback URL's path on the node at base (a
// load balancer in front of the replicas would send it to any of them).
func callbackTo(t *testing.T, base, url, body string) (int, map[string]any) {
	t.Helper()
	path := strings.TrimPrefix(url, "http://cairn.test")
	return post(t, base+path, body)
}

func eventCount(evs []map[string]any, typ string) int {
	n := 0
	for _, ev := range evs {
		if ev["type"] == typ {
			n++
		}
	}
	return n
}

// A command tool starts a job and returns "started" with its callback URL;
// the node that started it is killed with -9; the test's CI system
// completes the job 5 s later through the URL on another of the replicas:
// the session completes once. A second call of the URL answers 409, an
// altered one 403, and neither changes anything.
func TestCallbackCompletesAcrossReplicasAfterKill9(t *testing.T) {
	for name, storeURL := range stores(t) {
		t.Run(name, func(t *testing.T) {
			c := waitsCluster(t, storeURL(t))
			dir := c.dir
			code, s := post(t, c.url(0)+"/v1/sessions", `{"agent":"ci","input":"build main"}`)
			if code != 201 || s["status"] != "paused" {
				t.Fatalf("%d %v", code, s)
			}
			in := s["interrupts"].([]any)[0].(map[string]any)
			if in["kind"] != "external" || in["message"] != "pipeline started" || in["expires_at"] == nil {
				t.Fatalf("the wait: %v", in)
			}
			urls := jobs(t, dir, "run_pipeline")
			if len(urls) != 1 {
				t.Fatalf("jobs: %v", urls)
			}
			// The CI system: the job takes 5 s, then it calls back.
			type reply struct {
				code int
				body map[string]any
			}
			done := make(chan reply, 1)
			go func() {
				time.Sleep(5 * time.Second) // elapsed time: the callback comes late, during the restarts
				code, body := callbackTo(t, c.url(1), urls[0], `{"output":{"status":"passed"}}`)
				done <- reply{code, body}
			}()
			c.nodes[0].Process.Kill() // kill -9 of the node that started the job
			c.nodes[0].Wait()
			if code, body := callbackTo(t, c.url(2), urls[0][:len(urls[0])-2]+"xx", `{"output":{"status":"passed"}}`); code != 403 {
				t.Fatalf("an altered callback: %d %v", code, body)
			}
			r := <-done
			if r.code != 200 || r.body["status"] != "completed" || r.body["session_id"] != s["id"] {
				t.Fatalf("the callback: %d %v", r.code, r.body)
			}
			code, again := callbackTo(t, c.url(2), urls[0], `{"output":{"status":"failed"}}`)
			if e, _ := again["error"].(map[string]any); code != 409 || !strings.Contains(fmt.Sprint(e["message"]), "complete by callback") {
				t.Fatalf("a second callback: %d %v", code, again)
			}
			resp, err := http.Get(c.url(2) + "/v1/sessions/" + s["id"].(string))
			if err != nil {
				t.Fatal(err)
			}
			var final map[string]any
			if err := json.NewDecoder(resp.Body).Decode(&final); err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			evs := eventsOf(t, c.url(1), s["id"].(string))
			if final["status"] != "completed" || final["output"] != `CI: {"status":"passed"}` || eventCount(evs, "tool_result") != 1 || eventCount(evs, "decision") != 1 {
				t.Fatalf("the session: %v; %d tool results, %d decisions", final, eventCount(evs, "tool_result"), eventCount(evs, "decision"))
			}
		})
	}
}

// A deadline that passes with no completion has the configured outcome
// once, with three replicas sweeping: retry starts the command once more
// (a new callback URL), and the second deadline fails the call.
func TestMissedDeadlineOnceAcrossReplicas(t *testing.T) {
	for name, storeURL := range stores(t) {
		t.Run(name, func(t *testing.T) {
			c := waitsCluster(t, storeURL(t))
			dir := c.dir
			code, s := post(t, c.url(0)+"/v1/sessions", `{"agent":"flaky","input":"build main"}`)
			if code != 201 || s["status"] != "paused" {
				t.Fatalf("%d %v", code, s)
			}
			id := s["id"].(string)
			var final map[string]any
			testwait.For(t, 20*time.Second, "the flaky session to end", func() bool {
				resp, err := http.Get(c.url(1) + "/v1/sessions/" + id)
				if err != nil {
					return false
				}
				defer resp.Body.Close()
				final = nil
				if err := json.NewDecoder(resp.Body).Decode(&final); err != nil {
					t.Fatal(err)
				}
				return final["status"] == "completed"
			})
			time.Sleep(1 * time.Second) // elapsed time: any late sweeper would have acted by now
			evs := eventsOf(t, c.url(2), id)
			urls := jobs(t, dir, "flaky_pipeline")
			if len(urls) != 2 || urls[0] == urls[1] || eventCount(evs, "wait_expired") != 2 || eventCount(evs, "tool_result") != 1 ||
				!strings.Contains(fmt.Sprint(final["output"]), "did not finish by") {
				t.Fatalf("%d runs, %d expiries, %d results; output %v", len(urls), eventCount(evs, "wait_expired"), eventCount(evs, "tool_result"), final["output"])
			}
			// The first run's URL is past its deadline.
			if code, body := callbackTo(t, c.url(0), urls[0], `{"output":{"status":"passed"}}`); code != 410 {
				t.Fatalf("a late callback: %d %v", code, body)
			}
		})
	}
}

const clientToolConfig = `
store: sqlite:./cairn.db
auth:
  tokens:
    - {name: ana, token_env: CAIRN_TEST_APPROVER, role: approver}
models:
  demo:
    provider: scripted
    script:
      - tool_calls: [{name: pick_file, arguments: {accept: ".csv"}}]
      - text: "picked: {{.LastResult}}"
tools:
  pick_file:
    kind: client
    parameters: {type: object, properties: {accept: {type: string}}}
    result_schema: {type: object, properties: {path: {type: string, maxLength: 30}}, required: [path]}
agents:
  files: {model: demo, tools: [pick_file]}
`

// cairn sessions lists a client tool's call, refuses a result off its
// schema at the field, and completes it; fail gives the model the reason.
func TestCLICompletesAClientTool(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cairn.yaml"), []byte(clientToolConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CAIRN_TEST_APPROVER", approverToken)
	_, base := serve(t, filepath.Join(dir, "cairn.yaml"))
	cli := func(args ...string) (string, error) {
		out, err := exec.Command(binary, append([]string{"sessions", "--server", base, "--token", approverToken}, args...)...).CombinedOutput()
		return string(out), err
	}
	_, s := apiCall(t, "POST", base+"/v1/sessions", approverToken, `{"agent":"files","input":"import my data"}`)
	id := s["id"].(string)
	if out, err := cli("list", "--status", "paused"); err != nil || !strings.Contains(out, `Run tool pick_file with {"accept":".csv"} yourself`) || !strings.Contains(out, "complete --output") {
		t.Fatalf("list: %v\n%s", err, out)
	}
	if out, err := cli("complete", id, "--output", `{"file":"a.csv"}`); err == nil || !strings.Contains(out, "path") {
		t.Fatalf("a result the schema refuses: %v\n%s", err, out)
	}
	if out, err := cli("complete", id, "--output", `{"path":"/data/a.csv"}`); err != nil || !strings.Contains(out, "completed") {
		t.Fatalf("complete: %v\n%s", err, out)
	}
	if done := waitSession(t, base, id, "completed"); done["output"] != `picked: {"path":"/data/a.csv"}` {
		t.Fatalf("output %v", done["output"])
	}
	_, s = apiCall(t, "POST", base+"/v1/sessions", approverToken, `{"agent":"files","input":"import again"}`)
	if out, err := cli("fail", s["id"].(string), "--reason", "the user closed the picker"); err != nil || !strings.Contains(out, "the client could not run tool pick_file: the user closed the picker") {
		t.Fatalf("fail: %v\n%s", err, out)
	}
}

// cairn chat runs a client tool by asking the person for its result: a
// result off the schema is refused and asked again, then one that fits
// completes the call.
func TestChatCompletesAClientTool(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "cairn.yaml")
	if err := os.WriteFile(cfg, []byte(strings.Replace(clientToolConfig, "store: sqlite:./cairn.db", "store: memory", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CAIRN_TEST_APPROVER", approverToken)
	chat := exec.Command(binary, "chat", "--config", cfg, "--agent", "files")
	chat.Dir = dir
	chat.Stdin = strings.NewReader("import my data\n{\"file\":\"a.csv\"}\n{\"path\":\"/data/a.csv\"}\n")
	out, err := chat.CombinedOutput()
	for _, want := range []string{`pick_file is yours to run, with {"accept":".csv"}`, "refused:", `picked: {"path":"/data/a.csv"}`} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("chat lacks %q: %v\n%.3000s", want, err, out)
		}
	}
}

// The page completes a client tool: its card says the caller runs it,
// Complete opens a form from the result schema, a result the server
// refuses shows at its field and changes nothing, one that fits completes
// the session.
func TestBrowserCompletesAClientTool(t *testing.T) {
	ctx := browser(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cairn.yaml"), []byte(clientToolConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CAIRN_TEST_APPROVER", approverToken)
	_, base := serve(t, filepath.Join(dir, "cairn.yaml"))
	run := stepper(t, ctx)
	code, s := apiCall(t, "POST", base+"/v1/sessions", approverToken, `{"agent":"files","input":"import my data"}`)
	if code != 201 || s["status"] != "paused" {
		t.Fatalf("%d %v", code, s)
	}
	id := s["id"].(string)
	var kind string
	run("sign in and see the call", signIn(base, approverToken),
		chromedp.WaitVisible(item(id)+" button.complete", chromedp.ByQuery),
		chromedp.TextContent(item(id)+" .kind", &kind, chromedp.ByQuery))
	if kind != "run this tool" {
		t.Fatalf("the card's kind says %q", kind)
	}
	run("a result the schema refuses", chromedp.Click(item(id)+" button.complete", chromedp.ByQuery),
		chromedp.WaitVisible(item(id)+` form.edit input[name="path"]`, chromedp.ByQuery),
		chromedp.SetValue(item(id)+` input[name="path"]`, "/data/a/very/long/path/to/the/file.csv", chromedp.ByQuery),
		chromedp.Click(item(id)+" form.edit button[type=submit]", chromedp.ByQuery),
		chromedp.WaitVisible(item(id)+` .field-error[data-field="path"]:not(:empty)`, chromedp.ByQuery))
	if _, again := apiCall(t, "GET", base+"/v1/sessions/"+id, approverToken, ""); again["status"] != "paused" {
		t.Fatalf("the refused result changed the session: %v", again)
	}
	run("a result that fits", chromedp.SetValue(item(id)+` input[name="path"]`, "/data/a.csv", chromedp.ByQuery),
		chromedp.Click(item(id)+" form.edit button[type=submit]", chromedp.ByQuery),
		chromedp.WaitNotPresent(item(id), chromedp.ByQuery))
	if done := waitSession(t, base, id, "completed"); done["output"] != `picked: {"path":"/data/a.csv"}` {
		t.Fatalf("output %v", done["output"])
	}
}

// A job hands its callback URL to the CI system and is still starting when
// the node running it gets kill -9; the CI system posts the result at once
// to another replica. The call is in doubt once the session is taken over,
// and the result settles it, once: 200 after the takeover (or 503 and then
// 200 on a retry), never a 409 that recorded nothing. The same through a
// REST complete naming the call's wait id (its tool_started event's).
func TestResultOfACallWhoseNodeDiedIsRecorded(t *testing.T) {
	for name, storeURL := range stores(t) {
		t.Run(name, func(t *testing.T) {
			c := waitsCluster(t, storeURL(t))
			t.Cleanup(func() { // the killed nodes' sleeping jobs
				for _, pgid := range jobs(t, c.dir, "pgid") {
					var pid int
					if _, err := fmt.Sscan(pgid, &pid); err == nil {
						syscall.Kill(-pid, syscall.SIGKILL)
					}
				}
			})
			// settle sends a result until it is taken, and says how each
			// try was answered.
			settle := func(send func() (int, map[string]any)) []int {
				var codes []int
				for len(codes) < 10 {
					code, body := send()
					codes = append(codes, code)
					if code == 200 {
						return codes
					}
					if code != 503 {
						t.Fatalf("answers %v: %v", codes, body)
					}
					time.Sleep(time.Second) // elapsed time: the 503's Retry-After
				}
				t.Fatalf("never taken: %v", codes)
				return codes
			}
			started := func(node int) (id string, url string) {
				t.Helper()
				before := len(jobs(t, c.dir, "slow_pipeline"))
				code, s := post(t, c.url(node)+"/v1/sessions", `{"agent":"slow","input":"build main","wait":false}`)
				if code != 201 {
					t.Fatalf("%d %v", code, s)
				}
				testwait.For(t, 10*time.Second, "the job to start", func() bool { return len(jobs(t, c.dir, "slow_pipeline")) > before })
				return s["id"].(string), jobs(t, c.dir, "slow_pipeline")[before]
			}
			ended := func(id string, want string) {
				t.Helper()
				var final map[string]any
				testwait.For(t, 20*time.Second, id+" to complete", func() bool {
					_, final = getStatus(c.url(2) + "/v1/sessions/" + id)
					return final["status"] == "completed"
				})
				evs := eventsOf(t, c.url(2), id)
				if final["output"] != want || eventCount(evs, "decision") != 1 || eventCount(evs, "tool_result") != 1 || !inDoubtIn(evs) {
					t.Fatalf("%s: %v; %d decisions, %d results, in doubt: %v", id, final["output"], eventCount(evs, "decision"), eventCount(evs, "tool_result"), inDoubtIn(evs))
				}
			}

			// Through the callback URL.
			id, url := started(0)
			c.nodes[0].Process.Kill()
			c.nodes[0].Wait()
			codes := settle(func() (int, map[string]any) { return callbackTo(t, c.url(1), url, `{"output":"passed"}`) })
			t.Logf("the callback after kill -9: %v", codes)
			ended(id, "CI: passed")
			if code, again := callbackTo(t, c.url(2), url, `{"output":"again"}`); code != 409 {
				t.Fatalf("a second callback: %d %v", code, again)
			}

			// Through REST complete, naming the wait id.
			id, _ = started(1)
			var wait string
			var seq any
			for _, ev := range eventsOf(t, c.url(2), id) {
				if ev["type"] == "tool_started" {
					wait, _ = ev["data"].(map[string]any)["wait_id"].(string)
					seq = ev["seq"]
				}
			}
			if wait == "" {
				t.Fatal("tool_started has no wait_id")
			}
			c.nodes[1].Process.Kill()
			c.nodes[1].Wait()
			body := fmt.Sprintf(`{"seq":%v,"decisions":[{"interrupt_id":%q,"action":"complete","output":"passed by REST"}]}`, seq, wait)
			codes = settle(func() (int, map[string]any) { return post(t, c.url(2)+"/v1/sessions/"+id+"/decisions", body) })
			t.Logf("REST complete after kill -9: %v", codes)
			ended(id, "CI: passed by REST")
		})
	}
}
