package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/testkit/testwait"
)

// rssBytes reads a process's resident set size.
func rssBytes(pid int) int64 { return procBytes(pid, "VmRSS:") }

// peakRSS reads a process's peak resident set size.
func peakRSS(pid int) int64 { return procBytes(pid, "VmHWM:") }

// procBytes reads a size in kB from /proc/PID/status (0 when unknown).
func procBytes(pid int, field string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == field {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// 160 sessions with 4 MB inputs, 1,000 idle SSE streams and 50 slowloris
// connections against one real `cairn serve`: its memory stays bounded
// (the state cache holds 64 MiB, not 640 MB of sessions), it keeps
// answering, and the slowloris connections are cut off.
func TestBoundedUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("loads a server with 640 MB of input")
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "cairn.yaml")
	conf := strings.ReplaceAll(fmt.Sprintf(replicaConfig, "sqlite:./cairn.db"), "runs.txt", filepath.Join(dir, "runs.txt"))
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd, url := serve(t, cfg)
	pid := cmd.Process.Pid
	base := rssBytes(pid)

	var peak atomic.Int64
	stopWatch := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			if r := rssBytes(pid); r > peak.Load() {
				peak.Store(r)
			}
			select {
			case <-stopWatch:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()

	// 50 slowloris connections: a header byte every second, never done.
	var slow []net.Conn
	host := strings.TrimPrefix(url, "http://")
	for range 50 {
		c, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		slow = append(slow, c)
		if _, err := c.Write([]byte("POST /v1/sessions HTTP/1.1\r\nHost: x\r\n")); err != nil {
			t.Fatal(err)
		}
	}
	slowStart := time.Now()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for i := 0; ctx.Err() == nil; i++ {
			for _, c := range slow {
				_, _ = c.Write([]byte("X")) // the server may have closed it: that is what is tested
			}
			time.Sleep(time.Second) // elapsed time: slowloris: a byte a second
		}
	}()

	// 160 sessions with 4 MB inputs, four clients at a time.
	input := strings.Repeat("Deploy. ", 500_000) // 4,000,000 bytes
	body, _ := json.Marshal(map[string]any{"agent": "main", "input": input})
	ids := make(chan string, 160)
	var wg sync.WaitGroup
	var failed atomic.Int32
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < 160; i += 4 {
				resp, err := http.Post(url+"/v1/sessions", "application/json", strings.NewReader(string(body)))
				if err != nil {
					failed.Add(1)
					continue
				}
				var s map[string]any
				err = json.NewDecoder(resp.Body).Decode(&s)
				resp.Body.Close()
				if err != nil {
					failed.Add(1)
					continue
				}
				if resp.StatusCode != 201 || s["status"] != "paused" {
					failed.Add(1)
					continue
				}
				ids <- s["id"].(string)
			}
		}()
	}
	wg.Wait()
	close(ids)
	if failed.Load() > 0 {
		t.Fatalf("%d of 160 large sessions failed", failed.Load())
	}
	var sessions []string
	for id := range ids {
		sessions = append(sessions, id)
	}

	// 1,000 idle SSE streams spread over the sessions, each from its
	// current seq (nothing to replay).
	streamCtx, stopStreams := context.WithCancel(ctx)
	defer stopStreams()
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 0, MaxIdleConnsPerHost: 1000}}
	var open atomic.Int32
	var swg sync.WaitGroup
	for i := range 1000 {
		swg.Add(1)
		go func() {
			defer swg.Done()
			req, _ := http.NewRequestWithContext(streamCtx, "GET", url+"/v1/sessions/"+sessions[i%len(sessions)]+"/events", nil)
			req.Header.Set("Accept", "text/event-stream")
			req.Header.Set("Last-Event-ID", "1000000")
			resp, err := client.Do(req)
			if err != nil {
				return
			}
			defer resp.Body.Close()
			if resp.StatusCode == 200 {
				open.Add(1)
				_, _ = bufio.NewReader(resp.Body).ReadByte() // blocks: the stream is idle; how it ends is checked below
			}
		}()
	}
	testwait.For(t, 30*time.Second, "1000 open streams", func() bool { return open.Load() == 1000 })

	// Under all of it the server answers.
	for _, path := range []string{"/healthz", "/v1/sessions?limit=10", "/v1/interrupts?limit=10"} {
		start := time.Now()
		resp, err := http.Get(url + path)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET %s under load: %v %v", path, err, resp)
		}
		resp.Body.Close()
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("GET %s took %s under load", path, d)
		}
	}
	// And a large session still resumes (its state left the cache long ago).
	paused := getJSON(t, url+"/v1/sessions/"+sessions[0])
	code, s := post(t, url+"/v1/sessions/"+sessions[0]+"/decisions", fmt.Sprintf(`{"seq":%d,"decisions":[{"interrupt_id":%q,"action":"reject","reason":"load test"}]}`,
		int(paused["seq"].(float64)), paused["interrupts"].([]any)[0].(map[string]any)["id"]))
	if code != 200 || s["status"] != "completed" {
		t.Fatalf("resume under load: %d %v", code, s)
	}

	// The slowloris connections are cut off once the header timeout passes.
	time.Sleep(time.Until(slowStart.Add(12 * time.Second))) // elapsed time: past the header timeout
	closed := 0
	for _, c := range slow {
		_ = c.SetReadDeadline(time.Now().Add(time.Second)) // a read past it fails, which the test checks
		buf := make([]byte, 512)
		if _, err := c.Read(buf); err != nil && !isTimeout(err) {
			closed++
		} else if err == nil {
			closed++ // the server answered (408) and closes
		}
		c.Close()
	}
	close(stopWatch)
	<-watched
	t.Logf("RSS: %d MiB at start, peak %d MiB (160 × 4 MB sessions, 1000 idle streams, 50 slowloris)", base>>20, peak.Load()>>20)
	if closed != 50 {
		t.Fatalf("%d of 50 slowloris connections were cut off", closed)
	}
	if peak.Load() > 512<<20 {
		t.Fatalf("peak RSS %d MiB: memory is not bounded (640 MB of sessions went through)", peak.Load()>>20)
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}
