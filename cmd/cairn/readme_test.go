package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The README's quick start as written: each curl line of its shell block
// runs against the demo (the placeholders SESSION_ID and INTERRUPT_ID
// filled in), and each "# →" line's fields are in the answer it follows.
func TestReadmeQuickStartAsWritten(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl is not installed (.ci/run installs it)")
	}
	readme := string(mustRead(t, filepath.Join("..", "..", "README.md")))
	_, block, ok := strings.Cut(readme, "Drive it from another terminal:\n\n```sh\n")
	if !ok {
		t.Fatal("README.md: no shell block after \"Drive it from another terminal:\"")
	}
	block, _, _ = strings.Cut(block, "```")
	block = strings.ReplaceAll(block, "\\\n", "")

	dir := t.TempDir()
	for _, name := range []string{"cairn.yaml", "deploy.sh", "plan.sh"} {
		if err := os.WriteFile(filepath.Join(dir, name), mustRead(t, filepath.Join("..", "..", "examples", "demo", name)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	_, base := serve(t, filepath.Join(dir, "cairn.yaml"))
	host := strings.TrimPrefix(base, "http://")

	field := regexp.MustCompile(`"[a-z_]+":("[^"…]*"|\d+|\{[^{}…]*\})`)
	var sessionID, interruptID, last string
	ran := 0
	for _, line := range strings.Split(block, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "curl "):
			cmdline := strings.NewReplacer("localhost:8080", host, "SESSION_ID", sessionID, "INTERRUPT_ID", interruptID).Replace(line)
			stream := strings.Contains(cmdline, "text/event-stream")
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			if stream {
				cmdline += " --max-time 2" // a live stream never ends by itself
			}
			out, err := exec.CommandContext(ctx, "sh", "-c", strings.Replace(cmdline, "curl", curl, 1)).Output()
			cancel()
			if err != nil && !(stream && strings.Contains(err.Error(), "exit status 28")) {
				t.Fatalf("%s: %v\n%s", line, err, out)
			}
			last = string(out)
			ran++
			if sessionID == "" {
				var s struct {
					ID         string
					Interrupts []struct{ ID string }
				}
				if json.Unmarshal(out, &s) != nil || s.ID == "" || len(s.Interrupts) != 1 {
					t.Fatalf("%s: %s", line, out)
				}
				sessionID, interruptID = s.ID, s.Interrupts[0].ID
			}
			if stream && !strings.Contains(last, "event: session_started") {
				t.Fatalf("%s: %s", line, out)
			}
			if strings.HasSuffix(line, "/events") && !strings.Contains(last, `"type":"turn_completed"`) {
				t.Fatalf("%s: %s", line, out)
			}
		case strings.HasPrefix(line, "# →"), strings.HasPrefix(line, "#    ") && strings.Contains(line, `":`):
			for _, f := range field.FindAllString(line, -1) {
				if !strings.Contains(last, f) {
					t.Errorf("the README says %s; the server answered:\n%s", f, last)
				}
			}
		}
	}
	if ran != 5 {
		t.Fatalf("ran %d curl lines of the README's quick start; want 5", ran)
	}
}
