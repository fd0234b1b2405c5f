// Command scale measures Cairn at scale on one store: it creates N paused
// sessions through the HTTP API of a `cairn serve`, then times each
// listing's first page and its page at depth N/2 (medians of 15), one
// approval, a restart to the first answer, the idle RSS after it and the
// bytes a session takes. Then it creates N (or -completed) completed
// sessions and restarts the server with retention on, so its first sweep
// deletes them all while 64 clients run the approval cycle (create a
// session that pauses, approve it), and compares their throughput with
// runs of the same cycle just before and just after. It prints markdown
// tables.
//
//	go run ./bench/scale                              # 100,000 sessions on SQLite
//	go run ./bench/scale -n 1000000                   # a million
//	go run ./bench/scale -store postgres -postgres $CAIRN_TEST_POSTGRES
//	go run ./bench/scale -n 100000 -completed 1000000   # sweep a million
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// config is the server's config; %s is the store and %s the retention section.
const config = `
store: %s
%s
models:
  demo:
    provider: scripted
    script:
      - tool_calls: [{name: deploy, arguments: {env: prod}}]
      - text: "{{.LastResult}}"
  says:
    provider: scripted
    script:
      - text: "done"
tools:
  deploy: {builtin: echo, approval: always}
agents:
  ops: {model: demo, tools: [deploy]}
  other: {model: demo, tools: [deploy]}
  quick: {model: says}
`

// sweepOnce keeps completed sessions for a second and sweeps once an hour, so
// the sweep at start is the only one while the load runs.
const sweepOnce = "retention: {completed: 1s, sweep: 1h}"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		os.Exit(1)
	}
}

type bench struct {
	binary, dir, store string
	n, clients, load   int
	completed          int // completed sessions to sweep
	loadTime           time.Duration
	size               func() (int64, error) // bytes the store takes
}

func run() error {
	b := &bench{}
	flag.IntVar(&b.n, "n", 100_000, "paused sessions to create (and as many completed ones to sweep)")
	flag.IntVar(&b.clients, "clients", 32, "concurrent clients creating them")
	flag.IntVar(&b.completed, "completed", 0, "completed sessions to sweep (default: -n)")
	flag.IntVar(&b.load, "load", 64, "clients running the approval cycle during the sweep")
	flag.DurationVar(&b.loadTime, "load-time", 20*time.Second, "how long the approval cycle runs without a sweep, for the baseline")
	kind := flag.String("store", "sqlite", "sqlite or postgres")
	pg := flag.String("postgres", os.Getenv("CAIRN_TEST_POSTGRES"), "a PostgreSQL server URL (-store postgres makes a database in it)")
	sweep := flag.Bool("sweep", true, "also measure the retention sweep under load")
	flag.StringVar(&b.binary, "cairn", "", "the cairn binary (default: go build ./cmd/cairn)")
	flag.Parse()
	if b.completed == 0 {
		b.completed = b.n
	}
	var err error
	if b.dir, err = os.MkdirTemp("", "cairn-scale"); err != nil {
		return err
	}
	defer os.RemoveAll(b.dir)
	if b.binary == "" {
		b.binary = filepath.Join(b.dir, "cairn")
		if out, err := exec.Command("go", "build", "-o", b.binary, "./cmd/cairn").CombinedOutput(); err != nil {
			return fmt.Errorf("go build: %v\n%s", err, out)
		}
	}
	switch *kind {
	case "sqlite":
		b.store = "sqlite:./cairn.db"
		b.size = func() (int64, error) { return fileBytes(b.dir), nil }
	case "postgres":
		if *pg == "" {
			return fmt.Errorf("-store postgres needs -postgres URL or $CAIRN_TEST_POSTGRES")
		}
		dsn, drop, err := database(*pg)
		if err != nil {
			return err
		}
		defer drop()
		b.store = dsn
		b.size = func() (int64, error) { return databaseBytes(dsn) }
	default:
		return fmt.Errorf("-store %q: want sqlite or postgres", *kind)
	}
	fmt.Printf("store: %s; %d sessions\n\n", *kind, b.n)
	if err := b.listings(); err != nil {
		return err
	}
	if *sweep {
		return b.retention()
	}
	return nil
}

// listings creates the paused sessions and times the listings, an approval
// and a restart.
func (b *bench) listings() error {
	srv, err := b.start("")
	if err != nil {
		return err
	}
	defer func() { srv.stop() }()

	began := time.Now()
	if err := create(srv.url, b.n, b.clients, "ops", "other"); err != nil {
		return err
	}
	took := time.Since(began)
	fmt.Printf("created %d paused sessions in %s (%.0f/s, %d clients)\n\n", b.n, took.Round(time.Millisecond), float64(b.n)/took.Seconds(), b.clients)

	fmt.Println("| listing | first page | page at depth N/2 |")
	fmt.Println("|---|---|---|")
	for _, l := range []struct{ name, path, list string }{
		{"sessions", "/v1/sessions?limit=50", "sessions"},
		{"sessions, paused", "/v1/sessions?status=paused&limit=50", "sessions"},
		{"sessions of an agent", "/v1/sessions?agent=ops&limit=50", "sessions"},
		{"the inbox", "/v1/interrupts?limit=50", "interrupts"},
		{"the inbox by kind", "/v1/interrupts?kind=approval&limit=50", "interrupts"},
		{"the inbox by a kind no session has (nothing to list)", "/v1/interrupts?kind=input&limit=50", ""},
		{"the inbox by two kinds", "/v1/interrupts?kind=input,approval&limit=50", "interrupts"},
	} {
		first, err := median(srv.url + l.path)
		if err != nil {
			return err
		}
		if l.list == "" {
			fmt.Printf("| %s | %s | – |\n", l.name, ms(first))
			continue
		}
		depth := b.n / 2
		if l.name == "sessions of an agent" {
			depth = b.n / 4 // half of them are ops'
		}
		cursor, err := cursorAt(srv.url, l.path, l.list, depth)
		if err != nil {
			return fmt.Errorf("%s: %w", l.name, err)
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
	size, err := b.size()
	if err != nil {
		return err
	}
	srv.stop()
	restart := time.Now()
	if srv, err = b.start(""); err != nil {
		return err
	}
	listening := time.Since(restart)
	if _, err := get(srv.url + "/v1/sessions?limit=1"); err != nil {
		return err
	}
	answered := time.Since(restart)
	time.Sleep(time.Second)
	fmt.Printf("\n| one approval (median of 15) | restart: listening / first answer | idle RSS after it | bytes per session |\n|---|---|---|---|\n")
	fmt.Printf("| %s | %s / %s | %s | %d |\n", ms(approve), ms(listening), ms(answered), rss(srv.cmd.Process.Pid), size/int64(b.n))
	return nil
}

// retention creates the completed sessions, runs the approval cycle for a
// baseline, then restarts with retention on and runs it again while the
// sweep deletes them, and once more after the sweep, for a second
// baseline. The paused sessions must all be there after. Then
// cairn sessions purge deletes the sessions the cycles completed, and the
// store's size is taken again: it holds the paused sessions only.
func (b *bench) retention() error {
	srv, err := b.start("")
	if err != nil {
		return err
	}
	defer func() { srv.stop() }()
	paused, err := count(srv.url, "/v1/sessions?status=paused&limit=1000")
	if err != nil {
		return err
	}
	began := time.Now()
	if err := create(srv.url, b.completed, b.clients, "quick"); err != nil {
		return err
	}
	fmt.Printf("\ncreated %d completed sessions in %s; %d paused\n", b.completed, time.Since(began).Round(time.Millisecond), paused)
	base, err := cycles(context.Background(), srv.url, b.load, func(stop func()) { time.AfterFunc(b.loadTime, stop) })
	if err != nil {
		return fmt.Errorf("the approval cycle without a sweep: %w", err)
	}
	srv.stopGently()
	before, err := b.size()
	if err != nil {
		return err
	}

	if srv, err = b.start(sweepOnce); err != nil {
		return err
	}
	during, err := cycles(context.Background(), srv.url, b.load, func(stop func()) {
		go func() {
			<-srv.swept
			stop()
		}()
	})
	if err != nil {
		return fmt.Errorf("the approval cycle during the sweep: %w", err)
	}
	sweep := srv.sweep
	if sweep.deleted < b.completed {
		return fmt.Errorf("the sweep deleted %d sessions, want at least %d", sweep.deleted, b.completed)
	}
	left, err := count(srv.url, "/v1/sessions?status=paused&limit=1000")
	if err != nil {
		return err
	}
	if left != paused {
		return fmt.Errorf("%d paused sessions before the sweep, %d after", paused, left)
	}
	// The baseline again, now that the sweep is over: the machine's load
	// varies, so the sweep's run is compared with the mean of one before
	// and one after.
	after1, err := cycles(context.Background(), srv.url, b.load, func(stop func()) { time.AfterFunc(b.loadTime, stop) })
	if err != nil {
		return fmt.Errorf("the approval cycle after the sweep: %w", err)
	}
	srv.stopGently()

	// The sessions the cycles completed, with the one-off command (at
	// full speed: no server runs).
	began = time.Now()
	out, err := exec.Command(b.binary, "sessions", "purge", "--config", filepath.Join(b.dir, "cairn.yaml"),
		"--status", "completed", "--before", time.Now().Format(time.RFC3339)).CombinedOutput()
	if err != nil {
		return fmt.Errorf("cairn sessions purge: %v\n%s", err, out)
	}
	fmt.Printf("\nthen cairn sessions purge: %s (%s)\n", strings.TrimSpace(string(out)), time.Since(began).Round(time.Millisecond))
	after, err := b.size()
	if err != nil {
		return err
	}
	fmt.Printf("\n| sweep of %d completed sessions | approval cycles, %d clients: before / during / after the sweep | paused sessions before / after | store size: before / after the sweep and a purge |\n|---|---|---|---|\n", b.completed, b.load)
	fmt.Printf("| %s (%d deleted, %.0f/s) | %.0f/s / %.0f/s / %.0f/s (during: %.0f %% of the mean without) | %d / %d | %s / %s |\n",
		sweep.took.Round(time.Millisecond), sweep.deleted, float64(sweep.deleted)/sweep.took.Seconds(),
		base, during, after1, 200*during/(base+after1), paused, left, mib(before), mib(after))
	return nil
}

// sweepLog is the runner's log line of a sweep that deleted something.
var sweepLog = regexp.MustCompile(`msg=retention status=completed deleted=(\d+) .*took=(\S+)`)

type server struct {
	cmd   *exec.Cmd
	url   string
	swept chan struct{} // closed when the first sweep's log line is read
	sweep struct {
		deleted int
		took    time.Duration
	}
}

// start runs cairn serve with the store and the retention section given.
func (b *bench) start(retention string) (*server, error) {
	if err := os.WriteFile(filepath.Join(b.dir, "cairn.yaml"), fmt.Appendf(nil, config, b.store, retention), 0o600); err != nil {
		return nil, err
	}
	cmd := exec.Command(b.binary, "serve", "--config", "cairn.yaml", "--addr", "127.0.0.1:0")
	cmd.Dir = b.dir
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
			s := &server{cmd: cmd, url: u, swept: make(chan struct{})}
			go s.watch(sc)
			return s, nil
		}
	}
	return nil, fmt.Errorf("cairn serve exited before listening: %v", cmd.Wait())
}

// watch reads the server's log for the first sweep's line; swept is also
// closed when the server exits.
func (s *server) watch(sc *bufio.Scanner) {
	seen := false
	defer func() {
		if !seen {
			close(s.swept)
		}
	}()
	for sc.Scan() {
		m := sweepLog.FindStringSubmatch(sc.Text())
		if m == nil || seen {
			continue
		}
		s.sweep.deleted, _ = strconv.Atoi(m[1])
		s.sweep.took, _ = time.ParseDuration(m[2])
		seen = true
		close(s.swept)
	}
}

// stopGently stops the server as a deploy would (SIGTERM: it drains and
// closes the store, which checkpoints SQLite's WAL), or kills it after a
// minute.
func (s *server) stopGently() {
	s.cmd.Process.Signal(syscall.SIGTERM)
	t := time.AfterFunc(time.Minute, func() { s.cmd.Process.Kill() })
	s.cmd.Wait()
	t.Stop()
	s.cmd.Process = nil
}

func (s *server) stop() {
	if s != nil && s.cmd.Process != nil {
		s.cmd.Process.Kill()
		s.cmd.Wait()
	}
}

// create makes n sessions, of the agents in turn.
func create(base string, n, clients int, agents ...string) error {
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
				if _, err := post(base+"/v1/sessions", `{"agent":"`+agents[i%int64(len(agents))]+`","input":"deploy"}`, 201); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// cycles runs the approval cycle on clients clients until stop is called
// (until is given it at the start) and returns the cycles per second.
func cycles(ctx context.Context, base string, clients int, until func(stop func())) (float64, error) {
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	var done atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	began := time.Now()
	until(stop)
	for range clients {
		wg.Go(func() {
			for ctx.Err() == nil {
				b, err := post(base+"/v1/sessions", `{"agent":"ops","input":"deploy"}`, 201)
				if err != nil {
					errs <- err
					return
				}
				var s struct {
					ID         string `json:"id"`
					Seq        int64  `json:"seq"`
					Interrupts []struct {
						ID string `json:"id"`
					} `json:"interrupts"`
				}
				if err := json.Unmarshal(b, &s); err != nil || len(s.Interrupts) != 1 {
					errs <- fmt.Errorf("a new session: %v %s", err, b)
					return
				}
				body := fmt.Sprintf(`{"seq":%d,"decisions":[{"interrupt_id":%q,"action":"approve"}]}`, s.Seq, s.Interrupts[0].ID)
				if _, err := post(base+"/v1/sessions/"+s.ID+"/decisions", body, 200); err != nil {
					errs <- err
					return
				}
				done.Add(1)
			}
		})
	}
	<-ctx.Done()
	took := time.Since(began)
	wg.Wait()
	close(errs)
	return float64(done.Load()) / took.Seconds(), <-errs
}

// count walks a listing to its end and counts what it lists.
func count(base, path string) (int, error) {
	n, cursor := 0, ""
	for {
		u := base + path
		if cursor != "" {
			u += "&cursor=" + url.QueryEscape(cursor)
		}
		b, err := get(u)
		if err != nil {
			return 0, err
		}
		var page struct {
			Sessions   []json.RawMessage `json:"sessions"`
			NextCursor string            `json:"next_cursor"`
		}
		if err := json.Unmarshal(b, &page); err != nil {
			return 0, err
		}
		n += len(page.Sessions)
		if cursor = page.NextCursor; cursor == "" {
			return n, nil
		}
	}
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
		if _, err := post(base+"/v1/sessions/"+in.SessionID+"/decisions", body, 200); err != nil {
			return 0, err
		}
		ds = append(ds, time.Since(t))
	}
	slices.Sort(ds)
	return ds[len(ds)/2], nil
}

// post POSTs body to u and wants the status code want.
func post(u, body string, want int) ([]byte, error) {
	resp, err := http.Post(u, "application/json", strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != want {
		err = fmt.Errorf("POST %s: %s %s", u, resp.Status, b)
	}
	return b, err
}

// database makes a fresh database in the PostgreSQL server at server and
// returns its URL and a function that drops it.
func database(server string) (string, func(), error) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, server)
	if err != nil {
		return "", nil, err
	}
	name := fmt.Sprintf("cairn_scale_%d", os.Getpid())
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		conn.Close(ctx)
		return "", nil, err
	}
	u, err := url.Parse(server)
	if err != nil {
		conn.Close(ctx)
		return "", nil, err
	}
	u.Path = "/" + name
	return u.String(), func() {
		_, _ = conn.Exec(ctx, "DROP DATABASE "+name+" WITH (FORCE)") // best effort: the run is over
		conn.Close(ctx)
	}, nil
}

// databaseBytes is the size of the database at dsn.
func databaseBytes(dsn string) (int64, error) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	var n int64
	err = conn.QueryRow(ctx, "SELECT pg_database_size(current_database())").Scan(&n)
	return n, err
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

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
