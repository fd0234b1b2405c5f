package config_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/config"
)

const waitsConfig = `public_url: https://cairn.example.org
store: memory
models:
  default: {provider: scripted, script: [{tool_calls: [{name: run_pipeline, arguments: {ref: main}}]}, {text: "{{.LastResult}}"}]}
tools:
  run_pipeline:
    parameters: {type: object, properties: {ref: {type: string}}}
    command: ["sh", "-c", "echo \"$CAIRN_CALLBACK_URL\" > callback.txt; echo pipeline 7 started"]
    wait: {timeout: 30m, on_timeout: retry, retries: 3}
    result_schema: {type: object, properties: {status: {type: string}}, required: [status]}
  pick_file:
    kind: client
    parameters: {type: object, properties: {accept: {type: string}}}
    result_schema: {type: object, properties: {path: {type: string}}, required: [path]}
agents:
  main: {model: default, tools: [run_pipeline, pick_file]}
`

// wait, kind: client and result_schema: a waiting command gets its
// callback URL and its stdout is the message shown while it waits; a client
// tool has no command.
func TestWaitsConfig(t *testing.T) {
	dir := t.TempDir()
	cfg, err := config.Parse(filepath.Join(dir, "cairn.yaml"), []byte(waitsConfig), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	tools := cfg.Agents[0].Tools
	if tools[0].Wait == nil || tools[0].Wait.Timeout != 30*time.Minute || tools[0].Wait.OnTimeout != cairn.OnTimeoutRetry || tools[0].Wait.Retries != 3 {
		t.Fatalf("run_pipeline's wait: %+v", tools[0].Wait)
	}
	r, err := cairn.NewRunner(cfg.Agents, &cairn.RunnerOptions{PublicURL: cfg.PublicURL})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if info := r.Agents()[0].Tools[1]; info.Kind != "client" || !strings.Contains(string(info.ResultSchema), `"path"`) {
		t.Fatalf("pick_file: %+v", info)
	}
	s, err := r.Start(context.Background(), "main", "build main", nil)
	if err != nil {
		t.Fatal(err)
	}
	in := s.Interrupts[0]
	if s.Status != cairn.StatusPaused || in.Kind != cairn.KindExternal || in.Message != "pipeline 7 started" || in.ExpiresAt == nil {
		t.Fatalf("%+v", s)
	}
	b, err := os.ReadFile(filepath.Join(dir, "callback.txt"))
	if err != nil {
		t.Fatal(err)
	}
	url := strings.TrimSpace(string(b))
	token, ok := strings.CutPrefix(url, "https://cairn.example.org"+cairn.CallbackPath)
	if !ok {
		t.Fatalf("CAIRN_CALLBACK_URL = %q", url)
	}
	if _, err := r.Callback(context.Background(), token, cairn.Completion{Output: json.RawMessage(`{"state":"ok"}`)}); !errors.Is(err, cairn.ErrInvalidOutput) {
		t.Fatalf("a result off the result_schema: %v", err)
	}
	done, err := r.Callback(context.Background(), token, cairn.Completion{Output: json.RawMessage(`{"status":"passed"}`)})
	if err != nil || done.Output != `{"status":"passed"}` {
		t.Fatalf("%v %+v", err, done)
	}
}

func TestWaitsConfigMistakes(t *testing.T) {
	cases := []struct{ name, yaml, want string }{
		{"no public_url", strings.Replace(waitsConfig, "public_url: https://cairn.example.org\n", "", 1), `tools.run_pipeline.wait: the command is given a callback URL built from public_url, which is not set`},
		{"bad outcome", strings.Replace(waitsConfig, "on_timeout: retry", "on_timeout: panic", 1), `tools.run_pipeline.wait.on_timeout: "panic" is not error (the model is told), retry (the command runs again) or ask (a person decides)`},
		{"bad timeout", strings.Replace(waitsConfig, "timeout: 30m", "timeout: soon", 1), `tools.run_pipeline.wait.timeout: "soon" is not a positive duration`},
		{"retries without retry", strings.Replace(waitsConfig, "on_timeout: retry", "on_timeout: ask", 1), `tools.run_pipeline.wait.retries: bounds on_timeout: retry`},
		{"client with a command", strings.Replace(waitsConfig, "    kind: client\n", "    kind: client\n    command: [\"true\"]\n", 1), `tools.pick_file.command: a client tool has no command`},
		{"unknown kind", strings.Replace(waitsConfig, "kind: client", "kind: browser", 1), `tools.pick_file.kind: unknown kind "browser"`},
		{"result schema without a wait", strings.Replace(waitsConfig, "    wait: {timeout: 30m, on_timeout: retry, retries: 3}\n", "", 1), `tools.run_pipeline.result_schema: only a tool whose result arrives later has one`},
		{"bad result schema", strings.Replace(waitsConfig, "required: [path]", "required: 7", 1), `tools.pick_file.result_schema: not a valid JSON Schema`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := config.Parse("/etc/cairn/cairn.yaml", []byte(c.yaml), noEnv)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v\nwant it to contain %q", err, c.want)
			}
		})
	}
}

// A file with three typos is told all three at once, each at its line and
// key path (issue 30).
func TestConfigTellsEveryTypoAtOnce(t *testing.T) {
	_, err := config.Parse("/etc/cairn/cairn.yaml", []byte(`stroe: memory
models:
  demo: {provder: scripted, script: [{text: hi}]}
agents:
  main: {modle: demo}
`), noEnv)
	var all config.Errors
	if !errors.As(err, &all) || len(all) != 3 {
		t.Fatalf("err = %v", err)
	}
	for i, want := range []string{`cairn.yaml:1: stroe: unknown key "stroe"`, `cairn.yaml:3: models.demo.provder: unknown key "provder"`, `cairn.yaml:5: agents.main.modle: unknown key "modle"`} {
		if !strings.Contains(all[i].Error(), want) {
			t.Errorf("mistake %d: %v, want %q", i, all[i], want)
		}
	}
}
