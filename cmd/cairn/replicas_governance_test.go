package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/testkit/temporaltest"
	"github.com/cairnhq/cairn/internal/testkit/testwait"
)

// fourEyesConfig: a refund that needs three distinct members of finance,
// sixteen people in acme's finance, a second token of p00's (one subject),
// and x00, in finance of another tenant.
func fourEyesConfig(storeURL, extra string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "store: %s\nlease: 3s\n%sauth:\n  tokens:\n", storeURL, extra)
	for i := range 16 {
		fmt.Fprintf(&b, "    - {name: p%02d, token_env: P%02d_TOKEN, role: approver, groups: [finance], tenant: acme}\n", i, i)
	}
	b.WriteString(`    - {name: p00-phone, token_env: P00_PHONE_TOKEN, role: approver, subject: p00, groups: [finance], tenant: acme}
    - {name: x00, token_env: X00_TOKEN, role: approver, groups: [finance], tenant: globex}
models:
  demo:
    provider: scripted
    script:
      - tool_calls: [{name: refund, arguments: {amount: 5000}}]
      - text: "done: {{.LastResult}}"
tools:
  refund:
    parameters: {type: object, properties: {amount: {type: number}}, required: [amount]}
    command: ["sh", "-c", "echo \"ran $CAIRN_IDEMPOTENCY_KEY\" >> runs.txt; echo refunded"]
    approval: always
    approvers: {groups: [finance], count: 3}
agents:
  main: {model: demo, tools: [refund]}
`)
	return b.String()
}

func fourEyesToken(name string) string { return name + "-token-0123456789abcdef" }

// Four-eyes over three `cairn serve` replicas on one store: sixteen people
// approve at once (and p00 a second time, through another token of the
// same subject); the tool runs once, after exactly three distinct
// approvals; every other request is refused as already approved or
// already decided, none fails otherwise. Then, one at a time: the same
// person twice is 409 already_approved and counts once.
func TestReplicasFourEyes(t *testing.T) {
	for name, storeURL := range stores(t) {
		t.Run(name, func(t *testing.T) {
			dir := fourEyesSetup(t, fourEyesConfig(storeURL(t), ""))
			urls := make([]string, 3)
			for i := range urls {
				_, urls[i] = serve(t, filepath.Join(dir, "cairn.yaml"))
			}
			fourEyes(t, dir, urls)
		})
	}
}

// The same on the Temporal driver: a worker runs the workflows, two
// `cairn serve` send the approvals as updates, whose validator applies the
// engine's step (and its decision point) to the workflow's state.
func TestTemporalFourEyes(t *testing.T) {
	addr := temporaltest.Server(t)
	extra := fmt.Sprintf("driver: temporal\ntemporal: {host_port: %q, task_queue: q%d}\n", addr, time.Now().UnixNano())
	dir := fourEyesSetup(t, fourEyesConfig("sqlite:"+filepath.Join(t.TempDir(), "shared.db"), extra))
	cfg := filepath.Join(dir, "cairn.yaml")
	startWorker(t, cfg)
	urls := make([]string, 2)
	for i := range urls {
		_, urls[i] = serve(t, cfg)
	}
	fourEyes(t, dir, []string{urls[0], urls[1], urls[0]})
}

// fourEyesSetup writes the config in a new directory and sets the people's
// tokens in the environment the servers inherit.
func fourEyesSetup(t *testing.T, config string) string {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cairn.yaml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range append(fourEyesPeople(), "x00") {
		t.Setenv(strings.ToUpper(strings.ReplaceAll(p, "-", "_"))+"_TOKEN", fourEyesToken(p))
	}
	return dir
}

func fourEyesPeople() []string {
	people := []string{"p00-phone"}
	for i := range 16 {
		people = append(people, fmt.Sprintf("p%02d", i))
	}
	return people
}

// fourEyes runs the scenario against three server URLs (the runs of the
// tool are counted in dir/runs.txt).
func fourEyes(t *testing.T, dir string, urls []string) {
	people := fourEyesPeople()
	runs := func() int {
		b, _ := os.ReadFile(filepath.Join(dir, "runs.txt"))
		return strings.Count(string(b), "ran ")
	}
	start := func() (id string, seq int64, interrupt string) {
		_, s := apiCall(t, "POST", urls[0]+"/v1/sessions", fourEyesToken("p00"), `{"agent":"main","input":"refund"}`)
		if s["status"] != "paused" {
			t.Fatalf("not paused: %v", s)
		}
		return s["id"].(string), int64(s["seq"].(float64)), s["interrupts"].([]any)[0].(map[string]any)["id"].(string)
	}
	approve := func(url, who, id string, seq int64, interrupt string) (int, string) {
		body := fmt.Sprintf(`{"seq":%d,"decisions":[{"interrupt_id":%q,"action":"approve"}]}`, seq, interrupt)
		req, _ := http.NewRequest("POST", url+"/v1/sessions/"+id+"/decisions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+fourEyesToken(who))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return 0, ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	id, seq, interrupt := start()
	// x00, of another tenant, finds no such session on any replica.
	for _, url := range urls {
		if status, body := approve(url, "x00", id, seq, interrupt); status != 404 || !strings.Contains(body, `"not_found"`) {
			t.Errorf("x00 (another tenant) at %s: %d %s", url, status, body)
		}
		if _, list := apiCall(t, "GET", url+"/v1/interrupts", fourEyesToken("x00"), ""); len(list["interrupts"].([]any)) != 0 {
			t.Errorf("x00's inbox at %s: %v", url, list)
		}
	}
	type answer struct {
		who    string
		status int
		body   string
	}
	answers := make(chan answer, len(people))
	for i, who := range people {
		go func() {
			status, body := approve(urls[i%3], who, id, seq, interrupt)
			answers <- answer{who, status, body}
		}()
	}
	ok := 0
	for range people {
		a := <-answers
		switch {
		case a.status == 200:
			ok++
		case a.status == 409 && (strings.Contains(a.body, `"already_approved"`) || strings.Contains(a.body, `"already_decided"`)):
		default:
			t.Errorf("%s: %d %s", a.who, a.status, a.body)
		}
	}
	testwait.For(t, 20*time.Second, "the refund to complete", func() bool {
		_, s := apiCall(t, "GET", urls[1]+"/v1/sessions/"+id, fourEyesToken("p01"), "")
		return s["status"] == "completed"
	})
	added, decisions, approvals := 0, 0, 0
	for _, ev := range eventsAs(t, urls[2], id, fourEyesToken("p02")) {
		switch ev["type"] {
		case "approval_added":
			added++
		case "decision":
			decisions++
			list, _ := ev["data"].(map[string]any)["approvals"].([]any)
			approvals = len(list)
			seen := map[string]bool{}
			for _, a := range list {
				seen[a.(map[string]any)["actor"].(map[string]any)["subject"].(string)] = true
			}
			if len(seen) != 3 {
				t.Errorf("the decision's approvals are not three people: %v", list)
			}
		}
	}
	if runs() != 1 || added != 2 || decisions != 1 || approvals != 3 || ok != 3 {
		t.Fatalf("%d runs; %d approval_added, %d decisions listing %d approvals; %d requests answered 200", runs(), added, decisions, approvals, ok)
	}

	// One at a time: the same person twice, on another replica.
	id, seq, interrupt = start()
	if status, body := approve(urls[0], "p05", id, seq, interrupt); status != 200 {
		t.Fatalf("p05's approval: %d %s", status, body)
	}
	if status, body := approve(urls[1], "p05", id, seq, interrupt); status != 409 || !strings.Contains(body, `"already_approved"`) {
		t.Fatalf("p05 again: %d %s", status, body)
	}
	for i, who := range []string{"p06", "p07"} {
		if status, body := approve(urls[2-i], who, id, seq, interrupt); status != 200 {
			t.Fatalf("%s: %d %s", who, status, body)
		}
	}
	testwait.For(t, 20*time.Second, "the second refund to run", func() bool { return runs() == 2 })
}

// eventsAs reads a session's events with a token.
func eventsAs(t *testing.T, url, id, token string) []map[string]any {
	t.Helper()
	_, out := apiCall(t, "GET", url+"/v1/sessions/"+id+"/events", token, "")
	var evs []map[string]any
	for _, ev := range out["events"].([]any) {
		evs = append(evs, ev.(map[string]any))
	}
	return evs
}
