package config_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/config"
	"github.com/cairnhq/cairn/internal/testkit/testwait"
	"github.com/cairnhq/cairn/model"
)

func noEnv(string) (string, bool) { return "", false }

const valid = `
store: memory
models:
  default: {provider: scripted, script: [{text: hi}]}
tools:
  deploy_code:
    description: Deploy.
    parameters:
      type: object
      properties: {environment: {type: string, enum: [staging, production]}}
      required: [environment]
    command: ["sh", "-c", "read a; echo \"ran $a key=$CAIRN_IDEMPOTENCY_KEY\""]
    timeout: 5s
    approval_ttl: 1h
    approval: 'args.environment == "production"'
    confirmation: "Deploy to {{.environment}}?"
  broken:
    command: ["sh", "-c", "echo oops >&2; exit 3"]
agents:
  main:
    model: default
    tools: [deploy_code, broken]
    max_iterations: 4
`

func TestValidConfig(t *testing.T) {
	cfg, err := config.Parse("/etc/cairn/cairn.yaml", []byte(valid), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Store != "memory:" || len(cfg.Agents) != 2 || cfg.Agents[1].Name != "approvals" || !cfg.Agents[1].Direct || cfg.Agents[0].MaxIterations != 4 || len(cfg.Agents[0].Tools) != 2 {
		t.Fatalf("cfg = %+v", cfg)
	}
	deploy := cfg.Agents[0].Tools[1]
	if deploy.Name != "deploy_code" {
		deploy = cfg.Agents[0].Tools[0]
	}
	if deploy.ApprovalTTL != time.Hour {
		t.Fatalf("approval_ttl = %v", deploy.ApprovalTTL)
	}
	for args, want := range map[string]bool{`{"environment":"production"}`: true, `{"environment":"staging"}`: false} {
		got, err := deploy.Approval.Asks(json.RawMessage(args))
		if err != nil || got != want {
			t.Errorf("approval(%s) = %v, %v; want %v", args, got, err, want)
		}
	}
}

func TestCommandTools(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cairn.yaml")
	if err := os.WriteFile(path, []byte(valid), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	tools := map[string]func(context.Context, json.RawMessage) (string, error){}
	runs := map[string]string{}
	for _, tl := range cfg.Agents[0].Tools {
		tools[tl.Name] = tl.Handler
		runs[tl.Name] = tl.Runs
	}
	// What an approver reads: the command line, quoted as a shell reads it.
	if want := `the command sh -c 'read a; echo "ran $a key=$CAIRN_IDEMPOTENCY_KEY"'`; runs["deploy_code"] != want {
		t.Errorf("deploy_code runs %s; want %s", runs["deploy_code"], want)
	}
	if want := `the command sh -c 'echo oops >&2; exit 3'`; runs["broken"] != want {
		t.Errorf("broken runs %s; want %s", runs["broken"], want)
	}
	out, err := tools["deploy_code"](context.Background(), json.RawMessage(`{"environment":"staging"}`))
	if err != nil || out != `ran {"environment":"staging"} key=` {
		t.Fatalf("deploy_code = %q, %v", out, err)
	}
	_, err = tools["broken"](context.Background(), json.RawMessage(`{}`))
	if err == nil || !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "oops") {
		t.Fatalf("broken = %v, want exit status and stderr", err)
	}
}

func TestConfigErrorsNameFileLineAndKeyPath(t *testing.T) {
	cases := []struct {
		name, yaml, want string
	}{
		{"bad CEL", strings.Replace(valid, `'args.environment == "production"'`, `'args.environment ==='`, 1), `cairn.yaml:15: tools.deploy_code.approval: not never, always or a valid CEL expression`},
		{"unknown tool", strings.Replace(valid, "[deploy_code, broken]", "[deploy_code, nope]", 1), `cairn.yaml:22: agents.main.tools: tools[1]: unknown tool "nope"`},
		{"unknown model", strings.Replace(valid, "model: default", "model: big", 1), `agents.main.model: unknown model "big"`},
		{"bad timeout", strings.Replace(valid, "timeout: 5s", "timeout: soon", 1), `tools.deploy_code.timeout: "soon" is not a positive duration`},
		{"bad schema", strings.Replace(valid, "type: object", "type: 12", 1), `tools.deploy_code.parameters: not a valid JSON Schema`},
		{"unknown key", strings.Replace(valid, "max_iterations: 4", "max_iteration: 4", 1), `cairn.yaml:23: agents.main.max_iteration: unknown key "max_iteration" (known here: a2a, approvers, description, escalation, frontend_tools, handoffs, instructions, max_iterations, model, on_expiry, on_new_version, output_schema, review, subagents, tools); did you mean "max_iterations"?`},
		{"missing key env", strings.Replace(valid, "{provider: scripted, script: [{text: hi}]}", "{provider: openai, model: gpt-4o-mini}", 1), `models.default.api_key_env: environment variable OPENAI_API_KEY is not set`},
		{"named key env", strings.Replace(valid, "{provider: scripted, script: [{text: hi}]}", "{provider: openai, model: m, base_url: 'http://127.0.0.1:1/v1', api_key_env: MY_KEY}", 1), `environment variable MY_KEY is not set`},
		{"bad template", strings.Replace(valid, "Deploy to {{.environment}}?", "Deploy to {{.environment?", 1), `tools.deploy_code.confirmation: not a valid Go template`},
		{"no command", strings.Replace(valid, `command: ["sh", "-c", "echo oops >&2; exit 3"]`, `description: x`, 1), `tools.broken.command: missing`},
		{"bad ttl", strings.Replace(valid, "approval_ttl: 1h", "approval_ttl: -1h", 1), `tools.deploy_code.approval_ttl: "-1h" is not a positive duration`},
		{"bad store", strings.Replace(valid, "store: memory", "store: redis://x", 1), `store: "redis://x" is not a store URL`},
		{"duplicate tool", strings.Replace(valid, "agents:\n", "  broken:\n    command: [\"true\"]\nagents:\n", 1), `cairn.yaml:19: tools.broken: "broken" is given twice in this mapping (first at line 17); keep one`},
		{"duplicate key", strings.Replace(valid, "max_iterations: 4", "max_iterations: 4\n    model: other", 1), `cairn.yaml:24: agents.main.model: "model" is given twice in this mapping (first at line 21); keep one`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := config.Parse("/etc/cairn/cairn.yaml", []byte(c.yaml), noEnv)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "/etc/cairn/cairn.yaml") {
				t.Fatalf("err = %v\nwant it to contain %q", err, c.want)
			}
		})
	}
}

// With store: memory and keys that outlive the process, the record of spent
// continuation tokens must outlive it too.
// retention reads ages in hours or days, per final status.
func TestRetention(t *testing.T) {
	cfg, err := config.Parse("/etc/cairn/cairn.yaml", []byte("retention: {completed: 30d, cancelled: 36h}\n"+valid), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	want := map[cairn.Status]time.Duration{cairn.StatusCompleted: 30 * 24 * time.Hour, cairn.StatusCancelled: 36 * time.Hour}
	if !maps.Equal(cfg.Retention, want) || cfg.RetentionSweep != time.Minute {
		t.Fatalf("retention %v, sweep %v", cfg.Retention, cfg.RetentionSweep)
	}
	if cfg, _ := config.Parse("/etc/cairn/cairn.yaml", []byte(valid), noEnv); cfg.Retention != nil {
		t.Fatalf("without the section: %v", cfg.Retention)
	}
}

func TestTokenLedger(t *testing.T) {
	env := func(name string) (string, bool) {
		if name == "CAIRN_SECRET" {
			return strings.Repeat("k", 32), true
		}
		return "", false
	}
	withKeys := strings.Replace(valid, "store: memory", "store: memory\nsecret_env: CAIRN_SECRET", 1)
	if _, err := config.Parse("/etc/cairn/cairn.yaml", []byte(withKeys), env); err == nil || !strings.Contains(err.Error(), "token_ledger: store: memory with secret_env") {
		t.Fatalf("memory + secret_env without a ledger: %v", err)
	}
	cfg, err := config.Parse("/etc/cairn/cairn.yaml", []byte(withKeys+"token_ledger: tokens.db\n"), env)
	if err != nil || cfg.TokenLedger != "/etc/cairn/tokens.db" {
		t.Fatalf("ledger %q, %v", cfg.TokenLedger, err)
	}
	sqlite := strings.Replace(valid, "store: memory", "store: sqlite:./x.db\ntoken_ledger: tokens.db", 1)
	if _, err := config.Parse("/etc/cairn/cairn.yaml", []byte(sqlite), env); err == nil || !strings.Contains(err.Error(), "only used with store: memory") {
		t.Fatalf("a ledger with a sqlite store: %v", err)
	}
}

func TestLocalServerNeedsNoKey(t *testing.T) {
	y := strings.Replace(valid, "{provider: scripted, script: [{text: hi}]}", "{provider: openai, model: llama3.1, base_url: 'http://127.0.0.1:11434/v1'}", 1)
	if _, err := config.Parse("/x/cairn.yaml", []byte(y), noEnv); err != nil {
		t.Fatal(err)
	}
}

// FuzzParse: any text gives a config or an error, never a panic.
func FuzzParse(f *testing.F) {
	f.Add([]byte(valid))
	f.Add([]byte("agents: {main: {model: x}}"))
	f.Add([]byte("tools: {t: {command: [a], approval: 'args.x > 1'}}\nagents: {a: {model: m, tools: [t]}}\nmodels: {m: {provider: scripted, script: [{text: hi}]}}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = config.Parse("/f/cairn.yaml", data, noEnv)
	})
}

const nested = `
store: memory
models:
  m: {provider: scripted, script: [{text: hi}]}
tools:
  ask_user: {builtin: ask_user}
agents:
  main:
    model: m
    tools: [ask_user]
    subagents:
      - {agent: analyst, tool: run_analysis_pipeline, description: "Runs the analysis pipeline.", mode: tool, approval: always}
      - {agent: research, tool: use_research, mode: interactive}
    handoffs: [billing]
  analyst: {model: m}
  research: {model: m}
  billing: {model: m}
`

func TestNestingConfig(t *testing.T) {
	cfg, err := config.Parse("/x/cairn.yaml", []byte(nested), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, a := range cfg.Agents {
		if a.Name == "main" {
			for _, tl := range a.Tools {
				names = append(names, tl.Name)
				if tl.Name == "run_analysis_pipeline" && tl.Approval.IsNever() {
					t.Error("subagent approval: always was lost")
				}
			}
		}
	}
	if got := strings.Join(names, ","); got != "ask_user,run_analysis_pipeline,use_research,transfer_to_billing" {
		t.Fatalf("main's tools = %s", got)
	}
	for _, c := range []struct{ from, to, want string }{
		{"agent: analyst, tool", "agent: ghost, tool", `agents.main.subagents: subagents[0].agent: unknown agent "ghost"`},
		{"mode: interactive", "mode: chatty", `subagents[1].mode: "chatty" is not tool or interactive`},
		{"handoffs: [billing]", "handoffs: [main]", `agents.main.handoffs: handoffs[0]: "main" is the agent itself`},
		{"{builtin: ask_user}", "{builtin: ask_llm}", `tools.ask_user.builtin: unknown built-in "ask_llm"`},
	} {
		_, err := config.Parse("/x/cairn.yaml", []byte(strings.Replace(nested, c.from, c.to, 1)), noEnv)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s → %s: err = %v, want %q", c.from, c.to, err, c.want)
		}
	}
}

// A handoff may need approval, like a sub-agent: {agent, approval,
// confirmation} besides the plain name.
func TestHandoffApprovalConfig(t *testing.T) {
	gated := strings.Replace(nested, "handoffs: [billing]", `handoffs: [{agent: billing, approval: always, confirmation: "Move this chat to billing?"}]`, 1)
	cfg, err := config.Parse("/x/cairn.yaml", []byte(gated), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, a := range cfg.Agents {
		for _, tl := range a.Tools {
			if a.Name == "main" && tl.Name == "transfer_to_billing" {
				found = true
				if tl.Approval.IsNever() || tl.Approval.Rule() != "always" || tl.Confirmation != "Move this chat to billing?" {
					t.Fatalf("transfer_to_billing: approval %q, confirmation %q", tl.Approval.Rule(), tl.Confirmation)
				}
			}
		}
	}
	if !found {
		t.Fatal("no transfer_to_billing tool")
	}
	for _, c := range []struct{ yaml, want string }{
		{`handoffs: [{agent: billing, approval: "args.x >"}]`, `agents.main.handoffs: handoffs[0].approval:`},
		{`handoffs: [{agent: biling}]`, `handoffs[0]: unknown agent "biling"; defined agents: analyst, billing, main, research; did you mean "billing"?`},
		{`handoffs: [{agnet: billing}]`, `agents.main.handoffs[0].agnet: unknown key "agnet" (known here: agent, approval, confirmation); did you mean "agent"?`},
	} {
		_, err := config.Parse("/x/cairn.yaml", []byte(strings.Replace(nested, "handoffs: [billing]", c.yaml, 1)), noEnv)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.yaml, err, c.want)
		}
	}
}

func TestAuthTokens(t *testing.T) {
	base := "auth:\n  tokens:\n    - {name: ops-lead, token_env: APPROVER_TOKEN, role: approver}\n    - {token_env: USER_TOKEN, role: user}\n" + valid
	env := func(k string) (string, bool) {
		v, ok := map[string]string{"APPROVER_TOKEN": "0123456789abcdef0123", "USER_TOKEN": "fedcba98765432100000", "SHORT": "abc"}[k]
		return v, ok
	}
	cfg, err := config.Parse("/x/cairn.yaml", []byte(base), env)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Tokens) != 2 || cfg.Tokens[0].Name != "ops-lead" || cfg.Tokens[1].Name != "user" || cfg.Tokens[0].Secret != "0123456789abcdef0123" {
		t.Fatalf("tokens = %+v", cfg.Tokens)
	}
	for _, c := range []struct{ from, to, want string }{
		{"role: approver", "role: boss", `auth.tokens: tokens[0].role: "boss" is not one of user, approver, admin`},
		{"token_env: APPROVER_TOKEN", "token_env: MISSING", `tokens[0].token_env: environment variable MISSING is not set`},
		{"token_env: APPROVER_TOKEN", "token_env: SHORT", `shorter than 16 characters`},
		{"token_env: USER_TOKEN", "token_env: APPROVER_TOKEN", `used twice`},
	} {
		_, err := config.Parse("/x/cairn.yaml", []byte(strings.Replace(base, c.from, c.to, 1)), env)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.to, err, c.want)
		}
	}
}

func TestAnthropicModel(t *testing.T) {
	y := strings.Replace(valid, "{provider: scripted, script: [{text: hi}]}", "{provider: anthropic, model: claude-sonnet-4-5}", 1)
	if _, err := config.Parse("/x/cairn.yaml", []byte(y), noEnv); err == nil || !strings.Contains(err.Error(), "ANTHROPIC_API_KEY is not set") {
		t.Fatalf("missing key: %v", err)
	}
	env := func(k string) (string, bool) { return "sk-ant", k == "ANTHROPIC_API_KEY" }
	if _, err := config.Parse("/x/cairn.yaml", []byte(y), env); err != nil {
		t.Fatal(err)
	}
	for model, want := range map[string]string{
		"{provider: anthropic, model: c, max_tokens: 8000, thinking: {budget_tokens: 2048}}":                             "",
		"{provider: anthropic, model: c, thinking: {budget_tokens: 4096}}":                                               "thinking.budget_tokens: 4096: use at least 1024 and less than max_tokens (4096)",
		"{provider: anthropic, model: c, max_tokens: 8000, thinking: {budget_tokens: 100}}":                              "thinking.budget_tokens: 100: use at least 1024",
		"{provider: openai, model: g, base_url: http://h/v1, thinking: {budget_tokens: 2048}}":                           "models.default.thinking: provider openai has no thinking setting; thinking is for anthropic and gemini",
		"{provider: openai-responses, model: o4-mini, base_url: http://h/v1, reasoning: {effort: medium}, store: false}": "",
		"{provider: openai-responses, model: o4-mini, base_url: http://h/v1, reasoning: {effort: hgih}}":                 `models.default.reasoning.effort: "hgih": use one of minimal, low, medium, high; did you mean "high"?`,
		"{provider: gemini, model: gemini-2.5-flash, base_url: http://h, thinking: {budget_tokens: 2048}}":               "",
		"{provider: gemini, model: gemini-2.5-flash, vertex: {project: p, location: us-central1}}":                       "",
		"{provider: gemini, model: gemini-2.5-flash, vertex: {project: p}}":                                              "models.default.vertex: needs project and location",
		"{provider: openai, model: g, base_url: http://h/v1, store: false}":                                              "models.default: reasoning and store are settings of provider openai-responses",
		"{provider: openai-responses, model: o4-mini, base_url: http://h/v1, sdk: true}":                                 "",
		"{provider: anthropic, model: c, sdk: true}":                                                                     "models.default.sdk: is a setting of providers openai and openai-responses, whose lean path it turns off; anthropic always uses its SDK",
		"{provider: openai, model: g, base_url: http://h/v1, sdk: true}":                                                 "",
	} {
		y := strings.Replace(valid, "{provider: scripted, script: [{text: hi}]}", model, 1)
		_, err := config.Parse("/x/cairn.yaml", []byte(y), env)
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("%s: got %v, want %q", model, err, want)
		}
	}
}

// A command tool runs in its own process group, killed as a whole when the
// call's context ends: no grandchild outlives it.
func TestCommandToolKilledWithItsGroup(t *testing.T) {
	dir := t.TempDir()
	y := strings.Replace(valid, `command: ["sh", "-c", "echo oops >&2; exit 3"]`, `command: ["sh", "-c", "sleep 30 & echo $$ > pgid; sleep 30"]`, 1)
	path := filepath.Join(dir, "cairn.yaml")
	if err := os.WriteFile(path, []byte(y), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	var broken func(context.Context, json.RawMessage) (string, error)
	for _, tl := range cfg.Agents[0].Tools {
		if tl.Name == "broken" {
			broken = tl.Handler
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := broken(ctx, json.RawMessage(`{}`)); done <- err }()
	var pgid int
	testwait.For(t, 10*time.Second, "the tool to write its process group", func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "pgid"))
		_, err := fmt.Sscan(string(b), &pgid) // fails until the tool has written it
		return err == nil && pgid != 0
	})
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	// Killed members may linger as zombies until reaped; wait for them to go.
	testwait.For(t, 10*time.Second, fmt.Sprintf("process group %d to end after cancel", pgid), func() bool {
		return errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH) || zombiesOnly(pgid)
	})
}

// zombiesOnly reports whether every process of group pgid has exited (state Z).
func zombiesOnly(pgid int) bool {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp …; comm may hold spaces, so cut after ')'.
		rest := string(b[strings.LastIndexByte(string(b), ')')+2:])
		var state string
		var ppid, pgrp int
		if _, err := fmt.Sscan(rest, &state, &ppid, &pgrp); err == nil && pgrp == pgid && state != "Z" {
			return false
		}
	}
	return true
}

// Typical mistakes in a config file are named by file, line and key path,
// in the file's terms, with a suggestion where one is close.
func TestConfigMistakesTeach(t *testing.T) {
	cases := []struct{ name, yaml, want string }{
		{"top-level typo", strings.Replace(valid, "store: memory", "stroe: memory", 1), `cairn.yaml:2: stroe: unknown key "stroe" (known here: a2a, agents, allowed_hosts, allowed_origins, approvals, audit, auth, driver, gateway, lease, mcp_servers, models, public_url, retention, secret_env, shutdown_grace, store, suggestions, temporal, token_ledger, tools, webhooks); did you mean "store"?`},
		{"tool key typo", strings.Replace(valid, "approval_ttl: 1h", "aproval_ttl: 1h", 1), `tools.deploy_code.aproval_ttl: unknown key "aproval_ttl"`},
		{"tool key suggestion", strings.Replace(valid, "approval_ttl: 1h", "aproval_ttl: 1h", 1), `did you mean "approval_ttl"?`},
		{"model key typo", strings.Replace(valid, "{provider: scripted", "{provder: scripted", 1), `models.default.provder: unknown key "provder"`},
		{"capitalised key", strings.Replace(valid, "    model: default", "    Model: default", 1), `did you mean "model"?`},
		{"word for a number", strings.Replace(valid, "max_iterations: 4", "max_iterations: ten", 1), `cairn.yaml:23: agents.main.max_iterations: expected a whole number, got "ten"`},
		{"string for a bool", strings.Replace(valid, "timeout: 5s", "timeout: 5s\n    idempotent: sure", 1), `tools.deploy_code.idempotent: expected true or false, got "sure"`},
		{"scalar for a list", strings.Replace(valid, "tools: [deploy_code, broken]", "tools: deploy_code", 1), `agents.main.tools: expected a list ([a, b] or - lines), got "deploy_code"`},
		{"list for a string", strings.Replace(valid, "model: default", "model: [default]", 1), `agents.main.model: expected a string, got a list`},
		{"scalar for a mapping", strings.Replace(valid, "  broken:\n    command:", "  broken: yes\n  other:\n    command:", 1), `tools.broken: expected a mapping (key: value lines), got "yes"`},
		{"unknown provider", strings.Replace(valid, "provider: scripted", "provider: opneai", 1), `models.default.provider: unknown provider "opneai"; one of openai, openai-responses, anthropic, gemini, scripted; did you mean "openai"?`},
		{"misspelt tool reference", strings.Replace(valid, "[deploy_code, broken]", "[deploy_cod, broken]", 1), `agents.main.tools: tools[0]: unknown tool "deploy_cod"; defined tools: broken, deploy_code; did you mean "deploy_code"?`},
		{"per-agent script for an unknown agent", strings.Replace(valid, "script: [{text: hi}]", "scripts: {mian: [{text: hi}]}", 1), `models.default.scripts.mian: unknown agent "mian"; defined agents: main; did you mean "main"?`},
		{"retention key typo", "retention: {complete: 30d}\n" + valid, `retention.complete: unknown key "complete" (known here: cancelled, completed, failed, sweep, tombstones); did you mean "completed"?`},
		{"retention without unit", "retention: {completed: 30}\n" + valid, `retention.completed: "30" is not a positive duration like 720h or 30d`},
		{"retention of no days", "retention: {failed: 0d}\n" + valid, `retention.failed: "0d" is not a positive duration`},
		{"origin with a path", "allowed_origins: [https://app.example.org/inbox]\n" + valid, `allowed_origins[0]: "https://app.example.org/inbox" is not a web origin: write scheme://host[:port]`},
		{"origin without scheme", "allowed_origins: [app.example.org]\n" + valid, `allowed_origins[0]: "app.example.org" is not a web origin`},
		{"host with a port", "allowed_hosts: [ok.internal, cairn.internal:8080]\n" + valid, `allowed_hosts[1]: "cairn.internal:8080" is not a host name: write the name alone`},
		{"size without a number", strings.Replace(valid, "{provider: scripted,", "{provider: scripted, max_reply_bytes: lots,", 1), `models.default.max_reply_bytes: "lots" is not a size like 8MiB`},
		{"size with an unknown unit", strings.Replace(valid, "{provider: scripted,", "{provider: scripted, max_reply_bytes: 8mb,", 1), `models.default.max_reply_bytes: "8mb" is not a size`},
		{"idle timeout without unit", strings.Replace(valid, "{provider: scripted,", "{provider: scripted, idle_timeout: 60,", 1), `models.default.idle_timeout: "60" is not a positive duration`},
		{"script reply typo", strings.Replace(valid, "script: [{text: hi}]", "script: [{txt: hi}]", 1), `models.default.script[0].txt: unknown key "txt" (known here: text, tool_calls); did you mean "text"?`},
		{"required names no property", strings.Replace(valid, "required: [environment]", "required: [enviroment]", 1), `cairn.yaml:11: tools.deploy_code.parameters.required: required[0] "enviroment" is not one of the properties (environment): every call would be refused for it; name a property, or add it under properties; did you mean "environment"?`},
		{"required in a nested schema", strings.Replace(valid, "{environment: {type: string, enum: [staging, production]}}", "{environment: {type: string}, target: {type: object, properties: {host: {type: string}}, required: [hots]}}", 1), `tools.deploy_code.parameters.properties.target.required: required[0] "hots" is not one of the properties (host)`},
		{"indented with a tab", strings.Replace(valid, "  main:\n    model: default", "  main:\n\tmodel: default", 1), `is indented with a tab: YAML indents with spaces only, so replace the tab with spaces`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := config.Parse("/etc/cairn/cairn.yaml", []byte(c.yaml), noEnv)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "/etc/cairn/cairn.yaml:") {
				t.Fatalf("err = %v\nwant it to contain %q", err, c.want)
			}
		})
	}
}

const hooks = `public_url: https://cairn.example.org/
webhooks:
  - {name: slack, url: "https://hooks.example.org/cairn", secret_env: HOOK_SECRET, events: [interrupt.created, session.completed], timeout: 3s}
`

func hookEnv(name string) (string, bool) {
	if name == "HOOK_SECRET" {
		return "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", true
	}
	return "", false
}

func TestWebhooksConfig(t *testing.T) {
	cfg, err := config.Parse("/etc/cairn/cairn.yaml", []byte(hooks+valid), hookEnv)
	if err != nil {
		t.Fatal(err)
	}
	w := cfg.Webhooks
	if cfg.PublicURL != "https://cairn.example.org" || len(w) != 1 || w[0].Name != "slack" || w[0].Secret != "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" ||
		w[0].Timeout != 3*time.Second || fmt.Sprint(w[0].Events) != "[interrupt.created session.completed]" {
		t.Fatalf("public_url %q, webhooks %+v", cfg.PublicURL, w)
	}
	for _, tc := range []struct{ name, yaml, want string }{
		{"no public_url", strings.Replace(hooks, "public_url: https://cairn.example.org/\n", "", 1), "webhooks: webhooks need public_url"},
		{"relative public_url", strings.Replace(hooks, "https://cairn.example.org/", "cairn.example.org", 1), `public_url: "cairn.example.org" is not an absolute http(s) URL`},
		{"unknown event", strings.Replace(hooks, "session.completed", "session.complete", 1), `webhooks[0].events[1]: "session.complete" is not one of interrupt.created`},
		{"secret unset", strings.Replace(hooks, "HOOK_SECRET", "NOPE", 1), "webhooks[0].secret_env: environment variable NOPE is not set"},
		{"bad timeout", strings.Replace(hooks, "3s", "soon", 1), `webhooks[0].timeout: "soon" is not a positive duration`},
		{"no url", strings.Replace(hooks, `url: "https://hooks.example.org/cairn", `, "", 1), `webhooks[0].url: "" is not an absolute http(s) URL`},
	} {
		_, err := config.Parse("/etc/cairn/cairn.yaml", []byte(tc.yaml+valid), hookEnv)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	_, err = config.Parse("/etc/cairn/cairn.yaml", []byte(hooks+valid), func(string) (string, bool) { return "hunter2", true })
	if err == nil || !strings.Contains(err.Error(), "not whsec_ followed by base64") {
		t.Errorf("a weak secret: %v", err)
	}
}

func TestTemporalConfig(t *testing.T) {
	y := "driver: temporal\ntemporal: {host_port: 'temporal.internal:7233', namespace: prod, task_queue: agents}\n" + strings.Replace(valid, "store: memory", "store: sqlite:./c.db", 1)
	cfg, err := config.Parse("/etc/cairn/cairn.yaml", []byte(y), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if tc := cfg.Temporal; tc == nil || tc.HostPort != "temporal.internal:7233" || tc.Namespace != "prod" || tc.TaskQueue != "agents" {
		t.Fatalf("temporal = %+v", cfg.Temporal)
	}
	def, err := config.Parse("/etc/cairn/cairn.yaml", []byte("driver: temporal\n"+strings.Replace(valid, "store: memory", "store: sqlite:./c.db", 1)), noEnv)
	if err != nil || def.Temporal.HostPort != "127.0.0.1:7233" || def.Temporal.Namespace != "default" || def.Temporal.TaskQueue != "cairn" {
		t.Fatalf("defaults: %+v %v", def.Temporal, err)
	}
	for _, tc := range []struct{ name, yaml, want string }{
		{"typo", "driver: temporl\n" + valid, `driver: "temporl" is not local or temporal; did you mean "temporal"?`},
		{"memory store", "driver: temporal\n" + valid, "driver: temporal mirrors sessions to the store"},
		{"bad host_port", "driver: temporal\ntemporal: {host_port: nope}\n" + strings.Replace(valid, "store: memory", "store: sqlite:./c.db", 1), `temporal.host_port: "nope" is not HOST:PORT`},
		{"section without driver", "temporal: {host_port: 'h:1'}\n" + valid, "the temporal section is read only with driver: temporal"},
	} {
		if _, err := config.Parse("/etc/cairn/cairn.yaml", []byte(tc.yaml), noEnv); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestEchoBuiltin(t *testing.T) {
	y := strings.Replace(valid, "  broken:\n", "  echo_it: {builtin: echo, approval: always}\n  broken:\n", 1)
	y = strings.Replace(y, "tools: [deploy_code, broken]", "tools: [deploy_code, broken, echo_it]", 1)
	cfg, err := config.Parse("/etc/cairn/cairn.yaml", []byte(y), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range cfg.Agents[0].Tools {
		if tl.Name == "echo_it" {
			out, err := tl.Handler(context.Background(), json.RawMessage(`{"q":"x"}`))
			if need, _ := tl.Approval.Asks(json.RawMessage(`{}`)); out != `{"q":"x"}` || err != nil || !need {
				t.Fatalf("echo = %q, %v; approval %v", out, err, need)
			}
			return
		}
	}
	t.Fatal("no echo_it tool")
}

// A model's limits reach the model.
func TestModelLimitsConfig(t *testing.T) {
	yaml := strings.Replace(valid, "{provider: scripted,", "{provider: scripted, timeout: 2m, idle_timeout: 5s, max_reply_bytes: 512KiB,", 1)
	cfg, err := config.Parse("/etc/cairn/cairn.yaml", []byte(yaml), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	l := model.LimitsOf(cfg.Agents[0].Model)
	if l.Timeout != 2*time.Minute || l.IdleTimeout != 5*time.Second || l.MaxReplyBytes != 512<<10 {
		t.Fatalf("%+v", l)
	}
}

// The store URL's ${VAR} come from the environment Load is given, as
// everywhere else in the file: a missing one is an error naming it.
func TestStoreURLExpandsTheGivenEnvironment(t *testing.T) {
	pg := strings.Replace(valid, "store: memory", "store: postgres://cairn:${PGPASSWORD}@db:5432/cairn?sslmode=disable", 1)
	env := func(name string) (string, bool) {
		if name == "PGPASSWORD" {
			return "s3cret", true
		}
		return "", false
	}
	cfg, err := config.Parse("/etc/cairn/cairn.yaml", []byte(pg), env)
	if err != nil || cfg.Store != "postgres://cairn:s3cret@db:5432/cairn?sslmode=disable" {
		t.Fatalf("store %q, %v", cfg.Store, err)
	}
	t.Setenv("PGPASSWORD", "from-the-process")
	if _, err := config.Parse("/etc/cairn/cairn.yaml", []byte(pg), noEnv); err == nil || !strings.Contains(err.Error(), "environment variable PGPASSWORD is not set") {
		t.Fatalf("an unset variable (in the environment given): %v", err)
	}
}

// An agent's output_schema becomes its Agent.OutputSchema; a schema that
// does not compile is an error naming the key.
func TestAgentOutputSchema(t *testing.T) {
	y := strings.Replace(valid, "agents:\n  main:", "agents:\n  main:\n    output_schema: {type: object, properties: {priority: {type: string, enum: [low, high]}}, required: [priority]}", 1)
	cfg, err := config.Parse("/x/cairn.yaml", []byte(y), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(cfg.Agents[0].OutputSchema); !strings.Contains(got, `"enum":["low","high"]`) {
		t.Fatalf("output schema %s", got)
	}
	if cfg.Agents[0].Review.IsNever() != true {
		t.Fatal("no review key, yet the agent's answers wait for review")
	}
	reviewed := strings.Replace(y, "    output_schema:", "    review: output.priority == 'high'\n    output_schema:", 1)
	cfg, err = config.Parse("/x/cairn.yaml", []byte(reviewed), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	for out, want := range map[string]bool{`{"priority":"high"}`: true, `{"priority":"low"}`: false} {
		if got, err := cfg.Agents[0].Review.Asks([]byte(out)); err != nil || got != want {
			t.Fatalf("review of %s: %v %v", out, got, err)
		}
	}
	if _, err := config.Parse("/x/cairn.yaml", []byte(strings.Replace(valid, "agents:\n  main:", "agents:\n  main:\n    review: always", 1)), noEnv); err == nil || !strings.Contains(err.Error(), "agents.main.review: needs output_schema") {
		t.Fatalf("review without a schema: %v", err)
	}
	bad := strings.Replace(valid, "agents:\n  main:", "agents:\n  main:\n    output_schema: {type: 5}", 1)
	if _, err := config.Parse("/x/cairn.yaml", []byte(bad), noEnv); err == nil || !strings.Contains(err.Error(), "agents.main.output_schema: not a valid JSON Schema") {
		t.Fatalf("a bad schema: %v", err)
	}
}

// An approval rule that reads an argument the tool's parameters do not
// have loads (the rule is valid CEL) with a warning naming it, and the
// likely argument; one that reads only real arguments warns of nothing.
func TestRuleOverAMissingArgumentWarns(t *testing.T) {
	cfg, err := config.Parse("/etc/cairn/cairn.yaml", []byte(strings.Replace(valid, `approval: 'args.environment == "production"'`, `approval: 'args.enviroment == "production" || has(args.region) || args["env"] == "x"'`, 1)), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(cfg.Preflight(t.Context()), "\n")
	for _, want := range []string{
		`tools.deploy_code.approval: the rule reads args.enviroment, which the tool's parameters do not have (environment); did you mean "environment"?`,
		`the rule reads args.region`, `the rule reads args.env,`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("warnings:\n%s\nwant %q", got, want)
		}
	}
	cfg, err = config.Parse("/etc/cairn/cairn.yaml", []byte(valid), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cfg.Preflight(t.Context()), "\n"); strings.Contains(got, "the rule reads") {
		t.Fatalf("a rule over real arguments warned: %s", got)
	}
}
