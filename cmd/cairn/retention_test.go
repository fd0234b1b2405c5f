package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/testkit/testwait"
)

const retentionConfig = `
store: sqlite:./cairn.db
retention: {completed: RETAIN, sweep: 100ms}
models:
  demo:
    provider: scripted
    scripts:
      quick:
        - text: "done"
      ops:
        - tool_calls: [{name: deploy, arguments: {env: prod}}]
        - text: "{{.LastResult}}"
tools:
  deploy: {builtin: echo, approval: always}
agents:
  quick: {model: demo}
  ops: {model: demo, tools: [deploy]}
`

// fileBytes is the size of the SQLite file and its WAL.
func fileBytes(dir string) int64 {
	var n int64
	for _, name := range []string{"cairn.db", "cairn.db-wal"} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// startMany starts n sessions of agent with a large input, 8 at a time.
func startMany(t *testing.T, base, agent string, n int) []string {
	body, _ := json.Marshal(map[string]string{"agent": agent, "input": strings.Repeat("Release notes. ", 2000)})
	ids := make([]string, n)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < n; i += 8 {
				code, s := post(t, base+"/v1/sessions", string(body))
				if code != 201 {
					t.Errorf("start: %d %v", code, s)
					return
				}
				ids[i] = s["id"].(string)
			}
		})
	}
	wg.Wait()
	return ids
}

// With retention in the config, cairn serve deletes finished sessions past
// their time on its own: the paused one stays and can still be approved,
// /metrics counts the deletions, and the SQLite file gives the space back.
func TestServeRetention(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "cairn.yaml")
	if err := os.WriteFile(cfg, []byte(strings.Replace(retentionConfig, "RETAIN", "2s", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, base := serve(t, cfg)
	code, paused := post(t, base+"/v1/sessions", `{"agent":"ops","input":"deploy"}`)
	if code != 201 || paused["status"] != "paused" {
		t.Fatalf("%d %v", code, paused)
	}
	startMany(t, base, "quick", 300)
	full := fileBytes(dir)
	testwait.For(t, 30*time.Second, "the completed sessions to be deleted", func() bool {
		var page struct{ Sessions []map[string]any }
		resp, err := http.Get(base + "/v1/sessions?status=completed")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(&page); err != nil {
			t.Fatal(err)
		}
		return len(page.Sessions) == 0
	})
	if code, done, err := decide(base, paused); code != 200 || err != nil || done["status"] != "completed" {
		t.Fatalf("the paused session after the sweep: %d %v %v", code, done, err)
	}
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `cairn_sessions_purged_total{otel_scope_name="github.com/cairnhq/cairn",otel_scope_schema_url="",otel_scope_version="",status="completed"} 300`) &&
		!strings.Contains(string(b), `cairn_sessions_purged_total{status="completed"} 300`) {
		var lines []string
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, "purged") {
				lines = append(lines, l)
			}
		}
		t.Fatalf("/metrics on purges:\n%s", strings.Join(lines, "\n"))
	}
	testwait.For(t, 30*time.Second, "the file to shrink", func() bool { return fileBytes(dir) < full/2 })
	t.Logf("300 sessions of 30 KB: %d bytes; after the sweep %d", full, fileBytes(dir))
}

// cairn sessions purge: a dry run says what would go and deletes nothing;
// the real one deletes the finished sessions, never the paused one.
func TestSessionsPurgeCommand(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "cairn.yaml")
	if err := os.WriteFile(cfg, []byte(strings.Replace(strings.Replace(retentionConfig, "RETAIN", "1000h", 1), "sweep: 100ms", "sweep: 1h", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, base := serve(t, cfg)
	_, paused := post(t, base+"/v1/sessions", `{"agent":"ops","input":"deploy"}`)
	ids := startMany(t, base, "quick", 5)
	purge := func(args ...string) string {
		out, err := exec.Command(binary, append([]string{"sessions", "purge", "--config", cfg}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("purge %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	tomorrow := time.Now().Add(24 * time.Hour).Format(time.DateOnly)
	out := purge("--before", tomorrow, "--dry-run")
	if !strings.Contains(out, "would delete 5 completed sessions") || !strings.Contains(out, ids[0]) || strings.Contains(out, paused["id"].(string)) {
		t.Fatalf("dry run:\n%s", out)
	}
	if out := purge("--before", "30d"); !strings.Contains(out, "deleted 0 completed sessions") {
		t.Fatalf("nothing is 30 days old:\n%s", out)
	}
	if code, _ := getStatus(base + "/v1/sessions/" + ids[0]); code != 200 {
		t.Fatalf("the dry run deleted %s: %d", ids[0], code)
	}
	out = purge("--before", tomorrow)
	if !strings.Contains(out, "deleted 5 completed sessions") {
		t.Fatalf("purge:\n%s", out)
	}
	for _, id := range ids {
		if code, _ := getStatus(base + "/v1/sessions/" + id); code != 404 {
			t.Fatalf("%s after the purge: %d", id, code)
		}
	}
	if code, s := getStatus(base + "/v1/sessions/" + paused["id"].(string)); code != 200 || s["status"] != "paused" {
		t.Fatalf("the paused session: %d %v", code, s)
	}
	// What the purge left holds its chains.
	if out, err := exec.Command(binary, "audit", "verify", "--config", cfg).CombinedOutput(); err != nil || !strings.Contains(string(out), "1 sessions, ") || !strings.Contains(string(out), "5 purged (tombstones)") || strings.Contains(string(out), "not signed") || !strings.Contains(string(out), "every chain and signed checkpoint holds") {
		t.Fatalf("cairn audit verify after the purge: %v\n%s", err, out)
	}
	bad, err := exec.Command(binary, "sessions", "purge", "--config", cfg, "--before", tomorrow, "--status", "paused").CombinedOutput()
	if err == nil || !strings.Contains(string(bad), "only completed, failed or cancelled") {
		t.Fatalf("--status paused: %v\n%s", err, bad)
	}
}

func getStatus(url string) (int, map[string]any) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	var v map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		return resp.StatusCode, nil // not JSON: the callers check the status and the body
	}
	return resp.StatusCode, v
}
