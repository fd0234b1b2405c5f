package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/testkit/testwait"
)

// Rolling SIGTERM restarts of three nodes under a steady load of new
// sessions and approvals (keep-alive connections, so requests reach a node
// as it starts to drain): a draining node answers new work 503 with
// Retry-After, never 409; every session ends completed once a client
// retries elsewhere; no call is in doubt (the drain waits for the running
// tools), and every approved tool ran once.
func TestRollingRestartsUnderLoad(t *testing.T) {
	for name, mk := range stores(t) {
		t.Run(name, func(t *testing.T) { testRollingRestartsUnderLoad(t, mk(t)) })
	}
}

func testRollingRestartsUnderLoad(t *testing.T, storeURL string) {
	c := newCluster(t, storeURL, 3)
	client := &http.Client{Timeout: 60 * time.Second}
	var codes sync.Map // "create 503" → *atomic.Int64
	count := func(what string, code int) {
		n, _ := codes.LoadOrStore(fmt.Sprintf("%s %d", what, code), new(atomic.Int64))
		n.(*atomic.Int64).Add(1)
	}
	// call sends one request to node i; 0 when the node is not listening
	// (a load balancer moves on), and checks a 503's Retry-After.
	call := func(i int, what, path, body string) (int, map[string]any) {
		req, _ := http.NewRequest("POST", c.url(i)+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			count(what, 0)
			return 0, nil
		}
		defer resp.Body.Close()
		var v map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
			t.Fatal(err)
		}
		count(what, resp.StatusCode)
		if resp.StatusCode == 503 && resp.Header.Get("Retry-After") == "" {
			t.Errorf("%s: 503 without Retry-After: %v", what, v)
		}
		return resp.StatusCode, v
	}
	stop := make(chan struct{})
	var ids sync.Map
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Go(func() {
			for k := w; ; k++ {
				select {
				case <-stop:
					return
				default:
				}
				var s map[string]any
				for try := 0; s == nil; try++ { // a client that retries on the next node
					if code, v := call((k+try)%3, "create", "/v1/sessions", `{"agent":"main","input":"deploy"}`); code == 201 {
						s = v
					} else if code != 0 && code != 503 {
						t.Errorf("create: %d %v", code, v)
						return
					}
				}
				id := s["id"].(string)
				ids.Store(id, true)
				in := s["interrupts"].([]any)[0].(map[string]any)
				body := fmt.Sprintf(`{"seq":%v,"decisions":[{"interrupt_id":%q,"action":"approve"}]}`, s["seq"], in["id"])
				for try := 0; ; try++ {
					code, v := call((k+try+1)%3, "decide", "/v1/sessions/"+id+"/decisions", body)
					if code == 200 {
						break
					}
					if code == 409 && strings.Contains(fmt.Sprint(v), "already_decided") {
						break // decided by a try whose answer was cut off
					}
					if code != 0 && code != 503 {
						t.Errorf("decide %s: %d %v", id, code, v)
						return
					}
					time.Sleep(100 * time.Millisecond) // elapsed time: a client's backoff after a 503
				}
			}
		})
	}
	time.Sleep(2 * time.Second) // elapsed time: load before the first restart
	for i := range 3 {
		c.nodes[i].Process.Signal(syscall.SIGTERM)
		if err := c.nodes[i].Wait(); err != nil {
			t.Fatalf("node %d exit: %v", i, err)
		}
		c.start(i)
		time.Sleep(1500 * time.Millisecond) // elapsed time: load between restarts
	}
	close(stop)
	wg.Wait()

	var summary []string
	codes.Range(func(k, v any) bool {
		summary = append(summary, fmt.Sprintf("%s×%d", k, v.(*atomic.Int64).Load()))
		return true
	})
	t.Logf("answers: %s", strings.Join(summary, ", "))
	n := 0
	ids.Range(func(k, _ any) bool {
		n++
		id := k.(string)
		testwait.For(t, 30*time.Second, id+" to complete", func() bool {
			_, s := getStatus(c.url(0) + "/v1/sessions/" + id)
			return s["status"] == "completed"
		})
		if inDoubtIn(eventsOf(t, c.url(1), id)) {
			t.Errorf("session %s: a call was marked in doubt", id)
		}
		return true
	})
	starts, ends := c.runs()
	if len(starts) != n {
		t.Errorf("%d calls started for %d sessions", len(starts), n)
	}
	for key, k := range starts {
		if k != 1 || ends[key] != 1 {
			t.Errorf("call %s: %d starts, %d ends", key, k, ends[key])
		}
	}
	if n < 20 {
		t.Errorf("only %d sessions under load", n)
	}
}
