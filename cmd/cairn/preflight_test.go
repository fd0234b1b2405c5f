package main

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// cairn serve says at start what will certainly fail later — a command
// tool whose executable does not exist or cannot run, a model base_url
// nobody answers — and serves anyway (issue 30).
func TestServeWarnsAtStartAboutWhatWillFail(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "deploy.sh"), []byte("#!/bin/sh\necho ok\n"), 0o644); err != nil { // not executable
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close() // nothing answers there now
	cfg := filepath.Join(dir, "cairn.yaml")
	if err := os.WriteFile(cfg, []byte(`
store: memory
models:
  demo: {provider: scripted, script: [{text: hi}]}
  local: {provider: openai, model: llama3.1, base_url: "http://`+closed+`/v1"}
tools:
  deploy: {command: ["./deploy.sh"]}
  lookup: {command: ["no-such-program-cairn-test"]}
  fine: {command: ["sh", "-c", "echo ok"]}
agents:
  main: {model: demo, tools: [deploy, lookup, fine]}
  other: {model: local}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, "serve", "--config", cfg, "--addr", "127.0.0.1:0")
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	var before []string
	listening := false
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "listening on ") {
			listening = true
			break
		}
		before = append(before, sc.Text())
	}
	out := strings.Join(before, "\n")
	for _, want := range []string{
		"warning: tools.deploy.command: " + filepath.Join(dir, "deploy.sh") + " is not executable (chmod +x it)",
		`warning: tools.lookup.command: "no-such-program-cairn-test" is not on PATH`,
		"warning: models.local.base_url: nothing answers at http://" + closed + "/v1",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stderr lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "tools.fine") {
		t.Errorf("a runnable command was warned about:\n%s", out)
	}
	if !listening {
		t.Errorf("the warnings stopped the server:\n%s", out)
	}
}
