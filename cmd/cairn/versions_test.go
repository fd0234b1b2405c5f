package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cairnhq/cairn/internal/testkit/fakeopenai"
	"github.com/cairnhq/cairn/internal/testkit/temporaltest"
)

// versionConfig is a release agent in two versions: %[1]s its store, %[2]s
// the model's base URL, %[3]s its instructions, %[4]s the deploy tool's
// properties, %[5]s its required arguments, %[6]s its approval rule, %[7]s
// the agent's on_new_version.
const versionConfig = `
store: %[1]s
models:
  fake: {provider: openai, model: fake-model, base_url: "%[2]s"}
tools:
  deploy_code:
    description: Deploy a build.
    parameters: {type: object, properties: {%[4]s}, required: [%[5]s]}
    command: ["sh", "-c", "cat >> runs.txt; echo >> runs.txt; echo deployed"]
    approval: '%[6]s'
agents:
  main:
    model: fake
    instructions: "%[3]s"
    tools: [deploy_code]
    on_new_version: %[7]s
`

// writeVersion writes the config of version A or B of the agent.
func writeVersion(t *testing.T, cfg, store, baseURL, version, onNew string) {
	t.Helper()
	switch version {
	case "A":
		writeFile(t, cfg, fmt.Sprintf(versionConfig, store, baseURL, "release agent, version A", "environment: {type: string}", "environment", `args.environment == "production"`, onNew))
	case "B":
		writeFile(t, cfg, fmt.Sprintf(versionConfig, store, baseURL, "release agent, version B", "environment: {type: string}, region: {type: string}", "environment, region", "true", onNew))
	}
}

// releaseModel deploys to what the user names (in region eu when the tool
// it is offered takes one), then reports the result.
func releaseModel(r fakeopenai.Request) fakeopenai.Reply {
	last := r.Messages[len(r.Messages)-1]
	if last.Role == "tool" {
		return fakeopenai.Reply{Content: "result: " + last.Text()}
	}
	args := map[string]string{"environment": last.Text()}
	for _, tool := range r.Tools {
		if strings.Contains(string(tool), `"region"`) {
			args["region"] = "eu"
		}
	}
	b, _ := json.Marshal(args)
	return fakeopenai.Reply{ToolCalls: []fakeopenai.Call{{ID: "c1", Name: "deploy_code", Arguments: string(b)}}}
}

// toolSchema is the parameters of the tool name as a request offered it.
func toolSchema(t *testing.T, r fakeopenai.Request, name string) string {
	t.Helper()
	for _, raw := range r.Tools {
		var tool struct {
			Function struct {
				Name       string          `json:"name"`
				Parameters json.RawMessage `json:"parameters"`
			} `json:"function"`
		}
		if err := json.Unmarshal(raw, &tool); err != nil {
			t.Fatal(err)
		}
		if tool.Function.Name == name {
			return string(tool.Function.Parameters)
		}
	}
	return ""
}

// resumeUnder approves the call session s paused on, on base, and checks
// that the turn completed with one model request, made with the
// instructions and the deploy schema of version ("A" or "B"); it returns
// the session after.
func resumeUnder(t *testing.T, fake *fakeopenai.Server, base string, s map[string]any, version string) map[string]any {
	t.Helper()
	before := len(fake.Requests())
	in := s["interrupts"].([]any)[0].(map[string]any)
	code, done := post(t, base+"/v1/sessions/"+s["id"].(string)+"/decisions", fmt.Sprintf(`{"seq":%v,"decisions":[{"interrupt_id":%q,"action":"approve"}]}`, s["seq"], in["id"]))
	if code != 200 || done["status"] != "completed" {
		t.Fatalf("approve: %d %v", code, done)
	}
	asked := fake.Requests()[before:]
	if len(asked) != 1 {
		t.Fatalf("the model was asked %d times after the approval, want once", len(asked))
	}
	system, schema := asked[0].Messages[0].Text(), toolSchema(t, asked[0], "deploy_code")
	if system != "release agent, version "+version || strings.Contains(schema, "region") != (version == "B") {
		t.Fatalf("resumed with %q and the deploy schema %s, want version %s's", system, schema, version)
	}
	return done
}

// A session paused under config A resumes under A after `cairn serve`
// restarts with config B (instructions and the tool's schema and policy
// changed): the model is asked with A's instructions and schema, and the
// session page, `cairn sessions show` and the API say its version is not
// the current one. With on_new_version: latest it resumes under B, and the
// log records definition_changed. On SQLite and PostgreSQL.
func TestPausedSessionKeepsItsVersionAcrossARestart(t *testing.T) {
	ctx := browser(t)
	fake := fakeopenai.Start(t, releaseModel)
	for name, store := range stores(t) {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := filepath.Join(dir, "cairn.yaml")
			dsn := store(t)
			writeVersion(t, cfg, dsn, fake.BaseURL(), "A", "pin")
			cmd, base := serve(t, cfg)
			start := func(base, env string) map[string]any {
				t.Helper()
				code, s := post(t, base+"/v1/sessions", fmt.Sprintf(`{"agent":"main","input":%q}`, env))
				if code != 201 {
					t.Fatalf("start: %d %v", code, s)
				}
				return s
			}
			pinned := start(base, "production")
			follows := start(base, "production")
			def, _ := pinned["definition"].(map[string]any)
			if pinned["status"] != "paused" || def == nil || def["current"] != true {
				t.Fatalf("started under A: %v", pinned)
			}
			hashA := def["hash"].(string)
			stop(t, cmd, os.Interrupt, 30*time.Second)

			// Restart under B.
			writeVersion(t, cfg, dsn, fake.BaseURL(), "B", "pin")
			cmd, base = serve(t, cfg)
			id := pinned["id"].(string)
			got := getJSON(t, base+"/v1/sessions/"+id)
			if def, _ := got["definition"].(map[string]any); def["hash"] != hashA || def["current"] != false {
				t.Fatalf("under B the session shows %v", got["definition"])
			}
			out, err := exec.Command(binary, "sessions", "--server", base, "show", id).CombinedOutput()
			if err != nil || !strings.Contains(string(out), "version "+strings.TrimPrefix(hashA, "sha256:")[:12]+" (not the current definition") {
				t.Fatalf("cairn sessions show: %v\n%s", err, out)
			}
			run := stepper(t, ctx)
			var shown string
			run("the session page", chromedp.Navigate(base+"/#/sessions/"+id), chromedp.WaitVisible("#definition", chromedp.ByID),
				chromedp.Text("#definition", &shown, chromedp.ByID))
			if !strings.Contains(shown, strings.TrimPrefix(hashA, "sha256:")[:12]) || !strings.Contains(shown, "not the current definition") {
				t.Fatalf("the page shows %q", shown)
			}

			if done := resumeUnder(t, fake, base, pinned, "A"); done["output"] != "result: deployed" {
				t.Fatalf("approve under B: %v", done)
			}
			// A's policy still holds for it: staging does not ask.
			code, again := post(t, base+"/v1/sessions/"+id+"/messages", `{"text":"staging"}`)
			if code != 200 || again["status"] != "completed" {
				t.Fatalf("staging under A's policy: %d %v", code, again)
			}
			// A new session is B's: it asks for staging too.
			if s := start(base, "staging"); s["status"] != "paused" || s["definition"].(map[string]any)["current"] != true {
				t.Fatalf("a new session under B: %v", s)
			}
			stop(t, cmd, os.Interrupt, 30*time.Second)

			// Restart under B with on_new_version: latest: the other session
			// paused under A goes on under B, recorded.
			writeVersion(t, cfg, dsn, fake.BaseURL(), "B", "latest")
			_, base = serve(t, cfg)
			id = follows["id"].(string)
			done := resumeUnder(t, fake, base, follows, "B")
			if done["definition"].(map[string]any)["current"] != true {
				t.Fatalf("approve under latest: %v", done)
			}
			events := getJSON(t, base+"/v1/sessions/"+id+"/events")["events"].([]any)
			var changed map[string]any
			for _, ev := range events {
				if ev := ev.(map[string]any); ev["type"] == "definition_changed" {
					changed = ev["data"].(map[string]any)
				}
			}
			if changed == nil || changed["from"] != hashA || changed["to"] != done["definition"].(map[string]any)["hash"] {
				t.Fatalf("definition_changed: %v", changed)
			}
			out, err = exec.Command(binary, "sessions", "--server", base, "show", id).CombinedOutput()
			if err != nil || !strings.Contains(string(out), "definition_changed") || !strings.Contains(string(out), "(on_new_version: latest)") {
				t.Fatalf("cairn sessions show after latest: %v\n%s", err, out)
			}
		})
	}
}

// On the Temporal driver a paused session also resumes under the
// definition it started with after the worker and the server restart with
// config B: the workflow replays and goes on with the machine of its own
// definition, rebuilt from the store.
func TestTemporalPausedSessionKeepsItsVersion(t *testing.T) {
	fake := fakeopenai.Start(t, releaseModel)
	addr := temporaltest.Server(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "cairn.yaml")
	store := "sqlite:" + filepath.Join(dir, "shared.db")
	temporal := fmt.Sprintf("driver: temporal\ntemporal: {host_port: %q, task_queue: q%d}\n", addr, time.Now().UnixNano())
	version := func(v string) {
		writeVersion(t, cfg, store, fake.BaseURL(), v, "pin")
		b, err := os.ReadFile(cfg)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, cfg, temporal+string(b))
	}
	version("A")
	worker := startWorker(t, cfg)
	server, base := serve(t, cfg)
	code, s := post(t, base+"/v1/sessions", `{"agent":"main","input":"production"}`)
	if code != 201 || s["status"] != "paused" || s["definition"] == nil {
		t.Fatalf("start under A: %d %v", code, s)
	}
	hashA := s["definition"].(map[string]any)["hash"]
	stop(t, server, os.Interrupt, 30*time.Second)
	_ = worker.Process.Kill()
	_ = worker.Wait()

	version("B")
	startWorker(t, cfg)
	_, base = serve(t, cfg)
	id := s["id"].(string)
	if def := getJSON(t, base+"/v1/sessions/"+id)["definition"].(map[string]any); def["hash"] != hashA || def["current"] != false {
		t.Fatalf("under B: %v", def)
	}
	if done := resumeUnder(t, fake, base, s, "A"); done["output"] != "result: deployed" {
		t.Fatalf("approve under B: %v", done)
	}
	if fresh := getJSON(t, base+"/v1/sessions/"+id); fresh["definition"].(map[string]any)["hash"] != hashA {
		t.Fatalf("after the resume: %v", fresh["definition"])
	}
}
