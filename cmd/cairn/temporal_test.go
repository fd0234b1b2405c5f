package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
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

	"github.com/cairnhq/cairn/internal/testkit/temporaltest"
	"github.com/cairnhq/cairn/internal/testkit/testwait"
)

var temporalFull = flag.Bool("temporal.full", false, "run the full Temporal fault counts (kill -9 of a worker mid-tool ×10)")

// worker starts `cairn worker` and returns once it polls.
func startWorker(t *testing.T, cfg string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(binary, "worker", "--config", cfg)
	cmd.Dir = filepath.Dir(cfg)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	sc := bufio.NewScanner(stderr)
	var said []string // what it wrote, for a worker that exits
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "worker ready") {
			go func() { _, _ = io.Copy(io.Discard, stderr) }() // drained so the server never blocks on it
			return cmd
		}
		said = append(said, sc.Text())
	}
	t.Fatalf("the worker exited before it was ready: %v\n%s", cmd.Wait(), strings.Join(said, "\n"))
	return nil
}

// temporalConfig: a deploy tool that needs approval, logs its start and
// end, and takes 1.5 s; a 3 s approval deadline on another tool, which
// reminds after 1 s and escalates 1 s before it.
const temporalConfig = `
store: %s
driver: temporal
temporal: {host_port: "%s", task_queue: %s, heartbeat: 2s, max_history: 20}   # every session continues as new at its first pause
models:
  demo:
    provider: scripted
    script:
      - tool_calls: [{name: deploy, arguments: {environment: production}}]
      - text: "done: {{.LastResult}}"
    scripts:
      hasty:
        - tool_calls: [{name: hurry, arguments: {}}]
        - text: "{{.LastResult}}"
tools:
  deploy:
    parameters: {type: object, properties: {environment: {type: string}}, required: [environment]}
    command: ["sh", "-c", "echo \"start $CAIRN_IDEMPOTENCY_KEY $$\" >> runs.txt; sleep 1.5; echo \"end $CAIRN_IDEMPOTENCY_KEY\" >> runs.txt; echo deployed"]
    approval: always
  hurry:
    command: ["sh", "-c", "echo hurried"]
    approval: always
    approval_ttl: 3s
    escalation: [{after: 1s, remind: true}, {before_expiry: 1s, escalate_to: [leads]}]
    on_expiry: {action: reject, reason: "Nobody hurried in time."}
agents:
  main: {model: demo, tools: [deploy]}
  hasty: {model: demo, tools: [hurry]}
`

type temporalSetup struct {
	dir, cfg string
}

func newTemporalSetup(t *testing.T, storeURL string) *temporalSetup {
	addr := temporaltest.Server(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "cairn.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(temporalConfig, storeURL, addr, "q"+fmt.Sprint(time.Now().UnixNano()))), 0o600); err != nil {
		t.Fatal(err)
	}
	return &temporalSetup{dir: dir, cfg: cfg}
}

// One config switch and a running Temporal server: the HTTP API, the inbox
// and the events work as on SQLite; a stale seq and 15 of 16 concurrent
// decisions are refused; the tool runs once.
func TestTemporalDriverServesTheAPI(t *testing.T) {
	for name, storeURL := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ts := newTemporalSetup(t, storeURL(t))
			startWorker(t, ts.cfg)
			_, url := serve(t, ts.cfg)
			code, s := post(t, url+"/v1/sessions", `{"agent":"main","input":"deploy"}`)
			if code != 201 || s["status"] != "paused" {
				t.Fatalf("create: %d %v", code, s)
			}
			id := s["id"].(string)
			inbox := getJSON(t, url+"/v1/interrupts")
			items, _ := inbox["interrupts"].([]any)
			if len(items) != 1 || items[0].(map[string]any)["session_id"] != id {
				t.Fatalf("inbox: %v", inbox)
			}
			in := s["interrupts"].([]any)[0].(map[string]any)["id"].(string)
			live := followSSE(t, url, id) // the SSE stream, fed from the store's mirror
			body := func(seq any) string {
				return fmt.Sprintf(`{"seq":%v,"decisions":[{"interrupt_id":%q,"action":"approve"}]}`, seq, in)
			}
			if code, _ := post(t, url+"/v1/sessions/"+id+"/decisions", body(s["seq"].(float64)-1)); code != 409 {
				t.Fatalf("stale seq: %d", code)
			}
			var wg sync.WaitGroup
			codes := make(chan int, 16)
			for range 16 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					resp, err := http.Post(url+"/v1/sessions/"+id+"/decisions", "application/json", strings.NewReader(body(s["seq"])))
					if err != nil {
						t.Error(err)
						return
					}
					resp.Body.Close()
					codes <- resp.StatusCode
				}()
			}
			wg.Wait()
			close(codes)
			count := map[int]int{}
			for c := range codes {
				count[c]++
			}
			if count[200] != 1 || count[409] != 15 {
				t.Fatalf("16 concurrent decisions: %v, want one 200 and fifteen 409", count)
			}
			done := getJSON(t, url+"/v1/sessions/"+id)
			if done["status"] != "completed" || done["output"] != "done: deployed" {
				t.Fatalf("after the decision: %v", done)
			}
			var types []string
			for _, ev := range eventsOf(t, url, id) {
				types = append(types, ev["type"].(string))
			}
			if got := strings.Join(types, " "); got != "session_started user_message model_response approval_requested turn_paused decision tool_started tool_result model_response turn_completed" {
				t.Fatalf("events: %s", got)
			}
			if starts := strings.Count(string(mustRead(t, filepath.Join(ts.dir, "runs.txt"))), "start "); starts != 1 {
				t.Fatalf("the tool started %d times", starts)
			}
			select {
			case seqs := <-live:
				if len(seqs) != 10 || seqs[0] != 1 || seqs[9] != 10 {
					t.Fatalf("SSE delivered seqs %v, want 1…10", seqs)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the SSE stream did not reach turn_completed")
			}
			// A fork of the pause (a new workflow from its state) decides its
			// own way; the tool does not run again.
			code, fork := post(t, url+"/v1/sessions/"+id+"/fork", fmt.Sprintf(`{"seq":%v}`, s["seq"]))
			if code != 201 || fork["status"] != "paused" {
				t.Fatalf("fork: %d %v", code, fork)
			}
			forkIn := fork["interrupts"].([]any)[0].(map[string]any)["id"].(string)
			code, forked := post(t, url+"/v1/sessions/"+fork["id"].(string)+"/decisions", fmt.Sprintf(`{"seq":%v,"decisions":[{"interrupt_id":%q,"action":"reject","reason":"not now"}]}`, fork["seq"], forkIn))
			if code != 200 || forked["status"] != "completed" || !strings.Contains(forked["output"].(string), "not now") {
				t.Fatalf("the fork decided: %d %v", code, forked)
			}
			if starts := strings.Count(string(mustRead(t, filepath.Join(ts.dir, "runs.txt"))), "start "); starts != 1 {
				t.Fatalf("after the fork the tool started %d times", starts)
			}
			// Cancel: a paused session cancelled through an update.
			code, other := post(t, url+"/v1/sessions", `{"agent":"main","input":"deploy again"}`)
			if code != 201 || other["status"] != "paused" {
				t.Fatalf("second session: %d %v", code, other)
			}
			if code, c := post(t, url+"/v1/sessions/"+other["id"].(string)+"/cancel", `{"scope":"all"}`); code != 200 || c["status"] != "cancelled" {
				t.Fatalf("cancel: %d %v", code, c)
			}
			if code, _ := post(t, url+"/v1/sessions/"+other["id"].(string)+"/cancel", `{"scope":"sideways"}`); code != 400 {
				t.Fatalf("a bad cancel scope: %d, want 400", code)
			}
		})
	}
}

// The demo's nesting and handoff (interactive sub-agent, handoff, an
// approval inside it) through `cairn chat` on Temporal: the same
// conversation as with the local driver.
func TestTemporalNestingAndHandoff(t *testing.T) {
	addr := temporaltest.Server(t)
	dir := t.TempDir()
	for _, name := range []string{"cairn.yaml", "deploy.sh", "plan.sh"} {
		if err := os.WriteFile(filepath.Join(dir, name), mustRead(t, filepath.Join("..", "..", "examples", "demo", name)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cfg := filepath.Join(dir, "cairn.yaml")
	demo := string(mustRead(t, cfg))
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("driver: temporal\ntemporal: {host_port: %q, task_queue: demo}\n", addr)+demo), 0o600); err != nil {
		t.Fatal(err)
	}
	startWorker(t, cfg)
	cmd := exec.Command(binary, "chat", "--config", cfg, "--agent", "concierge")
	cmd.Stdin = strings.NewReader("Please write the release notes.\nFor customers.\nAlso, I was charged twice.\nYes please.\ny\n")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("chat: %v\n%s", err, out)
	}
	rest := string(out)
	for _, w := range []string{
		"writer> Writer here. Who are the release notes for: customers or engineers?",
		"concierge> Here are your release notes: Build 1042: faster deploys and an approval inbox. Anything else?",
		"billing> Billing here. I see invoice INV-7 was charged twice. Shall I refund it?",
		"Refund invoice INV-7?",
		"billing> Refunded invoice INV-7. (Demo: no money moved.)",
	} {
		i := strings.Index(rest, w)
		if i < 0 {
			t.Fatalf("the conversation lacks %q (in order):\n%s", w, out)
		}
		rest = rest[i+len(w):]
	}
}

// kill -9 of the worker while approved tools run: after a new worker
// starts, every call is in doubt (or completed, if it had finished), and
// no tool started twice.
func TestTemporalWorkerKill9MidTool(t *testing.T) {
	ts := newTemporalSetup(t, "sqlite:"+filepath.Join(t.TempDir(), "t.db"))
	w := startWorker(t, ts.cfg)
	_, url := serve(t, ts.cfg)
	rounds, perRound := 2, 5
	if *temporalFull {
		rounds = 10
	}
	starts := regexp.MustCompile(`(?m)^start (\S+)`)
	if err := os.WriteFile(filepath.Join(ts.dir, "runs.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for round := range rounds {
		before := len(starts.FindAllString(string(mustRead(t, filepath.Join(ts.dir, "runs.txt"))), -1))
		var ids []string
		var wg sync.WaitGroup
		for range perRound {
			code, s := post(t, url+"/v1/sessions", `{"agent":"main","input":"deploy"}`)
			if code != 201 {
				t.Fatalf("create: %d %v", code, s)
			}
			ids = append(ids, s["id"].(string))
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _, _ = decide(url, s) // answers once the turn pauses again (in doubt) or ends; the session is checked below
			}()
		}
		testwait.For(t, 20*time.Second, fmt.Sprintf("round %d's tools to start", round), func() bool {
			return len(starts.FindAllString(string(mustRead(t, filepath.Join(ts.dir, "runs.txt"))), -1))-before == perRound
		})
		w.Process.Signal(syscall.SIGKILL)
		w.Wait()
		killed := time.Now()
		w = startWorker(t, ts.cfg)
		wg.Wait()
		for _, id := range ids {
			s := getJSON(t, url+"/v1/sessions/"+id)
			ins, _ := s["interrupts"].([]any)
			inDoubt := len(ins) == 1 && ins[0].(map[string]any)["in_doubt"] == true
			if !(s["status"] == "paused" && inDoubt) && s["status"] != "completed" {
				t.Fatalf("round %d, session %s: %v, want in doubt or completed", round, id, s)
			}
		}
		t.Logf("round %d: %d calls cut off; all in doubt %.1fs after the kill", round, perRound, time.Since(killed).Seconds())
	}
	for key, n := range countStarts(string(mustRead(t, filepath.Join(ts.dir, "runs.txt")))) {
		if n != 1 {
			t.Fatalf("the call with idempotency key %s started %d times", key, n)
		}
	}
}

func countStarts(runs string) map[string]int {
	out := map[string]int{}
	for _, line := range strings.Split(runs, "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "start" {
			out[f[1]]++
		}
	}
	return out
}

// The worker dies while the session waits for a person: nothing is lost;
// the decision, sent while no worker runs, completes once one returns.
// An approval deadline that passes while no worker runs acts when one
// returns (a durable timer).
func TestTemporalWorkerGoneWhileWaiting(t *testing.T) {
	ts := newTemporalSetup(t, "sqlite:"+filepath.Join(t.TempDir(), "t.db"))
	w := startWorker(t, ts.cfg)
	_, url := serve(t, ts.cfg)
	_, s := post(t, url+"/v1/sessions", `{"agent":"main","input":"deploy"}`)
	_, hasty := post(t, url+"/v1/sessions", `{"agent":"hasty","input":"hurry"}`)
	if s["status"] != "paused" || hasty["status"] != "paused" {
		t.Fatalf("before the kill: %v %v", s, hasty)
	}
	w.Process.Signal(syscall.SIGKILL)
	w.Wait()
	type answer struct {
		code int
		s    map[string]any
	}
	decided := make(chan answer, 1)
	go func() {
		code, out, err := decide(url, s)
		if err != nil {
			t.Error(err)
		}
		decided <- answer{code, out}
	}()
	time.Sleep(4 * time.Second) // elapsed time: past the 3 s deadline and its reminder and escalation, with no worker
	if got := getJSON(t, url+"/v1/sessions/"+hasty["id"].(string)); got["status"] != "paused" {
		t.Fatalf("with no worker, the expired approval's session is %v", got["status"])
	}
	startWorker(t, ts.cfg)
	select {
	case a := <-decided:
		if a.code != 200 || a.s["status"] != "completed" || a.s["output"] != "done: deployed" {
			t.Fatalf("the decision sent while no worker ran: %d %v", a.code, a.s)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the decision did not complete after the worker returned")
	}
	var got map[string]any
	testwait.For(t, 15*time.Second, "the deadline that passed while no worker ran to act", func() bool {
		got = getJSON(t, url+"/v1/sessions/"+hasty["id"].(string))
		return got["status"] == "completed"
	})
	if out, _ := got["output"].(string); !strings.Contains(out, "approval expired") || !strings.Contains(out, "Nobody hurried in time.") {
		t.Fatalf("the expired approval: %v", got)
	}
	// The reminder, the escalation and the outcome, each once, with its rule.
	counts := map[string]int{}
	for _, ev := range eventsOf(t, url, hasty["id"].(string)) {
		typ := ev["type"].(string)
		counts[typ]++
		if data, _ := ev["data"].(map[string]any); typ == "decision" && data["rule"] != "tools.hurry.on_expiry" {
			t.Errorf("the decision at expiry: %v", data)
		}
	}
	if counts["interrupt_reminded"] != 1 || counts["interrupt_escalated"] != 1 || counts["decision"] != 1 {
		t.Fatalf("the hasty session's events: %v", counts)
	}
}

// On the Temporal driver, a standing rule granted with a decision decides
// the next call without a pause (read in the model call's activity, so
// the workflow's history holds it), and revoked, decides nothing.
func TestTemporalStandingRule(t *testing.T) {
	ts := newTemporalSetup(t, "sqlite:"+filepath.Join(t.TempDir(), "shared.db"))
	startWorker(t, ts.cfg)
	_, url := serve(t, ts.cfg)
	code, s := post(t, url+"/v1/sessions", `{"agent":"main","input":"deploy"}`)
	if code != 201 || s["status"] != "paused" {
		t.Fatalf("create: %d %v", code, s)
	}
	in := s["interrupts"].([]any)[0].(map[string]any)["id"].(string)
	code, s = post(t, url+"/v1/sessions/"+s["id"].(string)+"/decisions",
		fmt.Sprintf(`{"seq":%v,"decisions":[{"interrupt_id":%q,"action":"approve","rule":{"if":"args.environment == 'production'"}}]}`, s["seq"], in))
	if code != 200 {
		t.Fatalf("grant: %d %v", code, s)
	}
	rules := getJSON(t, url+"/v1/rules")["rules"].([]any)
	if len(rules) != 1 {
		t.Fatalf("rules: %v", rules)
	}
	id := rules[0].(map[string]any)["id"].(string)
	code, next := post(t, url+"/v1/sessions", `{"agent":"main","input":"deploy"}`)
	if code != 201 || next["status"] != "completed" {
		t.Fatalf("a call the rule covers: %d %v", code, next)
	}
	evs := getJSON(t, url+"/v1/sessions/"+next["id"].(string)+"/events")["events"].([]any)
	var ruled bool
	for _, ev := range evs {
		if e := ev.(map[string]any); e["type"] == "decision" && e["data"].(map[string]any)["rule"] == id {
			ruled = true
		}
	}
	if !ruled {
		t.Fatalf("no decision by %s in %v", id, evs)
	}
	req, _ := http.NewRequest("DELETE", url+"/v1/rules/"+id, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("revoke: %v %v", err, resp)
	}
	resp.Body.Close()
	if code, after := post(t, url+"/v1/sessions", `{"agent":"main","input":"deploy"}`); code != 201 || after["status"] != "paused" {
		t.Fatalf("a call after the revocation: %d %v", code, after)
	}
}
