package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/cairnhq/cairn/internal/testkit/testwait"
)

const terminalConfig = `
store: memory
models:
  demo:
    provider: scripted
    script:
      - tool_calls: [{name: deploy, arguments: {environment: production}}]
      - text: "done: {{.LastResult}}"
tools:
  deploy:
    parameters: {type: object, properties: {environment: {type: string, enum: [staging, production]}}, required: [environment]}
    command: ["sh", "-c", "cat"]
    approval: always
    confirmation: "Deploy to {{.environment}}?"
agents:
  main: {model: demo, tools: [deploy]}
`

// terminal is cairn chat on a pseudo-terminal, as a person runs it.
type terminal struct {
	t   *testing.T
	tty *os.File
	mu  sync.Mutex
	out bytes.Buffer
}

func startTerminal(t *testing.T) *terminal {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "cairn.yaml")
	if err := os.WriteFile(cfg, []byte(terminalConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, "chat", "--config", cfg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "EDITOR=", "VISUAL=")
	tty, err := pty.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	term := &terminal{t: t, tty: tty}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait(); tty.Close() })
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := tty.Read(buf)
			term.mu.Lock()
			term.out.Write(buf[:n])
			term.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return term
}

// screen is everything the terminal showed so far.
func (term *terminal) screen() string {
	term.mu.Lock()
	defer term.mu.Unlock()
	return term.out.String()
}

// expect waits until the terminal shows want n times in all.
func (term *terminal) expect(want string, n int) {
	term.t.Helper()
	testwait.For(term.t, 20*time.Second, "the terminal to show "+want, func() bool { return strings.Count(term.screen(), want) >= n })
}

// typeLine types a line and Enter.
func (term *terminal) typeLine(s string) {
	term.t.Helper()
	if _, err := io.WriteString(term.tty, s+"\n"); err != nil {
		term.t.Fatal(err)
	}
}

// A refused edit asks for the JSON again (not for a decision, where the
// corrected JSON would have been a rejection reason): the corrected
// arguments run. The prompt shows the tool and its arguments.
func TestTerminalRefusedEditAsksForTheJSONAgain(t *testing.T) {
	term := startTerminal(t)
	term.expect("you → main> ", 1)
	term.typeLine("deploy it")
	term.expect(`main wants to run deploy with {"environment":"production"}`, 1)
	term.expect("approve? Deploy to production?", 1)
	term.typeLine("e")
	term.expect("new arguments (JSON): ", 1)
	term.typeLine(`{"environment":"moon"}`)
	term.expect("the new arguments were refused", 1)
	term.expect("new arguments (JSON): ", 2)
	term.typeLine(`{"environment":"staging"}`)
	term.expect(`done: [A person approved this call with other arguments`, 1)
	if s := term.screen(); !strings.Contains(s, `it ran with {"environment":"staging"}`) || strings.Contains(s, "rejected") || strings.Count(s, "refused") != 1 {
		t.Fatalf("the terminal (the refusal said once):\n%s", s)
	}
}

// At an approval prompt, /cancel all cancels the turn instead of being
// taken as a rejection reason; JSON typed there is offered as new
// arguments, and taken only when confirmed.
func TestTerminalCommandsAtTheApprovalPrompt(t *testing.T) {
	term := startTerminal(t)
	term.expect("you → main> ", 1)
	term.typeLine("/cancel")
	term.expect("nothing to cancel: no session yet", 1)
	term.typeLine("deploy it")
	term.expect("approve? Deploy to production? [y]es [n]o [a]lways [r]ule [e]dit, never[: why], /cancel all, /help, or a reason: ", 1)
	term.typeLine(`{"environment":"staging"}`)
	term.expect("approve with these arguments instead? [y]es [n]o: ", 1)
	term.typeLine("n")
	term.expect("approve? Deploy to production?", 2)
	term.typeLine("/cancel all")
	term.expect("(the turn was cancelled; your next message starts a new one)", 1)
	if s := term.screen(); strings.Contains(s, "rejected") || strings.Contains(s, "done:") {
		t.Fatalf("the terminal:\n%s", s)
	}
}
