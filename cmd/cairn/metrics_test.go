package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

const metricsConfig = `
store: sqlite:./m.db
models:
  demo:
    provider: scripted
    script:
      - tool_calls: [{name: lookup, arguments: {q: x}}]
      - text: "done"
tools:
  lookup: {builtin: echo, approval: always}
agents:
  main: {model: demo, tools: [lookup]}
`

// GET /metrics on cairn serve: after three sessions approved over HTTP, the
// counters say so.
func TestMetricsEndpoint(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "cairn.yaml")
	if err := os.WriteFile(cfg, []byte(metricsConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	_, url := serve(t, cfg)
	for range 3 {
		_, s := post(t, url+"/v1/sessions", `{"agent":"main","input":"go"}`)
		if code, _, err := decide(url, s); code != 200 || err != nil {
			t.Fatalf("decide: %d %v", code, err)
		}
	}
	// A CPU profile of the server, as anyone with the admin token takes one.
	prof, err := http.Get(url + "/debug/pprof/profile?seconds=1")
	if err != nil || prof.StatusCode != 200 {
		t.Fatalf("GET /debug/pprof/profile: %v %v", err, prof)
	}
	pb, _ := io.ReadAll(prof.Body)
	prof.Body.Close()
	if len(pb) < 2 || pb[0] != 0x1f || pb[1] != 0x8b { // pprof's gzipped protobuf
		t.Fatalf("the CPU profile is not pprof's format: %.40q", pb)
	}
	resp, err := http.Get(url + "/metrics")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /metrics: %v %v", err, resp)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	value := func(name string, labels ...string) float64 {
		t.Helper()
		for _, line := range strings.Split(string(b), "\n") {
			if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
				continue
			}
			ok := true
			for _, l := range labels {
				ok = ok && strings.Contains(line, l)
			}
			if ok {
				v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
				if err != nil {
					t.Fatal(err)
				}
				return v
			}
		}
		t.Fatalf("no %s %v in\n%s", name, labels, b)
		return 0
	}
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"cairn_turns_total", []string{`outcome="paused"`}, 3},
		{"cairn_turns_total", []string{`outcome="completed"`}, 3},
		{"cairn_decisions_total", []string{`action="approve"`, `kind="approval"`}, 3},
		{"cairn_tool_duration_seconds_count", []string{`tool="lookup"`, `outcome="ok"`}, 3},
		{"cairn_model_duration_seconds_count", []string{`agent="main"`}, 6},
		// 4 commits per session: the start is written with the model's answer.
		{"cairn_commit_duration_seconds_count", nil, 12},
		// And two: the signing key the store keeps (docs/audit.md), and
		// the agent's definition, stored once (docs/operations.md).
		{"cairn_store_writes_total", nil, 14},
	} {
		if got := value(c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if commits := value("cairn_store_commits_total"); commits < 1 || commits > 14 {
		t.Errorf("cairn_store_commits_total = %v", commits)
	}
	if !regexp.MustCompile(`(?m)^cairn_sse_streams\{`).Match(b) || !regexp.MustCompile(`(?m)^go_goroutines `).Match(b) {
		t.Errorf("no cairn_sse_streams or go_goroutines in\n%s", b)
	}
}
