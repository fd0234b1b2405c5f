package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cairnhq/cairn/internal/testkit/temporaltest"
	"github.com/cairnhq/cairn/internal/testkit/testwait"
)

// innerA2AConfig serves agent ops over A2A; its deploy needs approval and
// logs each run; the outer server's token is an approver here.
const innerA2AConfig = `
store: sqlite:./inner.db
auth:
  tokens:
    - {name: outer-server, token_env: CAIRN_TEST_OUTER_TOKEN, role: approver}
models:
  demo:
    provider: scripted
    script:
      - tool_calls: [{name: deploy, arguments: {environment: production}}]
      - text: "ops: {{.LastResult}}"
tools:
  deploy:
    parameters: {type: object, properties: {environment: {type: string}}, required: [environment]}
    command: ["sh", "-c", "echo $CAIRN_IDEMPOTENCY_KEY >> runs.log; echo deployed"]
    approval: always
agents:
  ops: {model: demo, tools: [deploy]}
a2a: {agents: [ops]}
`

// outerA2AConfig calls the inner server's ops as its sub-agent partner.
const outerA2AConfig = `
store: sqlite:./outer.db
models:
  demo:
    provider: scripted
    script:
      - tool_calls: [{name: ask_partner, arguments: {input: "ship production"}}]
      - text: "main: {{.LastResult}}"
agents:
  main: {model: demo, subagents: [{agent: partner}]}
  partner:
    a2a: {url: %q, headers: {Authorization: "Bearer ${CAIRN_TEST_OUTER_TOKEN}"}}
    description: The platform team's deploy agent.
`

// Cairn → Cairn over A2A, two cairn serve processes: the inner server's
// approval appears in the outer server's inbox with the path through both
// agents, is approved there, and the inner tool runs once.
// The outer server runs on the local driver, and on Temporal (its worker
// runs the call to the inner server).
func TestCairnToCairnOverA2A(t *testing.T) {
	t.Setenv("CAIRN_TEST_OUTER_TOKEN", "outer-server-token-0123456789")
	t.Run("local", func(t *testing.T) { cairnToCairn(t, "") })
	t.Run("temporal", func(t *testing.T) {
		cairnToCairn(t, fmt.Sprintf("driver: temporal\ntemporal: {host_port: %q, task_queue: outer}\n", temporaltest.Server(t)))
	})
}

// cairnToCairn runs the chain with the outer config after prefix (a
// driver); with driver: temporal a worker runs the outer turns.
func cairnToCairn(t *testing.T, prefix string) {
	innerDir, outerDir := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(innerDir, "cairn.yaml"), innerA2AConfig)
	_, inner := serve(t, filepath.Join(innerDir, "cairn.yaml"))
	outerCfg := filepath.Join(outerDir, "cairn.yaml")
	writeFile(t, outerCfg, prefix+fmt.Sprintf(outerA2AConfig, inner+"/a2a/ops"))
	if prefix != "" {
		startWorker(t, outerCfg)
	}
	_, outer := serve(t, outerCfg)

	code, s := post(t, outer+"/v1/sessions", `{"agent":"main","input":"ship it"}`)
	if code != http.StatusCreated || s["status"] != "paused" {
		t.Fatalf("the outer session: %d %v", code, s)
	}
	in, remote := remoteInterrupt(t, s, outer, "approval", "main/ask_partner>ops/deploy")
	if remote["url"] != inner+"/a2a/ops" || !strings.Contains(jsonText(in["ask"]), "deploy") {
		t.Fatalf("the outer interrupt: %v", in)
	}
	if b, _ := os.ReadFile(filepath.Join(innerDir, "runs.log")); len(b) != 0 {
		t.Fatal("the inner deploy ran before the approval")
	}
	t.Run("the web inbox", func(t *testing.T) {
		ctx := browser(t)
		var text string
		if err := chromedp.Run(ctx, chromedp.Navigate(outer+"/"), chromedp.WaitVisible(item(s["id"].(string)), chromedp.ByQuery),
			chromedp.TextContent(item(s["id"].(string)), &text, chromedp.ByQuery)); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"main › ask_partner › ops › deploy", "Asked by a remote agent (A2A): " + inner + "/a2a/ops", "Run tool deploy"} {
			if !strings.Contains(text, want) {
				t.Fatalf("the card lacks %q:\n%s", want, text)
			}
		}
	})

	code, s, err := decide(outer, s)
	if err != nil {
		t.Fatal(err)
	}
	if code != http.StatusOK || s["status"] != "completed" || s["output"] != "main: ops: deployed" {
		t.Fatalf("after the approval in the outer inbox: %d %v", code, s)
	}
	b, _ := os.ReadFile(filepath.Join(innerDir, "runs.log"))
	if runs := strings.Fields(string(b)); len(runs) != 1 {
		t.Fatalf("the inner deploy ran %d times, want once", len(runs))
	}
	// The outer timeline keeps the path through both agents and the
	// remote task; the inner one records the outer server as who decided.
	if tl := jsonText(eventsOf(t, outer, s["id"].(string))); !strings.Contains(tl, `{"agent":"ops","call_id":`) || !strings.Contains(tl, `"remote":{"task_id":`) {
		t.Fatalf("the outer timeline lacks the path or the remote task:\n%s", tl)
	}
	task := remote["task_id"].(string)
	req, _ := http.NewRequest("GET", inner+"/v1/sessions/"+task+"/events", nil)
	var resp *http.Response
	req.Header.Set("Authorization", "Bearer outer-server-token-0123456789")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var innerEvents struct{ Events []map[string]any }
	if err := json.NewDecoder(resp.Body).Decode(&innerEvents); err != nil {
		t.Fatal(err)
	}
	if tl := jsonText(innerEvents.Events); !strings.Contains(tl, `"name":"outer-server"`) {
		t.Fatalf("the inner decision is not the outer server's:\n%s", tl)
	}
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// remoteInterrupt is the one interrupt of paused session s, which a
// remote agent raised: of kind, with a path through the remote agent, and
// in the inbox at base (another replica, perhaps); and its remote task.
func remoteInterrupt(t *testing.T, s map[string]any, base, kind, path string) (in, remote map[string]any) {
	t.Helper()
	in = s["interrupts"].([]any)[0].(map[string]any)
	remote, _ = in["remote"].(map[string]any)
	if in["kind"] != kind || remote == nil || remote["task_id"] == "" {
		t.Fatalf("the interrupt is not a remote %s: %v", kind, in)
	}
	if got := pathText(in["path"]); got != path {
		t.Fatalf("the path %s does not go through the remote agent (%s)", got, path)
	}
	inbox, _ := getJSON(t, base+"/v1/interrupts")["interrupts"].([]any)
	if len(inbox) != 1 || inbox[0].(map[string]any)["id"] != in["id"] {
		t.Fatalf("the inbox at %s: %v", base, inbox)
	}
	return in, remote
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func pathText(v any) string {
	var steps []string
	for _, p := range v.([]any) {
		m := p.(map[string]any)
		steps = append(steps, fmt.Sprint(m["agent"], "/", m["tool"]))
	}
	return strings.Join(steps, ">")
}

// remoteJSConfig calls the JavaScript SDK's booking agent as partner, on a
// store shared by replicas.
const remoteJSConfig = `
store: %s
lease: 3s
models:
  demo:
    provider: scripted
    script:
      - tool_calls: [{name: ask_partner, arguments: {input: "a table for two"}}]
      - text: "main: {{.LastResult}}"
agents:
  main: {model: demo, subagents: [{agent: partner}]}
  partner:
    a2a: {url: %q}
`

// jsAgent starts the booking agent of server/testdata/clients/
// a2a-server.mjs (the official @a2a-js/sdk server) and returns its URL.
func jsAgent(t *testing.T, env ...string) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed (Node 20; .ci/run installs it)")
	}
	dir, _ := filepath.Abs(filepath.Join("..", "..", "server", "testdata", "clients"))
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@a2a-js", "sdk")); err != nil {
		t.Skip("@a2a-js/sdk is not installed: (cd server/testdata/clients && npm ci); .ci/run does it")
	}
	cmd := exec.Command(node, filepath.Join(dir, "a2a-server.mjs"))
	cmd.Env = append(os.Environ(), env...)
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if url, ok := strings.CutPrefix(sc.Text(), "listening on "); ok {
			go func() { _, _ = io.Copy(io.Discard, out) }()
			return url
		}
	}
	t.Fatalf("the JavaScript agent exited before listening: %v", cmd.Wait())
	return ""
}

// A remote agent on the JavaScript SDK asks for input: its question is an
// interrupt of the calling session with the path through it; the Cairn
// node that holds the call is killed (-9) after the question; the answer,
// given through REST on another replica, reaches the remote task exactly
// once (the remote counts) and its task completes.
func TestRemoteJSAgentAnsweredAfterKill9(t *testing.T) {
	agent := jsAgent(t)
	for name, store := range stores(t) {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := filepath.Join(dir, "cairn.yaml")
			writeFile(t, cfg, fmt.Sprintf(remoteJSConfig, store(t), agent))
			a, urlA := serve(t, cfg)
			_, urlB := serve(t, cfg)
			before := jsAnswers(t, agent)

			code, s := post(t, urlA+"/v1/sessions", `{"agent":"main","input":"book dinner"}`)
			if code != http.StatusCreated || s["status"] != "paused" {
				t.Fatalf("the session: %d %v", code, s)
			}
			in, remote := remoteInterrupt(t, s, urlB, "input", "main/ask_partner>booking/a2a")
			if in["question"] != "Which date?" || remote["url"] != agent {
				t.Fatalf("the interrupt: %v", in)
			}

			if err := a.Process.Kill(); err != nil { // kill -9, after the question, before the answer
				t.Fatal(err)
			}
			a.Wait()
			body := fmt.Sprintf(`{"seq":%v,"decisions":[{"interrupt_id":%q,"action":"answer","text":"May 3"}]}`, s["seq"], in["id"])
			code, s = post(t, urlB+"/v1/sessions/"+s["id"].(string)+"/decisions", body)
			if code != http.StatusOK || s["status"] != "completed" || s["output"] != "main: booked for May 3" {
				t.Fatalf("the answer on the other replica: %d %v", code, s)
			}
			if n := jsAnswers(t, agent) - before; n != 1 {
				t.Fatalf("the remote agent got the answer %d times, want once", n)
			}
		})
	}
}

// jsAnswers is how many answers the JavaScript agent got.
func jsAnswers(t *testing.T, url string) int { return jsCount(t, url, "answers") }

// jsCount is one of the JavaScript agent's counts: answers, tasks.
func jsCount(t *testing.T, url, what string) int {
	t.Helper()
	n, _ := getJSON(t, url+"/count")[what].(float64)
	return int(n)
}

// kill -9 of the node whose call is waiting for the remote task to stop
// working, before anything was asked: another replica takes the session
// over, runs the call again, finds the task the first run started (by the
// call's context) and goes on with it — one remote task, its question asked
// once, answered once.
func TestRemoteTaskFoundAgainAfterKill9(t *testing.T) {
	agent := jsAgent(t, "A2A_SLOW_MS=4000")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "cairn.yaml")
	writeFile(t, cfg, fmt.Sprintf(remoteJSConfig, "sqlite:"+filepath.Join(dir, "shared.db"), agent))
	a, urlA := serve(t, cfg)
	_, urlB := serve(t, cfg)

	code, s := post(t, urlA+"/v1/sessions", `{"agent":"main","input":"book dinner","wait":false}`)
	if code != http.StatusCreated {
		t.Fatalf("the session: %d %v", code, s)
	}
	id := s["id"].(string)
	testwait.For(t, 20*time.Second, "the remote task to start", func() bool { return jsCount(t, agent, "tasks") == 1 })
	if err := a.Process.Kill(); err != nil { // kill -9 while the remote task works
		t.Fatal(err)
	}
	a.Wait()
	testwait.For(t, 60*time.Second, "the other replica to take the call over and pause", func() bool {
		return getJSON(t, urlB+"/v1/sessions/"+id)["status"] == "paused"
	})
	s = getJSON(t, urlB+"/v1/sessions/"+id)
	in, _ := remoteInterrupt(t, s, urlB, "input", "main/ask_partner>booking/a2a")
	if n := jsCount(t, agent, "tasks"); n != 1 {
		t.Fatalf("the remote agent started %d tasks, want one", n)
	}
	body := fmt.Sprintf(`{"seq":%v,"decisions":[{"interrupt_id":%q,"action":"answer","text":"May 4"}]}`, s["seq"], in["id"])
	code, s = post(t, urlB+"/v1/sessions/"+id+"/decisions", body)
	if code != http.StatusOK || s["status"] != "completed" || s["output"] != "main: booked for May 4" || jsAnswers(t, agent) != 1 {
		t.Fatalf("the answer: %d %v, %d answers", code, s, jsAnswers(t, agent))
	}
}
