package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// hostileProvider speaks OpenAI's Chat Completions wire format and
// misbehaves as the user message asks: a 50 MB text or tool-call
// arguments (plain JSON or streamed), headers and then nothing, or a byte
// every 200 ms for ever. It counts the requests per input.
type hostileProvider struct {
	mu    sync.Mutex
	calls map[string]int
	stop  chan struct{}
}

func (p *hostileProvider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Stream   bool `json:"stream"`
		Messages []struct {
			Content any `json:"content"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 {
		http.Error(w, "not a chat request", http.StatusBadRequest)
		return
	}
	input, _ := req.Messages[len(req.Messages)-1].Content.(string)
	p.mu.Lock()
	p.calls[input]++
	p.mu.Unlock()
	flush := func() { w.(http.Flusher).Flush() }
	switch input {
	case "big text", "big arguments":
		big := strings.Repeat("A", 50<<20)
		msg := map[string]any{"role": "assistant", "content": big}
		if input == "big arguments" {
			msg = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": "c1", "type": "function",
				"function": map[string]any{"name": "deploy", "arguments": `{"note":"` + big + `"}`}}}}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": "x", "object": "chat.completion", "created": 1, "model": "m",
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": "stop"}}})
	case "big stream":
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := func(content string) {
			b, _ := json.Marshal(map[string]any{"id": "x", "object": "chat.completion.chunk", "created": 1, "model": "m",
				"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": content}}}})
			fmt.Fprintf(w, "data: %s\n\n", b)
		}
		mib := strings.Repeat("A", 1<<20)
		for range 50 { // 1 MiB chunks: none alone trips a scanner
			chunk(mib)
		}
		io.WriteString(w, "data: [DONE]\n\n")
	case "stall", "stall stream":
		w.Header().Set("Content-Type", map[bool]string{true: "text/event-stream", false: "application/json"}[req.Stream])
		w.WriteHeader(200)
		flush()
		<-p.stop
	case "trickle":
		w.Header().Set("Content-Type", "text/event-stream")
		for {
			if _, err := io.WriteString(w, ":"); err != nil {
				return
			}
			flush()
			select {
			case <-p.stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
}

const hostileConfig = `
store: sqlite:./cairn.db
models:
  plain: {provider: openai, model: m, base_url: "%[1]s", max_retries: 0}
  streamed: {provider: openai, model: m, base_url: "%[1]s", stream: true, max_retries: 0}
  stalled: {provider: openai, model: m, base_url: "%[1]s", idle_timeout: 1s, max_retries: 1}
  stalled_stream: {provider: openai, model: m, base_url: "%[1]s", stream: true, idle_timeout: 1s, max_retries: 1}
  trickled: {provider: openai, model: m, base_url: "%[1]s", stream: true, timeout: 3s, idle_timeout: 1s}
tools:
  deploy: {command: ["sh", "-c", "echo ran >> runs.txt"], parameters: {type: object}}
agents:
  plain: {model: plain, tools: [deploy]}
  streamed: {model: streamed}
  stalled: {model: stalled}
  stalled_stream: {model: stalled_stream}
  trickled: {model: trickled}
`

// startHostile runs a hostile provider and a `cairn serve` configured for it.
func startHostile(t *testing.T) (p *hostileProvider, base, dir string, pid int) {
	t.Helper()
	p = &hostileProvider{calls: map[string]int{}, stop: make(chan struct{})}
	fake := httptest.NewServer(p)
	t.Cleanup(fake.Close)
	t.Cleanup(func() { close(p.stop) })
	dir = t.TempDir()
	cfg := filepath.Join(dir, "cairn.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(hostileConfig, fake.URL+"/v1")), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd, base := serve(t, cfg)
	return p, base, dir, cmd.Process.Pid
}

func dbBytes(dir string) int64 {
	var n int64
	for _, f := range []string{"cairn.db", "cairn.db-wal"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err == nil {
			n += st.Size()
		}
	}
	return n
}

// Three 50 MB replies at once (text, tool-call arguments, a stream): each
// session fails with model_reply_too_large naming the limit, the server's
// peak memory stays under 150 MiB, the database grows by less than 1 MB,
// and nothing ran.
func TestHugeModelRepliesAreRefused(t *testing.T) {
	_, base, dir, pid := startHostile(t)
	before := dbBytes(dir)
	var wg sync.WaitGroup
	results := make([]map[string]any, 3)
	for i, c := range [][2]string{{"plain", "big text"}, {"plain", "big arguments"}, {"streamed", "big stream"}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, results[i] = post(t, base+"/v1/sessions", fmt.Sprintf(`{"agent":%q,"input":%q}`, c[0], c[1]))
		}()
	}
	wg.Wait()
	for i, s := range results {
		e, _ := s["error"].(map[string]any)
		if s["status"] != "failed" || e["code"] != "model_reply_too_large" || !strings.Contains(fmt.Sprint(e["message"]), "8MiB (max_reply_bytes)") {
			t.Fatalf("session %d: %v", i, s)
		}
	}
	peak := peakRSS(pid)
	grew := dbBytes(dir) - before
	t.Logf("peak RSS %.1f MiB, database grew %d bytes", float64(peak)/(1<<20), grew)
	if peak > 150<<20 || grew > 1<<20 {
		t.Fatalf("peak RSS %d MiB (bound 150), database grew %d bytes (bound 1 MB)", peak>>20, grew)
	}
	if _, err := os.Stat(filepath.Join(dir, "runs.txt")); err == nil {
		t.Fatal("a tool ran from an oversized reply")
	}
}

// A provider that sends headers and then nothing, plain or streamed, ends
// in model_timeout within idle_timeout × (1 + max_retries) plus backoff;
// one that trickles a byte at a time ends at the call's timeout. No
// session stays running.
func TestStalledProvidersEndTheCall(t *testing.T) {
	p, base, _, _ := startHostile(t)
	cases := []struct {
		agent, input string
		calls        int
		within       time.Duration
	}{
		{"stalled", "stall", 1, 10 * time.Second},
		{"stalled_stream", "stall stream", 1, 10 * time.Second},
		{"trickled", "trickle", 1, 10 * time.Second},
	}
	var wg sync.WaitGroup
	for _, c := range cases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			_, s := post(t, base+"/v1/sessions", fmt.Sprintf(`{"agent":%q,"input":%q}`, c.agent, c.input))
			took := time.Since(start)
			e, _ := s["error"].(map[string]any)
			if s["status"] != "failed" || e["code"] != "model_timeout" || took > c.within {
				t.Errorf("%s: after %v: %v", c.agent, took, s)
			}
			t.Logf("%s: %v: %v", c.agent, took.Round(time.Millisecond), e["message"])
		}()
	}
	wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	// The stall before any byte of the body is read counts as a failed
	// attempt after the headers: the SDKs do not retry it.
	if p.calls["stall"] < 1 || p.calls["trickle"] != 1 {
		t.Fatalf("provider calls %v", p.calls)
	}
	list := getJSON(t, base+"/v1/sessions?status=running")["sessions"].([]any)
	if len(list) != 0 {
		t.Fatalf("sessions still running: %v", list)
	}
}
