package main

import (
	"bufio"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// SIGTERM on a node whose only work is 100 open event streams (50 on
// sessions, 50 cross-session feeds, as inbox tabs hold): every stream gets
// the retry hint and ends at once, and the process exits long before its
// 30 s shutdown_grace.
func TestSIGTERMDoesNotWaitOnReaders(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "state"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "cairn.yaml")
	if err := os.WriteFile(cfg, []byte("shutdown_grace: 30s\n"+crashConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd, base := serve(t, cfg)
	var ids []string
	for range 2 {
		_, s := post(t, base+"/v1/sessions", `{"agent":"main","input":"deploy"}`)
		ids = append(ids, s["id"].(string))
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var ends []string // how each stream ended: its last frame
	opened := make(chan struct{}, 100)
	for i := range 100 {
		url := base + "/v1/events"
		if i%2 == 0 {
			url = base + "/v1/sessions/" + ids[i%4/2] + "/events"
		}
		req, _ := http.NewRequest("GET", url, nil)
		req.Header.Set("Accept", "text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("stream %d: %v %v", i, err, resp)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer resp.Body.Close()
			opened <- struct{}{}
			last := ""
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				if strings.HasPrefix(sc.Text(), "retry:") {
					last = sc.Text()
				}
			}
			mu.Lock()
			ends = append(ends, last)
			mu.Unlock()
		}()
	}
	for range 100 {
		<-opened
	}
	took := stop(t, cmd, syscall.SIGTERM, 30*time.Second) // 30 s: the whole shutdown_grace
	wg.Wait()
	t.Logf("exit %v after SIGTERM with 100 open streams", took)
	// Not a benchmark: the old behaviour took the whole 30 s grace.
	if took > time.Second {
		t.Fatalf("exit took %v with 100 idle streams, want well under a second", took)
	}
	for i, e := range ends {
		if e != "retry: 1000" {
			t.Fatalf("stream %d ended without the retry hint (%q)", i, e)
		}
	}
}
