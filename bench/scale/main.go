// Command scale measures Cairn's listings at depth: it creates N paused
// sessions through the HTTP API of a `cairn serve` on SQLite, then times
// each listing's first page and its page at depth N/2 (medians of 15),
// one approval, a restart to the first answer, the idle RSS after it and
// the bytes a session takes. It prints a markdown table.
//
//	go run ./bench/scale              # 100,000 sessions
//	go run ./bench/scale -n 1000000   # a million (about 5 minutes to create)
//
// Still to come (issue 31, deliverable 4): PostgreSQL, and a retention
// sweep of N completed sessions under 64 clients' approval load.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

const config = `
store: sqlite:./cairn.db
models:
  demo:
    provider: scripted
    script:
      - tool_calls: [{name: deploy, arguments: {env: prod}}]
      - text: "{{.LastResult}}"
tools:
  deploy: {builtin: echo, approval: always}
agents:
  ops: {model: demo, tools: [deploy]}
  other: {model: demo, tools: [deploy]}
`

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		os.Exit(1)
	}
}

func run() error {
	n := flag.Int("n", 100_000, "paused sessions to create")
	clients := flag.Int("clients", 32, "concurrent clients creating them")
	binary := flag.String("cairn", "", "the cairn binary (default: go build ./cmd/cairn)")
	flag.Parse()
	dir, err := os.MkdirTemp("", "cairn-scale")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if *binary == "" {
		*binary = filepath.Join(dir, "cairn")
		if out, err := exec.Command("go", "build", "-o", *binary, "./cmd/cairn").CombinedOutput(); err != nil {
			return fmt.Errorf("go build: %v\n%s", err, out)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "cairn.yaml"), []byte(config), 0o600); err != nil {
		return err
	}
	srv, err := start(*binary, dir)
	if err != nil {
		return err
	}
	defer func() { srv.stop() }()

	began := time.Now()
	if err := create(srv.url, *n, *clients); err != nil {
		return err
	}
	took := time.Since(began)
	fmt.Printf("created %d paused sessions in %s (%.0f/s, %d clients)\n\n", *n, took.Round(time.Millisecond), float64(*n)/took.Seconds(), *clients)

	fmt.Println("| listing | first page | page at depth N/2 |")
	fmt.Println("|---|---|---|")
	for _, l := range []struct{ name, path, list string }{
		{"sessions", "/v1/sessions?limit=50", "sessions"},
		{"sessions, paused", "/v1/sessions?status=paused&limit=50", "sessions"},
		{"sessions of an agent", "/v1/sessions?agent=ops&limit=50", "sessions"},
		{"the inbox", "/v1/interrupts?limit=50", "interrupts"},
	} {
		depth := *n / 2
		if l.name == "sessions of an agent" {
			depth = *n / 4 // half of them are ops'
		}
		cursor, err := cursorAt(srv.url, l.path, l.list, depth)
		if err != nil {
			return fmt.Errorf("%s: %w", l.name, err)
		}
		first, err := median(srv.url + l.path)
		if err != nil {
			return err
		}
		deep, err := median(srv.url + l.path + "&cursor=" + url.QueryEscape(cursor))
		if err != nil {
			return err
		}
		fmt.Printf("| %s | %s | %s |\n", l.name, ms(first), ms(deep))
	}

	approve, err := approval(srv.url)
	if err != nil {
		return err
	}
	size := fileBytes(dir)
	srv.stop()
	restart := time.Now()
	if srv, err = start(*binary, dir); err != nil {
		return err
	}
	listening := time.Since(restart)
	if _, err := get(srv.url + "/v1/sessions?limit=1"); err != nil {
		return err
	}
	answered := time.Since(restart)
	time.Sleep(time.Second)
	fmt.Printf("\n| one approval (median of 15) | restart: listening / first answer | idle RSS after it | bytes per session |\n|---|---|---|---|\n")
	fmt.Printf("| %s | %s / %s | %s | %d |\n", ms(approve), ms(listening), ms(answered), rss(srv.cmd.Process.Pid), size/int64(*n))
	return nil
}

type server struct {
	cmd *exec.Cmd
	url string
}

func start(binary, dir string) (*server, error) {
	cmd := exec.Command(binary, "serve", "--config", "cairn.yaml", "--addr", "127.0.0.1:0")
	cmd.Dir = dir
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if u, ok := strings.CutPrefix(sc.Text(), "listening on "); ok {
			go io.Copy(io.Discard, stderr)
			return &server{cmd: cmd, url: u}, nil
		}
	}
	return nil, fmt.Errorf("cairn serve exited before listening: %v", cmd.Wait())
}

func (s *server) stop() {
	if s != nil && s.cmd.Process != nil {
		s.cmd.Process.Kill()
		s.cmd.Wait()
	}
}

// create makes n paused sessions, half of agent ops and half of other.
func create(base string, n, clients int) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for range clients {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				agent := []string{"ops", "other"}[i%2]
				resp, err := http.Post(base+"/v1/sessions", "application/json", strings.NewReader(`{"agent":"`+agent+`","input":"deploy"}`))
				if err != nil {
					errs <- err
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 201 {
					errs <- fmt.Errorf("POST /v1/sessions: %s", resp.Status)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// cursorAt walks a listing in pages of 1,000 to depth and returns the cursor there.
func cursorAt(base, path, list string, depth int) (string, error) {
	path = strings.Replace(path, "limit=50", "limit=1000", 1)
	cursor := ""
	for seen := 0; seen < depth; seen += 1000 {
		u := base + path
		if cursor != "" {
			u += "&cursor=" + url.QueryEscape(cursor)
		}
		b, err := get(u)
		if err != nil {
			return "", err
		}
		var page map[string]json.RawMessage
		if err := json.Unmarshal(b, &page); err != nil {
			return "", err
		}
		if err := json.Unmarshal(page["next_cursor"], &cursor); err != nil || cursor == "" {
			return "", fmt.Errorf("the listing ended before depth %d", depth)
		}
	}
	return cursor, nil
}

func get(u string) ([]byte, error) {
	resp, err := http.Get(u)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("GET %s: %s %s", u, resp.Status, b)
	}
	return b, err
}

// median is the median time of 15 GETs of u.
func median(u string) (time.Duration, error) {
	var ds []time.Duration
	for range 15 {
		t := time.Now()
		if _, err := get(u); err != nil {
			return 0, err
		}
		ds = append(ds, time.Since(t))
	}
	slices.Sort(ds)
	return ds[len(ds)/2], nil
}

// approval is the median time of 15 approvals of the newest paused sessions.
func approval(base string) (time.Duration, error) {
	b, err := get(base + "/v1/interrupts?limit=15")
	if err != nil {
		return 0, err
	}
	var inbox struct {
		Interrupts []struct {
			ID        string `json:"id"`
			SessionID string `json:"session_id"`
			Seq       int64  `json:"seq"`
		} `json:"interrupts"`
	}
	if err := json.Unmarshal(b, &inbox); err != nil {
		return 0, err
	}
	var ds []time.Duration
	for _, in := range inbox.Interrupts {
		body := fmt.Sprintf(`{"seq":%d,"decisions":[{"interrupt_id":%q,"action":"approve"}]}`, in.Seq, in.ID)
		t := time.Now()
		resp, err := http.Post(base+"/v1/sessions/"+in.SessionID+"/decisions", "application/json", bytes.NewReader([]byte(body)))
		if err != nil {
			return 0, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return 0, fmt.Errorf("approve: %s", resp.Status)
		}
		ds = append(ds, time.Since(t))
	}
	slices.Sort(ds)
	return ds[len(ds)/2], nil
}

func fileBytes(dir string) int64 {
	var n int64
	for _, name := range []string{"cairn.db", "cairn.db-wal"} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// rss is the process's resident memory, from /proc (Linux).
func rss(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "?"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return fmt.Sprintf("%d MiB", kb>>10)
		}
	}
	return "?"
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }
