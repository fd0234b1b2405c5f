package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cairnhq/cairn/internal/testkit/testwait"
)

// -replicas.full runs the fault counts of docs/reliability.md (kill -9 ×20,
// rolling restarts ×5); by default each fault runs a few times.
var replicasFull = flag.Bool("replicas.full", false, "run the full multi-process fault counts (slow)")

// replicaConfig: a deploy tool that needs approval, takes 1.5s, and logs
// its start and end with its idempotency key; a 3s lease.
const replicaConfig = `
store: %s
lease: 3s
shutdown_grace: 20s
models:
  demo:
    provider: scripted
    script:
      - tool_calls: [{name: deploy, arguments: {environment: production}}]
      - text: "done: {{.LastResult}}"
tools:
  deploy:
    parameters: {type: object, properties: {environment: {type: string}}, required: [environment]}
    command: ["sh", "-c", "echo \"start $CAIRN_IDEMPOTENCY_KEY $$\" >> runs.txt; sleep 1.5; echo \"end $CAIRN_IDEMPOTENCY_KEY\" >> runs.txt; echo deployed"]
    approval: always
agents:
  main: {model: demo, tools: [deploy]}
`

type cluster struct {
	t     *testing.T
	dir   string
	cfg   string
	mu    sync.Mutex
	nodes []*exec.Cmd
	urls  []string
}

// newCluster starts n `cairn serve` processes sharing the store at url.
func newCluster(t *testing.T, storeURL string, n int) *cluster {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "cairn.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(replicaConfig, storeURL)), 0o600); err != nil {
		t.Fatal(err)
	}
	c := &cluster{t: t, dir: dir, cfg: cfg, nodes: make([]*exec.Cmd, n), urls: make([]string, n)}
	for i := range n {
		c.start(i)
	}
	t.Cleanup(func() {
		// Orphaned tools of killed nodes live in their own process groups.
		for _, line := range strings.Split(string(mustRead(t, filepath.Join(dir, "runs.txt"))), "\n") {
			var key string
			var pid int
			if _, err := fmt.Sscanf(line, "start %s %d", &key, &pid); err == nil {
				syscall.Kill(-pid, syscall.SIGKILL)
			}
		}
	})
	return c
}

func (c *cluster) start(i int) {
	cmd, url := serve(c.t, c.cfg)
	c.mu.Lock()
	c.nodes[i], c.urls[i] = cmd, url
	c.mu.Unlock()
}

func (c *cluster) url(i int) string { c.mu.Lock(); defer c.mu.Unlock(); return c.urls[i] }

// runs counts the starts and ends of the tool per idempotency key.
func (c *cluster) runs() (starts, ends map[string]int) {
	starts, ends = map[string]int{}, map[string]int{}
	b, _ := os.ReadFile(filepath.Join(c.dir, "runs.txt"))
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "start" {
			starts[f[1]]++
		}
		if len(f) >= 2 && f[0] == "end" {
			ends[f[1]]++
		}
	}
	return starts, ends
}

func decide(url string, s map[string]any) (int, map[string]any, error) {
	in := s["interrupts"].([]any)[0].(map[string]any)
	body := fmt.Sprintf(`{"seq":%v,"decisions":[{"interrupt_id":%q,"action":"approve"}]}`, s["seq"], in["id"])
	resp, err := http.Post(url+"/v1/sessions/"+s["id"].(string)+"/decisions", "application/json", strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return resp.StatusCode, nil, fmt.Errorf("the answer is not the API's JSON: %w", err)
	}
	return resp.StatusCode, out, nil
}

func eventsOf(t *testing.T, url, id string) []map[string]any {
	var out struct{ Events []map[string]any }
	resp, err := http.Get(url + "/v1/sessions/" + id + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out.Events
}

func inDoubtIn(evs []map[string]any) bool {
	for _, ev := range evs {
		if b, _ := json.Marshal(ev["data"]); strings.Contains(string(b), `"in_doubt":true`) {
			return true
		}
	}
	return false
}

// stores returns the shared stores to test on: one SQLite file, and a fresh
// PostgreSQL database when CAIRN_TEST_POSTGRES is set.
func stores(t *testing.T) map[string]func(t *testing.T) string {
	out := map[string]func(t *testing.T) string{
		"sqlite": func(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), "shared.db") },
	}
	if url := os.Getenv("CAIRN_TEST_POSTGRES"); url != "" {
		out["postgres"] = func(t *testing.T) string {
			ctx := context.Background()
			conn, err := pgx.Connect(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			name := fmt.Sprintf("cairn_r%d_%d", os.Getpid(), time.Now().UnixNano())
			if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
				t.Fatal(err)
			}
			cfg, _ := pgx.ParseConfig(url)
			return fmt.Sprintf("postgres://%s@%s:%d/%s?sslmode=disable", cfg.User, cfg.Host, cfg.Port, name)
		}
	}
	return out
}

// kill -9 of the node running an approved tool: another node takes the
// session over within lease + 5s, the call is in doubt, and the tool was
// never started a second time.
func TestReplicasKill9MidTool(t *testing.T) {
	rounds := 2
	if *replicasFull {
		rounds = 20
	}
	for name, mk := range stores(t) {
		t.Run(name, func(t *testing.T) {
			c := newCluster(t, mk(t), 3)
			var worst time.Duration
			for round := range rounds {
				victim := round % 3
				_, s := post(t, c.url(victim)+"/v1/sessions", `{"agent":"main","input":"deploy"}`)
				go func() { _, _, _ = decide(c.url(victim), s) }() // the node dies under it: its answer does not matter
				id := s["id"].(string)
				testwait.For(t, 10*time.Second, fmt.Sprintf("round %d's tool to start", round), func() bool {
					starts, _ := c.runs()
					return len(starts) == round+1
				})
				c.nodes[victim].Process.Signal(os.Kill)
				c.nodes[victim].Wait()
				killed := time.Now()
				other := c.url((victim + 1) % 3)
				var got map[string]any
				testwait.For(t, 3*time.Second+5*time.Second, fmt.Sprintf("round %d: a takeover within lease + 5s", round), func() bool {
					got = getJSON(t, other+"/v1/sessions/"+id)
					return got["status"] == "paused"
				})
				worst = max(worst, time.Since(killed))
				ins := got["interrupts"].([]any)
				if len(ins) != 1 || ins[0].(map[string]any)["in_doubt"] != true {
					t.Fatalf("round %d: %v", round, got)
				}
				starts, _ := c.runs()
				for key, n := range starts {
					if n != 1 {
						t.Fatalf("round %d: call %s started %d times", round, key, n)
					}
				}
				c.start(victim)
			}
			t.Logf("%s: %d kill -9 rounds; slowest takeover %s (lease 3s)", name, rounds, worst.Round(10*time.Millisecond))
			// Every chain holds after the takeovers: the node that took a
			// session over went on from the last recorded event's hash.
			if out, err := exec.Command(binary, "audit", "verify", "--config", c.cfg).CombinedOutput(); err != nil || !strings.Contains(string(out), "every chain and signed checkpoint holds") {
				t.Fatalf("cairn audit verify after the takeovers: %v\n%s", err, out)
			}
		})
	}
}

// Every node restarted in turn with SIGTERM while 20 approved slow tools run:
// every request answers 200 (no false 409), each tool ran exactly once, no
// call is in doubt; an SSE client on another node follows a session to its
// end in order.
func TestReplicasRollingRestart(t *testing.T) {
	rounds := 1
	if *replicasFull {
		rounds = 5
	}
	for name, mk := range stores(t) {
		t.Run(name, func(t *testing.T) {
			c := newCluster(t, mk(t), 3)
			for round := range rounds {
				var sessions []map[string]any
				for i := range 20 {
					_, s := post(t, c.url(i%3)+"/v1/sessions", `{"agent":"main","input":"deploy"}`)
					if s["status"] != "paused" {
						t.Fatalf("start: %v", s)
					}
					sessions = append(sessions, s)
				}
				sse := followSSE(t, c.url(2), sessions[0]["id"].(string))
				type answer struct {
					code int
					body map[string]any
					err  error
				}
				answers := make([]answer, len(sessions))
				var wg sync.WaitGroup
				// Three waves: node i gets SIGTERM while the wave's tools run,
				// half of them on node i (it drains them) and half on the next
				// node (whose live calls node i's start-up takeover must leave alone).
				for i := range 3 {
					for k, s := range sessions {
						if k%3 != i {
							continue
						}
						url := c.url(i)
						if (k/3)%2 == 1 {
							url = c.url((i + 1) % 3)
						}
						wg.Add(1)
						go func() {
							defer wg.Done()
							code, body, err := decide(url, s)
							answers[k] = answer{code, body, err}
						}()
					}
					time.Sleep(400 * time.Millisecond) // elapsed time: the wave's tools are running when SIGTERM comes
					c.nodes[i].Process.Signal(syscall.SIGTERM)
					if err := c.nodes[i].Wait(); err != nil {
						t.Fatalf("node %d exit: %v", i, err)
					}
					c.start(i)
				}
				wg.Wait()
				for i, a := range answers {
					if a.err != nil || a.code != 200 || a.body["status"] != "completed" {
						t.Fatalf("round %d, session %d: %d %v %v", round, i, a.code, a.err, a.body)
					}
					if inDoubtIn(eventsOf(t, c.url(0), sessions[i]["id"].(string))) {
						t.Fatalf("round %d, session %d: a call was marked in doubt", round, i)
					}
				}
				starts, ends := c.runs()
				if len(starts) != 20*(round+1) {
					t.Fatalf("%d calls started, want %d", len(starts), 20*(round+1))
				}
				for key, n := range starts {
					if n != 1 || ends[key] != 1 {
						t.Fatalf("call %s: %d starts, %d ends", key, n, ends[key])
					}
				}
				if seqs := <-sse; len(seqs) == 0 {
					t.Fatal("the SSE client saw nothing")
				} else {
					for i, seq := range seqs {
						if seq != int64(i+1) {
							t.Fatalf("SSE seqs %v: want 1..N in order, none twice", seqs)
						}
					}
				}
			}
		})
	}
}

// followSSE reads a session's SSE stream until turn_completed and sends the
// seqs it saw.
func followSSE(t *testing.T, url, id string) <-chan []int64 {
	out := make(chan []int64, 1)
	req, _ := http.NewRequest("GET", url+"/v1/sessions/"+id+"/events", nil)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer resp.Body.Close()
		var seqs []int64
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			var seq int64
			if _, err := fmt.Sscanf(sc.Text(), "id: %d", &seq); err == nil {
				seqs = append(seqs, seq)
			}
			if sc.Text() == "event: turn_completed" {
				break
			}
		}
		out <- seqs
	}()
	return out
}
