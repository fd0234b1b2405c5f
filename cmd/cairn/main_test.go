package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cairnhq/cairn/internal/testkit/fakeopenai"
	"github.com/cairnhq/cairn/internal/testkit/testwait"
)

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "cairn-bin")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "cairn")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build cairn: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

const crashConfig = `
store: sqlite:./state/cairn.db
models:
  demo:
    provider: scripted
    script:
      - tool_calls: [{name: deploy_code, arguments: {environment: production}}]
      - text: "done: {{.LastResult}}"
tools:
  deploy_code:
    parameters: {type: object, properties: {environment: {type: string}}, required: [environment]}
    command: ["sh", "-c", "cat >> runs.txt; echo >> runs.txt; echo deployed"]
    approval: always
agents:
  main: {model: demo, tools: [deploy_code]}
`

// serve starts `cairn serve` and returns its base URL once it listens.
func serve(t testing.TB, cfg string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(binary, "serve", "--config", cfg, "--addr", "127.0.0.1:0")
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	re := regexp.MustCompile(`^listening on (http://\S+)$`)
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			// Drained so the server never blocks on it; its last lines are
			// kept and shown when the test fails (why a request got 500).
			tail := &tailBuffer{max: 32 << 10}
			go func() { _, _ = io.Copy(tail, stderr) }()
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("the last of `cairn serve` %s's stderr:\n%s", m[1], tail.String())
				}
			})
			return cmd, m[1]
		}
	}
	t.Fatalf("server exited before listening: %v", cmd.Wait())
	return nil, ""
}

func post(t *testing.T, url, body string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, out
}

func TestPausedSessionSurvivesKill9(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "state"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "cairn.yaml")
	if err := os.WriteFile(cfg, []byte(crashConfig), 0o600); err != nil {
		t.Fatal(err)
	}

	cmd, base := serve(t, cfg)
	code, s := post(t, base+"/v1/sessions", `{"agent":"main","input":"Deploy to production."}`)
	if code != 201 || s["status"] != "paused" {
		t.Fatalf("%d %v", code, s)
	}
	if err := cmd.Process.Signal(os.Kill); err != nil { // kill -9
		t.Fatal(err)
	}
	cmd.Wait()

	_, base = serve(t, cfg)
	resp, err := http.Get(base + "/v1/sessions/" + s["id"].(string))
	if err != nil {
		t.Fatal(err)
	}
	var again map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&again); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if again["status"] != "paused" || again["seq"] != s["seq"] {
		t.Fatalf("after restart: %v", again)
	}
	in := s["interrupts"].([]any)[0].(map[string]any)
	code, done := post(t, base+"/v1/sessions/"+s["id"].(string)+"/decisions", fmt.Sprintf(`{"seq":%v,"decisions":[{"interrupt_id":%q,"action":"approve"}]}`, s["seq"], in["id"]))
	if code != 200 || done["status"] != "completed" || done["output"] != "done: deployed" {
		t.Fatalf("approve after restart: %d %v", code, done)
	}
	runs, _ := os.ReadFile(filepath.Join(dir, "runs.txt"))
	if lines := strings.Split(strings.TrimSpace(string(runs)), "\n"); len(lines) != 1 || lines[0] != `{"environment":"production"}` {
		t.Fatalf("runs.txt = %q, want the tool to have run exactly once", runs)
	}
}

func TestVersionAndBadConfig(t *testing.T) {
	out, err := exec.Command(binary, "version").Output()
	if err != nil || !strings.HasPrefix(string(out), "cairn ") {
		t.Fatalf("version: %q %v", out, err)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(cfg, []byte(strings.Replace(crashConfig, "approval: always", "approval: 'args.environment ==='", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, "serve", "--config", cfg)
	out, err = cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "bad.yaml:13: tools.deploy_code.approval") {
		t.Fatalf("bad config: err %v, output %s", err, out)
	}
	out, err = exec.Command(binary, "serve", "--config", filepath.Join("..", "..", "examples", "demo", "cairn.yaml"), "--addr", "0.0.0.0:0").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "non-loopback") {
		t.Fatalf("non-loopback without auth: err %v, output %s", err, out)
	}
}

func TestShutdownOnSIGTERM(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "state"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "cairn.yaml")
	if err := os.WriteFile(cfg, []byte(crashConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd, _ := serve(t, cfg)
	stop(t, cmd, os.Interrupt, 20*time.Second)
}

// stop signals a server and waits at most limit for it to exit cleanly;
// it returns how long the exit took.
func stop(t *testing.T, cmd *exec.Cmd, sig os.Signal, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	cmd.Process.Signal(sig)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit: %v", err)
		}
	case <-time.After(limit):
		t.Fatalf("the server did not stop within %v of %v", limit, sig)
	}
	return time.Since(start)
}

const inDoubtConfig = `
store: sqlite:./cairn.db
models:
  demo:
    provider: scripted
    script:
      - tool_calls: [{name: pay, arguments: {amount: 5}}]
      - text: "{{.LastResult}}"
tools:
  pay:
    parameters: {type: object, properties: {amount: {type: number}}}
    command: ["sh", "-c", "echo \"start $$ $CAIRN_IDEMPOTENCY_KEY\" >> runs.txt; exec sleep 30"]
    approval: always
agents:
  main: {model: demo, tools: [pay]}
`

func getJSON(t *testing.T, url string) map[string]any {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

// A crash (kill -9) while an approved command tool runs: after restart the
// call is in doubt, it has not run a second time, and rejecting it completes
// the session without running it.
func TestKill9WhileToolRunsLeavesCallInDoubt(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "cairn.yaml")
	if err := os.WriteFile(cfg, []byte(inDoubtConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	runsFile := filepath.Join(dir, "runs.txt")
	started := func() bool {
		b, _ := os.ReadFile(runsFile)
		return strings.HasSuffix(string(b), "\n")
	}
	cmd, base := serve(t, cfg)
	_, s := post(t, base+"/v1/sessions", `{"agent":"main","input":"pay"}`)
	id := s["id"].(string)
	if s["status"] != "paused" {
		t.Fatalf("start: %v", s)
	}
	approval := s["interrupts"].([]any)[0].(map[string]any)["id"]
	// Approve; the request hangs while the tool runs, and dies with the server.
	go func() {
		_, _ = http.Post(base+"/v1/sessions/"+id+"/decisions", "application/json",
			strings.NewReader(fmt.Sprintf(`{"seq":%v,"decisions":[{"interrupt_id":%q,"action":"approve"}]}`, s["seq"], approval)))
	}() // it dies with the server
	testwait.For(t, 20*time.Second, "the tool to start", started)
	b, _ := os.ReadFile(runsFile)
	var pid int
	var key string
	if _, err := fmt.Sscanf(string(b), "start %d %s", &pid, &key); err != nil {
		t.Fatalf("tool never started: %q", b)
	}
	// The orphaned tool lives in its own process group; end it with the test.
	t.Cleanup(func() { syscall.Kill(-pid, syscall.SIGKILL) })
	if !strings.HasPrefix(key, id+"/") {
		t.Fatalf("idempotency key %q does not belong to session %s", key, id)
	}
	cmd.Process.Signal(os.Kill)
	cmd.Wait()

	_, base = serve(t, cfg)
	var got map[string]any
	testwait.For(t, 20*time.Second, "the restarted server to pause the call in doubt", func() bool {
		got = getJSON(t, base+"/v1/sessions/"+id)
		return got["status"] == "paused"
	})
	ins, _ := got["interrupts"].([]any)
	if got["status"] != "paused" || len(ins) != 1 || ins[0].(map[string]any)["in_doubt"] != true {
		t.Fatalf("after restart: %v", got)
	}
	if n := strings.Count(string(mustRead(t, runsFile)), "start"); n != 1 {
		t.Fatalf("the tool started %d times", n)
	}
	in := ins[0].(map[string]any)
	// Every door draws the call in doubt from its ask: a warning, and the
	// choice to settle it (complete, fail) beside approve and reject; the
	// page shows them without code for it.
	ask, _ := in["ask"].(map[string]any)
	var offered []string
	for _, c := range ask["choices"].([]any) {
		offered = append(offered, c.(map[string]any)["action"].(string))
	}
	if !strings.Contains(fmt.Sprint(ask["warning"]), "may already have taken effect") || strings.Join(offered, ",") != "approve,reject,complete,fail" {
		t.Fatalf("the ask of a call in doubt: %v", ask)
	}
	run := stepper(t, browser(t))
	var warning string
	run("the page offers to settle it", chromedp.Navigate(base+"/#/sessions/"+id),
		chromedp.WaitVisible("#pending "+item(id)+" button.complete", chromedp.ByQuery),
		chromedp.WaitVisible("#pending "+item(id)+" button.fail", chromedp.ByQuery),
		chromedp.Text("#pending "+item(id)+" .warning", &warning, chromedp.ByQuery))
	if !strings.Contains(warning, "idempotency key "+key) {
		t.Fatalf("the page's warning: %q", warning)
	}
	code, done := post(t, base+"/v1/sessions/"+id+"/decisions", fmt.Sprintf(`{"seq":%v,"decisions":[{"interrupt_id":%q,"action":"reject","reason":"checked by hand: not paid"}]}`, got["seq"], in["id"]))
	if code != 200 || done["status"] != "completed" || !strings.Contains(done["output"].(string), "checked by hand: not paid") {
		t.Fatalf("reject: %d %v", code, done)
	}
	if n := strings.Count(string(mustRead(t, runsFile)), "start"); n != 1 {
		t.Fatalf("the tool started %d times", n)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The README's quick start: the demo config pauses for a production deploy
// and completes once approved.
func TestDemoQuickStart(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"cairn.yaml", "deploy.sh", "plan.sh"} {
		b := mustRead(t, filepath.Join("..", "..", "examples", "demo", name))
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	_, base := serve(t, filepath.Join(dir, "cairn.yaml"))
	code, s := post(t, base+"/v1/sessions", `{"agent":"main","input":"Deploy the latest build to production."}`)
	ins, _ := s["interrupts"].([]any)
	if code != 201 || s["status"] != "paused" || len(ins) != 1 {
		t.Fatalf("start: %d %v", code, s)
	}
	in := ins[0].(map[string]any)
	if in["message"] != "Deploy to production? This cannot be undone." {
		t.Fatalf("interrupt: %v", in)
	}
	inbox := getJSON(t, base+"/v1/interrupts?status=pending")
	if list, _ := inbox["interrupts"].([]any); len(list) != 1 {
		t.Fatalf("inbox: %v", inbox)
	}
	code, done := post(t, base+"/v1/sessions/"+s["id"].(string)+"/decisions", fmt.Sprintf(`{"seq":%v,"decisions":[{"interrupt_id":%q,"action":"approve"}]}`, s["seq"], in["id"]))
	if code != 200 || done["status"] != "completed" || !strings.HasPrefix(done["output"].(string), "Deployed build 1042 to production.") {
		t.Fatalf("approve: %d %v", code, done)
	}
	code, _ = post(t, base+"/v1/sessions/"+s["id"].(string)+"/decisions", fmt.Sprintf(`{"seq":%v,"decisions":[{"interrupt_id":%q,"action":"approve"}]}`, s["seq"], in["id"]))
	if code != 409 {
		t.Fatalf("second approve: %d, want 409", code)
	}
}

const stackConfig = `
store: sqlite:./cairn.db
models:
  fake: {provider: openai, model: fake-model, base_url: "BASE_URL"}
agents:
  main:
    model: fake
    instructions: agent=main
    subagents: [{agent: writer, tool: use_writer, mode: interactive}]
  writer:
    model: fake
    instructions: agent=writer
    subagents: [{agent: research, tool: use_research, mode: interactive}]
  research:
    model: fake
    instructions: agent=research
`

// stackModel plays main → writer → research through the OpenAI wire format.
func stackModel(r fakeopenai.Request) fakeopenai.Reply {
	agent := r.Messages[0].Text()
	last := r.Messages[len(r.Messages)-1]
	callWith := func(id, name string, args map[string]string) fakeopenai.Reply {
		b, _ := json.Marshal(args)
		return fakeopenai.Reply{ToolCalls: []fakeopenai.Call{{ID: id, Name: name, Arguments: string(b)}}}
	}
	switch agent {
	case "agent=main":
		if last.Role == "tool" {
			return fakeopenai.Reply{Content: "main: " + last.Text()}
		}
		return callWith("m1", "use_writer", map[string]string{"input": "draft"})
	case "agent=writer":
		if last.Role == "tool" {
			return callWith("w2", "complete", map[string]string{"result": "post from " + last.Text()})
		}
		return callWith("w1", "use_research", map[string]string{"input": "sources"})
	case "agent=research":
		if strings.Contains(last.Text(), "done") {
			return callWith("r1", "complete", map[string]string{"result": "research finished"})
		}
		return fakeopenai.Reply{Content: "research heard: " + last.Text()}
	}
	return fakeopenai.Reply{Content: "who am I? " + agent}
}

// Restart (kill -9) while paused inside a depth-3 interactive stack: the
// next message continues where it stopped.
func TestDepth3StackSurvivesKill9(t *testing.T) {
	fake := fakeopenai.Start(t, stackModel)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "cairn.yaml")
	if err := os.WriteFile(cfg, []byte(strings.Replace(stackConfig, "BASE_URL", fake.BaseURL(), 1)), 0o600); err != nil {
		t.Fatal(err)
	}

	cmd, base := serve(t, cfg)
	code, s := post(t, base+"/v1/sessions", `{"agent":"main","input":"write a post"}`)
	stack, _ := s["stack"].([]any)
	if code != 201 || s["status"] != "paused" || len(stack) != 3 || s["output"] != "research heard: sources" {
		t.Fatalf("start: %d %v", code, s)
	}
	in := s["interrupts"].([]any)[0].(map[string]any)
	if in["kind"] != "message" || in["text"] != "research heard: sources" || len(in["path"].([]any)) != 2 {
		t.Fatalf("interrupt: %v", in)
	}
	cmd.Process.Signal(os.Kill)
	cmd.Wait()

	_, base = serve(t, cfg)
	id := s["id"].(string)
	code, s = post(t, base+"/v1/sessions/"+id+"/messages", `{"text":"focus on 3.13"}`)
	if code != 200 || s["output"] != "research heard: focus on 3.13" || len(s["stack"].([]any)) != 3 {
		t.Fatalf("after restart: %d %v", code, s)
	}
	code, s = post(t, base+"/v1/sessions/"+id+"/messages", `{"text":"done"}`)
	if code != 200 || s["status"] != "completed" || s["output"] != "main: post from research finished" || len(s["stack"].([]any)) != 1 {
		t.Fatalf("cascade: %d %v", code, s)
	}
	// The user's messages to research never reached main or writer.
	for _, r := range fake.Requests() {
		if agent := r.Messages[0].Text(); agent != "agent=research" {
			for _, m := range r.Messages {
				if strings.Contains(m.Text(), "3.13") {
					t.Fatalf("%s saw the research conversation", agent)
				}
			}
		}
	}
}

// The CLI client: list, show (the audit timeline), approve.
func TestSessionsCommands(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"cairn.yaml", "deploy.sh", "plan.sh"} {
		if err := os.WriteFile(filepath.Join(dir, name), mustRead(t, filepath.Join("..", "..", "examples", "demo", name)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	_, base := serve(t, filepath.Join(dir, "cairn.yaml"))
	_, s := post(t, base+"/v1/sessions", `{"agent":"main","input":"Deploy the latest build to production."}`)
	id := s["id"].(string)
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(binary, append([]string{"sessions", "--server", base}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("cairn sessions %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	if out := run("list", "--status", "paused"); !strings.Contains(out, id) || !strings.Contains(out, "approval: deploy_code: Deploy to production?") || !strings.Contains(out, "approve [--args]") {
		t.Fatalf("list:\n%s", out)
	}
	// The deploy's preview (examples/demo/plan.sh, a diff) shows under what waits.
	if out := run("show", id); !strings.Contains(out, "        preview (diff):\n          --- production/release.yaml (running now)") ||
		!strings.Contains(out, "          +build: 1042\n") {
		t.Fatalf("show of a paused session lacks its preview:\n%s", out)
	}
	if out := run("approve", id, "--args", `{"environment":"staging"}`); !strings.Contains(out, id+": completed") {
		t.Fatalf("approve:\n%s", out)
	}
	if out, _ := getJSON(t, base+"/v1/sessions/"+id)["output"].(string); !strings.Contains(out, `it ran with {"environment":"staging"}`) || !strings.Contains(out, "Deployed build 1042 to staging") {
		t.Fatalf("output after an approval with other arguments: %q", out)
	}
	out := run("show", id)
	for _, want := range []string{"status completed", "approval_requested", "decision", "approve deploy_code by", `with {"environment":"staging"} (the model asked for`, "tool_started", "turn_completed"} {
		if !strings.Contains(out, want) {
			t.Fatalf("show lacks %q:\n%s", want, out)
		}
	}
	_, s2 := post(t, base+"/v1/sessions", `{"agent":"main","input":"Deploy the latest build to production."}`)
	id2 := s2["id"].(string)
	if out := run("reject", id2, "--reason", "freeze week", "--remember"); !strings.Contains(out, id2+": completed") {
		t.Fatalf("reject --remember:\n%s", out)
	}
	if got := getJSON(t, base+"/v1/sessions/"+id2); !strings.Contains(fmt.Sprint(got["remembered"]), "reason:freeze week") {
		t.Fatalf("remembered: %v", got["remembered"])
	}
	bad, err := exec.Command(binary, "sessions", "--server", base, "approve", id).CombinedOutput()
	if err == nil || !strings.Contains(string(bad), "no pending decision") {
		t.Fatalf("approve a completed session: %v %s", err, bad)
	}
}

func TestChat(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"cairn.yaml", "deploy.sh", "plan.sh"} {
		if err := os.WriteFile(filepath.Join(dir, name), mustRead(t, filepath.Join("..", "..", "examples", "demo", name)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	chat := func(input string, args ...string) string {
		cmd := exec.Command(binary, append([]string{"chat", "--config", filepath.Join(dir, "cairn.yaml")}, args...)...)
		cmd.Stdin = strings.NewReader(input)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("chat: %v\n%s", err, out)
		}
		return string(out)
	}
	out := chat("Deploy to production please\ny\n")
	if !strings.Contains(out, "approve? Deploy to production? This cannot be undone.") || !strings.Contains(out, "main> Deployed build 1042 to production.") ||
		!strings.Contains(out, "  preview (diff):\n") || !strings.Contains(out, "    -build: 1041\n    +build: 1042\n") {
		t.Fatalf("approve:\n%s", out)
	}
	out = chat("Deploy to production please\nnot today\n")
	if !strings.Contains(out, "main> I did not deploy. The user rejected this tool call: not today") {
		t.Fatalf("reject:\n%s", out)
	}
	// "never" refuses the tool for the rest of the session: the next
	// deploy is refused without asking, with the same reason.
	out = chat("Deploy to production please\nnever: not from this terminal\nDeploy again\n")
	if strings.Count(out, "approve?") != 1 || strings.Count(out, "main> I did not deploy. The user rejected this tool call: not from this terminal") != 2 {
		t.Fatalf("never:\n%s", out)
	}
	out = chat("Deploy to production please\n", "--yes")
	if strings.Contains(out, "approve?") || !strings.Contains(out, "main> Deployed build 1042 to production.") || !strings.Contains(out, "--yes: every approval") {
		t.Fatalf("--yes:\n%s", out)
	}
}

// The demo config shows an interactive sub-agent and a handoff with the
// scripted model alone: the concierge hands the user to the writer, which
// asks a question and reports back; the next message is handed off to
// billing, whose refund waits for approval.
func TestDemoNestingAndHandoff(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"cairn.yaml", "deploy.sh", "plan.sh"} {
		if err := os.WriteFile(filepath.Join(dir, name), mustRead(t, filepath.Join("..", "..", "examples", "demo", name)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(binary, "chat", "--config", filepath.Join(dir, "cairn.yaml"), "--agent", "concierge")
	cmd.Stdin = strings.NewReader("Please write the release notes.\nFor customers.\nAlso, I was charged twice.\nYes please.\ny\n")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("chat: %v\n%s", err, out)
	}
	want := []string{
		"you → concierge> ",
		"writer> Writer here. Who are the release notes for: customers or engineers?",
		"you → writer> ",
		"concierge> Here are your release notes: Build 1042: faster deploys and an approval inbox. Anything else?",
		"billing> Billing here. I see invoice INV-7 was charged twice. Shall I refund it?",
		"you → billing> ",
		"Refund invoice INV-7?",
		"billing> Refunded invoice INV-7. (Demo: no money moved.)",
	}
	rest := string(out)
	for _, w := range want {
		i := strings.Index(rest, w)
		if i < 0 {
			t.Fatalf("the conversation lacks %q (in order):\n%s", w, out)
		}
		rest = rest[i+len(w):]
	}
}

// chat --session continues a session paused earlier (by this or another
// process); --agent is checked at start.
func TestChatContinuesASession(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"cairn.yaml", "deploy.sh", "plan.sh"} {
		if err := os.WriteFile(filepath.Join(dir, name), mustRead(t, filepath.Join("..", "..", "examples", "demo", name)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	chat := func(input string, args ...string) (string, error) {
		cmd := exec.Command(binary, append([]string{"chat", "--config", filepath.Join(dir, "cairn.yaml")}, args...)...)
		cmd.Stdin = strings.NewReader(input)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := chat("Deploy to production please\n") // the input ends at the approval prompt
	m := regexp.MustCompile(`\(session (ses_[0-9a-f]+)`).FindStringSubmatch(out)
	if err != nil || m == nil || !strings.Contains(out, "running check_build…") || !strings.Contains(out, "check_build done (") {
		t.Fatalf("first chat: %v\n%s", err, out)
	}
	out, err = chat("y\n", "--session", m[1])
	if err != nil || !strings.Contains(out, "continuing session "+m[1]+" (agent main, paused)") || !strings.Contains(out, "main> Deployed build 1042 to production.") {
		t.Fatalf("continue: %v\n%s", err, out)
	}
	out, err = chat("/help\n/quit\n", "--agent", "mian")
	if err == nil || !strings.Contains(out, `unknown agent "mian"`) || !strings.Contains(out, `did you mean "main"?`) {
		t.Fatalf("--agent mian: %v\n%s", err, out)
	}
	out, _ = chat("/help\nDeploy to production please\nn\nfreeze week\n/session\n")
	if !strings.Contains(out, "/cancel all") || !strings.Contains(out, "main> I did not deploy. The user rejected this tool call: freeze week") {
		t.Fatalf("/help and n:\n%s", out)
	}
}

// The CLI does what the page does: start, send, cancel, tail, agents.
func TestCLIClientCommands(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"cairn.yaml", "deploy.sh", "plan.sh"} {
		if err := os.WriteFile(filepath.Join(dir, name), mustRead(t, filepath.Join("..", "..", "examples", "demo", name)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	_, base := serve(t, filepath.Join(dir, "cairn.yaml"))
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(binary, append(args[:1:1], append([]string{"--server", base}, args[1:]...)...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("cairn %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	if out := run("agents", "list"); !strings.Contains(out, "use_writer") || !strings.Contains(out, "interactive_agent → writer") || !strings.Contains(out, `args.environment == "production"`) {
		t.Fatalf("agents list:\n%s", out)
	}
	out := run("sessions", "start", "concierge", "Please write the release notes.")
	id := strings.SplitN(out, ":", 2)[0]
	if !strings.Contains(out, ": paused") || !strings.Contains(out, "Writer here.") {
		t.Fatalf("start:\n%s", out)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tail := exec.CommandContext(ctx, binary, "sessions", "--server", base, "tail", id)
	stdout, _ := tail.StdoutPipe()
	if err := tail.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()

	if out := run("sessions", "send", id, "For customers."); !strings.Contains(out, id+": completed") || !strings.Contains(out, "Here are your release notes") {
		t.Fatalf("send:\n%s", out)
	}
	var seen []string
	for l := range lines {
		seen = append(seen, l)
		if strings.Contains(l, "turn_completed") {
			break
		}
	}
	all := strings.Join(seen, "\n")
	if !strings.Contains(all, "session_started") || !strings.Contains(all, "frame_popped") || !strings.Contains(all, "turn_completed") {
		t.Fatalf("tail:\n%s", all)
	}
	cancel()
	tail.Wait()

	out = run("sessions", "start", "main", "Deploy the latest build to production.")
	id2 := strings.SplitN(out, ":", 2)[0]
	if out := run("sessions", "cancel", id2); !strings.Contains(out, id2+": cancelled") {
		t.Fatalf("cancel:\n%s", out)
	}
	// The record: chained, and signed at the cancelled turn's end.
	if out := run("sessions", "show", id2); strings.Contains(out, "<nil>") || !strings.Contains(out, "turn_cancelled") ||
		!regexp.MustCompile(`record  verified up to seq (\d+); signed checkpoint at seq (\d+), \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC by key k[0-9a-f]{16}\n`).MatchString(out) {
		t.Fatalf("show:\n%s", out)
	}
}

// The listen address comes from --addr, else CAIRN_ADDR; README.md,
// docs/config.md and docs/operations.md say so, and README.md how to
// watch the first build.
func TestListenAddress(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "cairn.yaml")
	if err := os.WriteFile(cfg, []byte("store: memory\nmodels: {demo: {provider: scripted, script: [{text: hi}]}}\nagents: {main: {model: demo}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	listen := func(env []string, args ...string) string {
		t.Helper()
		cmd := exec.Command(binary, append([]string{"serve", "--config", cfg}, args...)...)
		cmd.Env = append(os.Environ(), env...)
		stderr, _ := cmd.StderrPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { cmd.Process.Kill(); cmd.Wait() }()
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if url, ok := strings.CutPrefix(sc.Text(), "listening on "); ok {
				return url
			}
		}
		t.Fatalf("%v %v: never listened", env, args)
		return ""
	}
	port := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		return ln.Addr().String()
	}
	fromEnv := port()
	if got := listen([]string{"CAIRN_ADDR=" + fromEnv}); got != "http://"+fromEnv {
		t.Fatalf("with CAIRN_ADDR=%s: listening on %s", fromEnv, got)
	}
	fromFlag := port()
	if got := listen([]string{"CAIRN_ADDR=" + fromEnv}, "--addr", fromFlag); got != "http://"+fromFlag {
		t.Fatalf("--addr %s over CAIRN_ADDR: listening on %s", fromFlag, got)
	}
	for doc, wants := range map[string][]string{
		"../../README.md":          {"--addr HOST:PORT", "CAIRN_ADDR", "go build -v ./cmd/cairn"},
		"../../docs/config.md":     {"--addr HOST:PORT", "CAIRN_ADDR"},
		"../../docs/operations.md": {"--addr HOST:PORT", "CAIRN_ADDR"},
	} {
		b := mustRead(t, doc)
		for _, want := range wants {
			if !strings.Contains(string(b), want) {
				t.Errorf("%s does not say %q", doc, want)
			}
		}
	}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (w *tailBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b = append(w.b, p...)
	if len(w.b) > w.max {
		w.b = append(w.b[:0], w.b[len(w.b)-w.max:]...)
	}
	return len(p), nil
}

func (w *tailBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.b)
}
